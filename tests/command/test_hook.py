"""``handler-kit command``: the real console script, as a runtime starts it (one process per
hook input), on every captured PreToolUse, PostToolUse, UserPromptSubmit, Stop and SessionStart
payload, in both dialects; bad input; failing handlers; what the command path imports.

The expected answers come from ``expected()``, which restates the rules of the test app
(tests/support/apps/command.py) from the payload's own fields. Processes run a few at a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from handler_kit.core.vocabulary import MAX_INPUT_DEPTH
from tests.command.support import (
    APP,
    BAD_INPUTS,
    BIN,
    CRASHY,
    EVENTS,
    EXIT_CODE_BAD_INPUTS,
    HANDLER_KIT,
    PAYLOAD_FILES,
    Run,
    event_json,
    run,
    run_many,
)
from tests.support.apps import command as hook_app
from tests.support.processes import REPO, clean_env

SERVER_STACK = ("starlette", "uvicorn", "mcp", "httpx", "jwt", "anyio")
MODULE = hook_app.__name__

pytestmark = pytest.mark.skipif(
    not HANDLER_KIT.exists(), reason=f"no handler-kit console script next to {sys.executable}"
)


# -- the rules of tests.support.apps.command:app, restated ------------------------------------


def expected(payload: dict[str, Any]) -> tuple[str, Any]:
    """What the test app answers: ("deny"|"block", reason), ("context", text),
    ("rewrite", input), ("guarded", None) for a Stop block held back by the loop guard, or
    ("none", None)."""
    event = payload["hook_event_name"]
    tool = payload.get("tool_name") or ""
    tool_input = payload.get("tool_input") or {}
    if event == "PreToolUse":
        if tool in ("issue_refund", "orders__refund") and tool_input.get("amount", 0) > 500:
            return "deny", hook_app.REFUND_DENY
        if tool == "Bash" and str(tool_input.get("command", "")).startswith("npm"):
            return "deny", hook_app.NPM_DENY
        if "mcp__" in tool:
            return "context", f"MCP call: {tool}"
        if tool == "Grep":
            return "rewrite", {**tool_input, "head_limit": 50}
        return "none", None
    if event == "PostToolUse":
        if tool == "Write" and ".playwright-cli" in str(tool_input.get("file_path", "")):
            return "block", hook_app.WRITE_BLOCK
        if tool.startswith("mcp__"):
            return "context", f"Audited {tool}."
        return "none", None
    if event == "UserPromptSubmit":
        if "@" in (payload.get("prompt") or ""):
            return "block", hook_app.MENTION_BLOCK
        return "context", "Cite the ticket number in every reply."
    if event == "Stop":
        if "#" in (payload.get("last_assistant_message") or ""):
            return "none", None
        if payload.get("stop_hook_active") is True:
            return "guarded", None
        return "block", hook_app.CITE_BLOCK
    if event == "SessionStart":
        if payload.get("source") in ("startup", "resume"):
            return "context", hook_app.RETURNS_POLICY
        return "none", None
    raise AssertionError(event)


def claude_json(event: str, kind: str, value: Any) -> dict[str, Any]:
    """The Claude Code JSON of an expected answer, spelled out by hand."""
    if kind == "deny":
        return {
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": value,
            }
        }
    if kind == "block":
        return {"decision": "block", "reason": value}
    if kind == "context":
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": value}}
    if kind == "rewrite":
        return {
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "allow",
                "updatedInput": value,
            }
        }
    return {}


def test_every_event_has_payloads() -> None:
    assert {p.parent.name for p in PAYLOAD_FILES} == set(EVENTS)


@pytest.mark.parametrize("path", PAYLOAD_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_json_dialect(path: Path, payload_runs: dict[tuple[str, str], Run]) -> None:
    payload = json.loads(path.read_bytes())
    event = payload["hook_event_name"]
    kind, value = expected(payload)
    result = payload_runs[(path.name, "json")]
    assert result.code == 0, result.stderr
    body = json.dumps(claude_json(event, kind, value), ensure_ascii=False, separators=(",", ":"))
    assert result.stdout == body.encode() + b"\n"
    if kind == "guarded":
        assert "stop_hook_active" in result.stderr
    else:
        assert result.stderr == ""


@pytest.mark.parametrize("path", PAYLOAD_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_exit_code_dialect(path: Path, payload_runs: dict[tuple[str, str], Run]) -> None:
    """The sandbox runtime's contract: exit 2 blocks a Pre tool use call and appends stderr to
    a Post tool use result as feedback (context included); stdout is context where it is read
    (Session start, and UserPromptSubmit as Claude Code reads it), dropped with a warning on
    PreToolUse, where nothing reads it."""
    payload = json.loads(path.read_bytes())
    kind, value = expected(payload)
    event = payload["hook_event_name"]
    result = payload_runs[(path.name, "exit-codes")]
    if kind in ("deny", "block") or (kind == "context" and event == "PostToolUse"):
        assert (result.code, result.stdout, result.stderr) == (2, b"", value + "\n")
    elif kind == "context" and event == "PreToolUse":
        assert (result.code, result.stdout) == (0, b"")
        assert "reads no context on PreToolUse; dropped" in result.stderr
    elif kind == "context":
        assert (result.code, result.stdout, result.stderr) == (0, value.encode(), "")
    else:
        assert (result.code, result.stdout) == (0, b"")
        if kind == "rewrite":  # cannot be carried by an exit code: said on stderr, call runs
            assert "cannot carry a rewritten tool input" in result.stderr
        elif kind == "guarded":
            assert "stop_hook_active" in result.stderr
        else:
            assert result.stderr == ""


def test_refund_gate_decides_on_the_amount() -> None:
    over = event_json(
        hook_event_name="PreToolUse", tool_name="orders__refund", tool_input={"amount": 640}
    )
    under = event_json(
        hook_event_name="PreToolUse", tool_name="issue_refund", tool_input={"amount": 20}
    )
    runs = run_many(
        {
            "over": (["command", APP], over),
            "over-exit": (["command", APP, "--exit-codes"], over),
            "under": (["command", APP], under),
            "under-exit": (["command", APP, "--exit-codes"], under),
            "only-gate": (["command", APP, "--handler", "refund_gate"], over),
            "only-other": (["command", APP, "--handler", "no_npm"], over),
        }
    )
    deny = claude_json("PreToolUse", "deny", hook_app.REFUND_DENY)
    assert json.loads(runs["over"].stdout) == deny
    assert (runs["over-exit"].code, runs["over-exit"].stderr) == (2, hook_app.REFUND_DENY + "\n")
    assert (runs["under"].code, runs["under"].stdout) == (0, b"{}\n")
    assert (runs["under-exit"].code, runs["under-exit"].stdout, runs["under-exit"].stderr) == (
        0,
        b"",
        "",
    )
    # --handler NAME: that handler alone, and "no opinion" when its matcher does not match
    assert json.loads(runs["only-gate"].stdout) == deny
    assert (runs["only-other"].code, runs["only-other"].stdout) == (0, b"{}\n")


def test_session_start_without_source_is_a_startup() -> None:
    """Runbear's SessionStart carries no source ("always startup"): the app's
    matcher="startup|resume" handler runs on it, as the whole app and as --handler."""
    no_source = event_json(hook_event_name="SessionStart", session_id="t1", cwd="/srv")
    runs = run_many(
        {
            "app": (["command", APP], no_source),
            "handler": (["command", APP, "--handler", "returns_policy"], no_source),
            "exit-codes": (["command", APP, "--exit-codes"], no_source),
        }
    )
    policy = claude_json("SessionStart", "context", hook_app.RETURNS_POLICY)
    for key in ("app", "handler"):
        assert (runs[key].code, json.loads(runs[key].stdout)) == (0, policy), runs[key].stderr
    assert (runs["exit-codes"].code, runs["exit-codes"].stdout) == (
        0,
        hook_app.RETURNS_POLICY.encode(),
    )


# -- errors -----------------------------------------------------------------------------------


def assert_one_line_error(result: Run, fragment: str) -> None:
    assert result.code == 1, result
    assert result.stdout == b""
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n"), result.stderr
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "key",
    [(n, "json") for n in BAD_INPUTS] + [(n, "exit-codes") for n in EXIT_CODE_BAD_INPUTS],
    ids=lambda k: f"{k[0]} ({k[1]})",
)
def test_bad_input_is_one_line_and_exit_1(
    key: tuple[str, str], bad_input_runs: dict[tuple[str, str], Run]
) -> None:
    assert_one_line_error(bad_input_runs[key], BAD_INPUTS[key[0]][1])


def test_bad_app_and_arguments(tmp_path: Path) -> None:
    (tmp_path / "broken_hooks.py").write_text("raise RuntimeError('config missing')\n")
    stop = event_json(hook_event_name="Stop")
    cases = {
        "nosuch_module:app": (["command", "nosuch_module:app"], "no module named 'nosuch_module'"),
        "unknown handler": (["command", APP, "--handler", "nope"], "no handler named 'nope'"),
        "handler of another event": (
            ["command", APP, "--handler", "refund_gate"],
            "handles PreToolUse, not Stop",
        ),
        "no target": (["command"], "required: MODULE:ATTR"),
        "unknown option": (["command", APP, "--frobnicate"], "unrecognized"),
    }
    runs = run_many({name: (args, stop) for name, (args, _) in cases.items()})
    for name, (_, fragment) in cases.items():
        assert_one_line_error(runs[name], fragment)
    broken = run(["command", "broken_hooks:app", "--exit-codes"], stop, cwd=tmp_path)
    assert_one_line_error(broken, "importing 'broken_hooks' failed: RuntimeError: config missing")


@pytest.mark.parametrize(
    ("source", "spec", "message"),
    [
        (None, "nosuch_module_xyz:app", "no module named 'nosuch_module_xyz'"),
        (
            "import nosuch_dependency_xyz\n",
            "needs_dep:app",
            "importing 'needs_dep' failed: ModuleNotFoundError: No module named 'nosuch_dep",
        ),
        (None, "nosuch_pkg_xyz.hooks:app", "cannot import 'nosuch_pkg_xyz.hooks': no module"),
        (None, f"{MODULE}:nope", f"module '{MODULE}' has no attribute 'nope'"),
        (None, MODULE, "expected MODULE:ATTR"),
        (None, f"{MODULE}:", "expected MODULE:ATTR"),
        (None, f"{MODULE}:REFUND_DENY", "is a str, not a HookApp"),
        ("raise RuntimeError('config\\nmissing')\n", "broken:app", "RuntimeError: config missing"),
        ("import sys\nsys.exit(3)\n", "exits:app", "called sys.exit(3)"),
    ],
)
def test_load_app_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str | None, spec: str, message: str
) -> None:
    from handler_kit.core.loader import LoadError, load_app

    if source is not None:
        module = spec.split(":")[0]
        (tmp_path / f"{module}.py").write_text(source)
        monkeypatch.chdir(tmp_path)
        monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(LoadError) as info:
        load_app(spec)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_load_app_finds_apps_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handler_kit.core.loader import load_app

    (tmp_path / "cwd_hooks.py").write_text(
        "from handler_kit import HookApp\n"
        "hooks = HookApp('cwd')\n"
        "class Served:\n    hook_app = hooks\n"
        "app = Served()\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert load_app("cwd_hooks:hooks").name == "cwd"
    assert load_app("cwd_hooks:app") is load_app("cwd_hooks:hooks")  # an ASGI app's .hook_app
    assert load_app(CRASHY) is hook_app.crashy


# -- failing handlers -------------------------------------------------------------------------


def fail_closed_reason(name: str, what: str) -> str:
    return f"Blocked by policy: the check {name!r} {what}, and it is configured to fail closed."


def test_fail_closed_gate_that_crashes_still_denies(crash_runs: dict[str, Run]) -> None:
    reason = fail_closed_reason("crashing_gate", "failed")
    crash = crash_runs["crash"]
    assert crash.code == 0
    assert json.loads(crash.stdout) == claude_json("PreToolUse", "deny", reason)
    # the handler's print() went to stderr, after the answer was decided, with the error
    assert "chatter from a handler" not in crash.stdout.decode()
    assert "stdout of the app: chatter from a handler" in crash.stderr
    assert "RuntimeError: database unreachable" in crash.stderr
    assert "Traceback" not in crash.stderr
    # exit-code dialect: stderr is the reason the model reads, and nothing else
    assert (crash_runs["crash-exit"].code, crash_runs["crash-exit"].stdout) == (2, b"")
    assert crash_runs["crash-exit"].stderr == reason + "\n"


def test_async_handlers_with_and_without_an_event_loop(crash_runs: dict[str, Run]) -> None:
    """An async gate that never awaits is answered without a loop (crash included: still the
    fail-closed deny); one that awaits runs on a loop, deadline included."""
    crash = crash_runs["async-crash"]
    assert crash.code == 0
    reason = fail_closed_reason("crashing_async_gate", "failed")
    assert json.loads(crash.stdout) == claude_json("PreToolUse", "deny", reason)
    assert "RuntimeError: ledger down" in crash.stderr
    stuck = crash_runs["async-stuck-exit"]
    reason = fail_closed_reason("slow_async_gate", "did not answer in time")
    assert (stuck.code, stuck.stdout, stuck.stderr) == (2, b"", reason + "\n")
    awaiting = crash_runs["awaiting"]
    assert (awaiting.code, awaiting.stderr) == (0, "")
    text = "awaited on a loop for Read"
    assert json.loads(awaiting.stdout) == claude_json("PostToolUse", "context", text)


def test_fail_closed_gate_stuck_past_its_deadline_denies_and_exits(
    crash_runs: dict[str, Run],
) -> None:
    """The sync handler sleeps 30 s with a 1 s timeout: the process answers and leaves
    without waiting for its thread (run() would time out at 60 s otherwise)."""
    reason = fail_closed_reason("stuck_gate", "did not answer in time")
    stuck = crash_runs["stuck"]
    assert stuck.code == 0
    assert json.loads(stuck.stdout) == claude_json("PreToolUse", "deny", reason)
    assert (crash_runs["stuck-exit"].code, crash_runs["stuck-exit"].stderr) == (2, reason + "\n")


def test_every_handler_failing_is_a_non_blocking_error(crash_runs: dict[str, Run]) -> None:
    for key in ("all-failed", "all-failed-exit"):
        result = crash_runs[key]
        assert (result.code, result.stdout) == (1, b"")
        first = result.stderr.splitlines()[0]
        assert first == (
            "handler-kit: every handler failed on UserPromptSubmit "
            "(crashing_context: ValueError: policy file missing)"
        )
        assert "Traceback" not in result.stderr


def test_exit_code_block_without_a_reason_still_gives_one(crash_runs: dict[str, Run]) -> None:
    result = crash_runs["no-reason-exit"]
    assert (result.code, result.stdout) == (2, b"")
    assert result.stderr == "The hook 'crashy' blocked this (unreasoned_block).\n"


def test_stdout_is_the_answer_alone(crash_runs: dict[str, Run]) -> None:
    """print() and a child process writing to fd 1 do not reach stdout."""
    chatty = crash_runs["chatty"]
    assert chatty.stdout == b'{"continue":false,"stopReason":"Maintenance window."}\n'
    assert "print() to stdout" in chatty.stderr
    assert "child process writing to fd 1" in chatty.stderr
    # the sandbox runtime cannot stop the agent at session start: said, not blocked
    halted = crash_runs["chatty-exit"]
    assert (halted.code, halted.stdout) == (0, b"")
    assert "cannot stop the agent at session start" in halted.stderr


# -- inputs a gate cannot read ----------------------------------------------------------------

UNREADABLE = (
    "Blocked by policy: the check 'refund_gate' could not read the hook input, "
    "and it is configured to fail closed."
)


def deep_refund(depth: int) -> bytes:
    """An over-limit refund whose ``tool_input`` nests ``depth`` levels (itself level 1)."""
    arrays = depth - 1
    return (
        '{"hook_event_name": "PreToolUse", "tool_name": "issue_refund", '
        f'"tool_input": {{"amount": 640, "deep": {"[" * arrays}{"]" * arrays}}}}}'
    ).encode()


def test_the_runtimes_deep_input_is_the_gates_deny() -> None:
    """About a thousand levels in two kilobytes: exit 1 here let the refund through, since
    every runtime proceeds on it."""
    deep = deep_refund(1000)
    assert len(deep) < 2200
    runs = run_many(
        {
            "handler": (["command", APP, "--handler", "refund_gate"], deep),
            "app": (["command", APP], deep),  # the event name is still read, by a scan
            "exit-codes": (["command", APP, "--handler", "refund_gate", "--exit-codes"], deep),
        }
    )
    for key in ("handler", "app"):
        assert runs[key].code == 0, runs[key]
        assert json.loads(runs[key].stdout) == claude_json("PreToolUse", "deny", UNREADABLE)
        assert (
            "refund_gate could not read its PreToolUse input "
            f"(hook input is nested deeper than {MAX_INPUT_DEPTH} levels)"
        ) in runs[key].stderr
    exit_codes = runs["exit-codes"]
    assert (exit_codes.code, exit_codes.stdout, exit_codes.stderr) == (2, b"", UNREADABLE + "\n")


UNREADABLE_INPUTS = {
    "not JSON": (["--handler", "refund_gate"], b"refund please"),
    "cut off": ([], b'{"session_id": "s", "hook_event_name": "PreToolUse", "tool_input": {"am'),
    "not UTF-8": (["--handler", "refund_gate"], b'{"tool_input": {"note": "\xff"}}'),
    "array": (["--handler", "refund_gate"], b"[]"),
    "empty": (["--handler", "refund_gate"], b""),
    "no event name": (["--handler", "refund_gate"], b'{"tool_name": "issue_refund"}'),
    "wrong types": ([], b'{"hook_event_name": "PreToolUse", "tool_name": 5}'),
}


def test_any_input_a_fail_closed_gate_cannot_read_is_its_deny() -> None:
    jobs = {
        name: (["command", APP, *args], stdin) for name, (args, stdin) in UNREADABLE_INPUTS.items()
    }
    # a handler that does not fail closed keeps the non-blocking error
    jobs["open handler"] = (["command", APP, "--handler", "no_npm"], b"refund please")
    runs = run_many(jobs)
    for name in UNREADABLE_INPUTS:
        assert runs[name].code == 0, (name, runs[name])
        deny = claude_json("PreToolUse", "deny", UNREADABLE)
        assert json.loads(runs[name].stdout) == deny, name
        assert "could not read its PreToolUse input" in runs[name].stderr, name
    assert_one_line_error(runs["open handler"], "hook input is not JSON")


def test_a_closed_stdin_is_an_input_the_gate_cannot_read() -> None:
    """No stdin at all (fd 0 closed, so ``sys.stdin`` is None) is the empty input: the gate's
    deny, not a crash's exit 1, which runtimes let through."""
    done = subprocess.run(
        f"{HANDLER_KIT} command {APP} --handler refund_gate <&-",
        shell=True,
        capture_output=True,
        cwd=REPO,
        env=clean_env(),
        timeout=60,
    )
    assert done.returncode == 0, done
    assert json.loads(done.stdout) == claude_json("PreToolUse", "deny", UNREADABLE)
    assert "could not read its PreToolUse input (no hook input on stdin" in done.stderr.decode()


