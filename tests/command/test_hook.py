"""``handler-kit command``: the real console script, as a runtime starts it (one process per
hook input), on every captured PreToolUse, PostToolUse, UserPromptSubmit, Stop and SessionStart
payload, in both dialects; bad input; failing handlers; what the command path imports.

The expected answers come from ``expected()``, which restates the rules of the test app
(tests/support/apps/command.py) from the payload's own fields. Processes run a few at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.apps import COMMAND_APP, CRASHY_APP
from tests.support.apps import command as hook_app
from tests.support.payloads import PAYLOADS
from tests.support.processes import REPO

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart")
BIN = Path(sys.executable).parent
HANDLER_KIT = BIN / "handler-kit"
SERVER_STACK = ("starlette", "uvicorn", "mcp", "httpx", "jwt", "anyio")
APP = COMMAND_APP
PYCACHE = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"handler-kit-test-pycache-{os.getuid()}")
CRASHY = CRASHY_APP
MODULE = hook_app.__name__

pytestmark = pytest.mark.skipif(
    not HANDLER_KIT.exists(), reason=f"no handler-kit console script next to {sys.executable}"
)


@dataclass(frozen=True)
class Run:
    code: int
    stdout: bytes
    stderr: str


def run(
    args: list[str], stdin: bytes, *, cwd: Path = REPO, program: list[str] | None = None
) -> Run:
    """One ``handler-kit`` process, started the way a hook runtime starts it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDLER_KIT_")}
    # Let the children cache bytecode (outside the repo), as an installed package has it:
    # compiling handler-kit's sources in each of ~90 processes would dominate this file's time.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    proc = subprocess.run(
        [*(program or [str(HANDLER_KIT)]), *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))


def run_many(jobs: dict[Any, tuple[list[str], bytes]]) -> dict[Any, Run]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {key: pool.submit(run, args, stdin) for key, (args, stdin) in jobs.items()}
        return {key: future.result() for key, future in futures.items()}


def event_json(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


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


def payload_files() -> list[Path]:
    return sorted(p for event in EVENTS for p in (PAYLOADS / event).glob("*.json"))


PAYLOAD_FILES = payload_files()


@pytest.fixture(scope="module")
def payload_runs() -> dict[tuple[str, str], Run]:
    """Every payload through the command, in both dialects (started concurrently)."""
    jobs = {}
    for path in PAYLOAD_FILES:
        stdin = path.read_bytes()
        jobs[(path.name, "json")] = (["command", APP], stdin)
        jobs[(path.name, "exit-codes")] = (["command", APP, "--exit-codes"], stdin)
    return run_many(jobs)


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
    payload = json.loads(path.read_bytes())
    kind, value = expected(payload)
    result = payload_runs[(path.name, "exit-codes")]
    if kind in ("deny", "block"):
        assert (result.code, result.stdout, result.stderr) == (2, b"", value + "\n")
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


# -- errors -----------------------------------------------------------------------------------

BAD_INPUTS = {
    "not JSON": (b"refund please", "not JSON"),
    "empty": (b"", "no hook input"),
    "not UTF-8": (b'{"prompt": "\xff"}', "not UTF-8 JSON"),
    "array": (b"[1, 2]", "must be a JSON object, not an array"),
    "no event name": (b'{"tool_name": "Bash"}', "no hook_event_name"),
    "event name not a string": (b'{"hook_event_name": 7}', "no hook_event_name"),
    "tool_name a number": (
        b'{"hook_event_name": "PreToolUse", "tool_name": 5}',
        "invalid PreToolUse input: tool_name",
    ),
    "tool_input a string": (
        b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "ls"}',
        "invalid PreToolUse input: tool_input",
    ),
    "stop_hook_active a list": (
        b'{"hook_event_name": "Stop", "stop_hook_active": []}',
        "invalid Stop input: stop_hook_active",
    ),
    "event without handlers": (b'{"hook_event_name": "SessionEnd"}', "no handlers for SessionEnd"),
}

EXIT_CODE_BAD_INPUTS = ("not JSON", "tool_name a number")


def assert_one_line_error(result: Run, fragment: str) -> None:
    assert result.code == 1, result
    assert result.stdout == b""
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n"), result.stderr
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def bad_input_runs() -> dict[tuple[str, str], Run]:
    jobs = {}
    for name, (stdin, _) in BAD_INPUTS.items():
        jobs[(name, "json")] = (["command", APP], stdin)
    for name in EXIT_CODE_BAD_INPUTS:
        jobs[(name, "exit-codes")] = (["command", APP, "--exit-codes"], BAD_INPUTS[name][0])
    return run_many(jobs)


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


@pytest.fixture(scope="module")
def crash_runs() -> dict[str, Run]:
    refund = event_json(
        hook_event_name="PreToolUse", tool_name="issue_refund", tool_input={"amount": 1}
    )
    slow = event_json(hook_event_name="PreToolUse", tool_name="slow_refund", tool_input={})
    prompt = event_json(hook_event_name="UserPromptSubmit", prompt="hello")
    stop = event_json(hook_event_name="Stop", stop_hook_active=False)
    start = event_json(hook_event_name="SessionStart", source="startup")
    async_refund = event_json(hook_event_name="PreToolUse", tool_name="async_refund")
    slow_async = event_json(hook_event_name="PreToolUse", tool_name="slow_async_refund")
    post = event_json(hook_event_name="PostToolUse", tool_name="Read", tool_response={})
    return run_many(
        {
            "async-crash": (["command", CRASHY], async_refund),
            "async-stuck-exit": (["command", CRASHY, "--exit-codes"], slow_async),
            "awaiting": (["command", CRASHY], post),
            "crash": (["command", CRASHY], refund),
            "crash-exit": (["command", CRASHY, "--exit-codes"], refund),
            "stuck": (["command", CRASHY], slow),
            "stuck-exit": (["command", CRASHY, "--exit-codes"], slow),
            "all-failed": (["command", CRASHY], prompt),
            "all-failed-exit": (["command", CRASHY, "--exit-codes"], prompt),
            "no-reason-exit": (["command", CRASHY, "--exit-codes"], stop),
            "chatty": (["command", CRASHY], start),
            "chatty-exit": (["command", CRASHY, "--exit-codes"], start),
        }
    )


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
    halted = crash_runs["chatty-exit"]
    assert (halted.code, halted.stdout, halted.stderr) == (2, b"", "Maintenance window.\n")


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