def test_the_depth_limit_is_where_the_webhook_has_it() -> None:
    """Nested to the limit, the input is read (the gate's own deny); one level more, not."""
    runs = run_many(
        {
            "at": (["command", APP], deep_refund(MAX_INPUT_DEPTH)),
            "over": (["command", APP], deep_refund(MAX_INPUT_DEPTH + 1)),
        }
    )
    assert json.loads(runs["at"].stdout) == claude_json("PreToolUse", "deny", hook_app.REFUND_DENY)
    assert json.loads(runs["over"].stdout) == claude_json("PreToolUse", "deny", UNREADABLE)


# -- handlers that hold the process past their deadline ---------------------------------------


def test_a_handler_holding_the_process_is_answered_at_its_deadline(
    blocking_runs: dict[str, tuple[Run, float]],
) -> None:
    """The handlers block for 30 s against a 2 s timeout: the watchdog answers with the
    failure policy and ends the process, long before the handler would have returned."""
    late = "did not answer in time"
    for key, name in (("sleeper", "sleeping_gate"), ("awaiter", "awaiting_gate")):
        result, elapsed = blocking_runs[key]
        assert result.code == 0, result
        reason = fail_closed_reason(name, late)
        assert json.loads(result.stdout) == claude_json("PreToolUse", "deny", reason)
        assert f"{name} still running at the deadline" in result.stderr
        assert elapsed < 20, elapsed
    result, elapsed = blocking_runs["sleeper-exit"]
    assert (result.code, result.stdout) == (2, b"")
    assert result.stderr == fail_closed_reason("sleeping_gate", late) + "\n"
    # fail open: the timeout failure, as for any other late handler
    result, elapsed = blocking_runs["note"]
    assert (result.code, result.stdout) == (1, b""), result
    assert f"every handler failed on PostToolUse (sleeping_note: handler {late})" in result.stderr
    assert elapsed < 20, elapsed


def test_the_watchdog_and_a_late_answer_are_never_both_written(
    blocking_runs: dict[str, tuple[Run, float]],
) -> None:
    result, _ = blocking_runs["racer"]
    assert result.code == 0, result
    assert result.stdout.count(b"\n") == 1  # one answer, the watchdog's
    reason = fail_closed_reason("racing_gate", "did not answer in time")
    assert json.loads(result.stdout) == claude_json("PreToolUse", "deny", reason)


# -- start-up: nothing of the server stack, one event model -----------------------------------

PROBE = """
import json, sys
from handler_kit.cli import main
code = main(["command", %r])
from handler_kit.core import events
names = ("HookEvent", "_ToolEvent", *events.EVENT_NAMES)
report = {
    "code": code,
    "built": sorted(
        n for n in names if n in vars(events) and vars(events)[n].__pydantic_complete__
    ),
    "claude_events_defined": "handler_kit.core._claude_events" in sys.modules,
    "asyncio": "asyncio" in sys.modules,
    "server_stack": sorted(m for m in sys.modules if m.split(".")[0] in %r),
}
sys.stderr.write("REPORT " + json.dumps(report) + "\\n")
"""
REFUND_OVER = event_json(
    hook_event_name="PreToolUse",
    session_id="s",
    tool_name="issue_refund",
    tool_input={"order_id": "4821", "amount": 640},
)
BASH_NPM = event_json(
    hook_event_name="PreToolUse", tool_name="Bash", tool_input={"command": "npm test"}
)


def imported_modules(importtime_stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[1].strip()
        for line in importtime_stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_command_path_imports_no_server_stack() -> None:
    """The real console script under ``-X importtime``: an async gate that never awaits
    (the refund gate) runs without asyncio; a sync handler runs on a loop; neither imports
    the server stack or argparse."""
    python = str(BIN / "python")
    program = [python, "-X", "importtime", str(HANDLER_KIT)]
    runs = {
        name: run(["command", APP], stdin, program=program)
        for name, stdin in (("async gate", REFUND_OVER), ("sync handler", BASH_NPM))
    }
    for name, traced in runs.items():
        assert traced.code == 0 and b"permissionDecision" in traced.stdout, name
        modules = imported_modules(traced.stderr)
        assert "handler_kit.command.hook" in modules and "pydantic" in modules
        assert sorted(m for m in modules if m.split(".")[0] in SERVER_STACK) == []
        assert (
            not {
                "handler_kit.server.app",
                "handler_kit.server.webhook",
                "handler_kit.server.mcp.mount",
            }
            & modules
        )
        assert "argparse" not in modules  # the console script's fast path
        assert ("asyncio" in modules) is (name == "sync handler"), name


def test_command_path_builds_one_model() -> None:
    python = str(BIN / "python")
    probe = run([], REFUND_OVER, program=[python, "-c", PROBE % (APP, SERVER_STACK)])
    assert json.loads(probe.stdout) == claude_json("PreToolUse", "deny", hook_app.REFUND_DENY)
    line = next(x for x in probe.stderr.splitlines() if x.startswith("REPORT "))
    report = json.loads(line.removeprefix("REPORT "))
    assert report == {
        "code": 0,
        "built": ["PreToolUse"],
        "claude_events_defined": False,
        "asyncio": False,
        "server_stack": [],
    }


def test_console_script_is_a_plain_entry_point() -> None:
    """pip's wrapper imports handler_kit.cli directly (no importlib.metadata look-up)."""
    text = HANDLER_KIT.read_text()
    assert "from handler_kit.cli import main" in text
    assert "importlib.metadata" not in text and "pkg_resources" not in text
