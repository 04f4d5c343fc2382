"""``handler-kit command --runtime``: one handler, each runtime's dialect.

Each case runs the real console script on one handler of tests/support/apps/dialects.py, the
way the runtime starts it, and checks what that runtime would read: the JSON Codex applies (an
``ask`` is a failed run there, so it becomes a deny), the JSON Posit reads (no rewrite, no
``defer``), and the sandbox runtime's exit codes (exit 2 blocks a Pre tool use call and
appends stderr to a Post tool use result). What a dialect had to change is said on stderr.
The pure rendering is checked in-process at the end, for the corners no handler reaches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from handler_kit import parse_event
from handler_kit.command import dialects
from tests.support.apps import DIALECTS_APP
from tests.support.apps import dialects as app
from tests.support.processes import PROCESSES_AT_ONCE, REPO

HANDLER_KIT = Path(sys.executable).parent / "handler-kit"
PYCACHE = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"handler-kit-test-pycache-{os.getuid()}")

pytestmark = pytest.mark.skipif(
    not HANDLER_KIT.exists(), reason=f"no handler-kit console script next to {sys.executable}"
)


class Run(NamedTuple):
    code: int
    stdout: bytes
    stderr: str


INPUTS = {
    "PreToolUse": {
        "hook_event_name": "PreToolUse",
        "tool_name": "orders__refund",
        "tool_input": {"order_id": "4821", "amount": 640},
    },
    "PostToolUse": {
        "hook_event_name": "PostToolUse",
        "tool_name": "orders__lookup",
        "tool_input": {"order_id": "4821"},
        "tool_response": {"card": "4111 1111 1111 1111"},
    },
    "Stop": {"hook_event_name": "Stop", "stop_hook_active": False},
    "SessionStart": {"hook_event_name": "SessionStart", "source": "startup"},
    "UserPromptSubmit": {"hook_event_name": "UserPromptSubmit", "prompt": "my key is sk-1"},
    "PermissionRequest": {
        "hook_event_name": "PermissionRequest",
        "tool_name": "orders__refund",
        "tool_input": {"order_id": "4821", "amount": 640},
    },
}
# each handler's event picks its input
HANDLER_EVENT = {handler.name: handler.event for handler in app.app.handlers}


def deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


REWRITE_DENIED = (
    "Blocked by policy: this check rewrites the call's input, and the agent cannot apply a rewrite."
)
REWRITTEN = {"order_id": "4821", "amount": 500}
HALT = {"continue": False, "stopReason": app.HALT_REASON}

# (runtime, handler) -> (exit code, stdout: a JSON object or raw bytes, a fragment of the
# warning on stderr or None for an empty stderr). Exit 2 cases: stderr is the reason, exactly.
CASES: dict[tuple[str, str], tuple[int, Any, str | None]] = {
    # Claude Code carries everything: the JSON as the handler answered
    ("claude-code", "gate_ask"): (
        0,
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": app.ASK_REASON,
            }
        },
        None,
    ),
    ("claude-code", "halt_call"): (0, HALT, None),
    # Codex: ask is a failed run (the tool proceeds), so a gate's ask is a deny, its reason kept
    ("codex", "gate_ask"): (0, deny(app.ASK_REASON), "cannot carry 'ask'"),
    ("codex", "open_ask"): (0, deny(app.ASK_REASON), "answered as deny"),
    ("codex", "defer_call"): (
        0,
        deny("The hook 'dialects' blocked this (defer_call)."),
        "cannot carry 'defer'",
    ),
    # continue:false on a tool event is a failed run too: not running the call is what is left
    ("codex", "halt_call"): (0, deny(app.HALT_REASON), "the call is denied instead"),
    # suppressOutput would mark the run failed and lose the deny
    ("codex", "quiet_deny"): (0, deny(app.ASK_REASON), "suppressOutput; dropped"),
    ("codex", "gate_rewrite"): (
        0,
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": REWRITTEN,
            }
        },
        None,
    ),
    ("codex", "post_replace"): (0, {}, "updatedMCPToolOutput; dropped"),
    ("codex", "keep_going"): (
        0,
        {"decision": "block", "reason": app.KEEP_GOING},
        "kept going with it as a block's reason",
    ),
    ("codex", "stop_halt"): (0, HALT, None),
    # Stop needs JSON on exit 0: no opinion is {}
    ("codex", "stop_none"): (0, {}, None),
    ("codex", "quiet_note"): (0, {"systemMessage": app.NOTE}, "terminalSequence; dropped"),
    # Posit: ask is carried; no rewrite, no defer; continue:false at session start is ignored
    ("posit", "gate_ask"): (
        0,
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": app.ASK_REASON,
            }
        },
        None,
    ),
    ("posit", "gate_rewrite"): (0, deny(REWRITE_DENIED), "the fail-closed gate denies the call"),
    ("posit", "open_rewrite"): (0, {}, "the call runs with its original input"),
    ("posit", "defer_call"): (
        0,
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}},
        "Posit has no 'defer'",
    ),
    ("posit", "start_halt"): (0, {}, "Posit ignores continue:false here"),
    # ... and a halt where there is a turn to stop stands, as does context at session start
    ("posit", "halt_call"): (0, HALT, None),
    ("posit", "start_note"): (
        0,
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": app.POLICY}},
        None,
    ),
    ("posit", "quiet_note"): (
        0,
        {"systemMessage": app.NOTE, "suppressOutput": True},
        "terminalSequence; dropped",
    ),
    ("posit", "keep_going"): (
        0,
        {"decision": "block", "reason": app.KEEP_GOING},
        "kept going with it as a block's reason",
    ),
    ("posit", "post_replace"): (0, {}, "updatedMCPToolOutput; dropped"),
    # the sandbox runtime: exit codes, as its contract names them
    ("sandbox", "gate_ask"): (2, b"", app.ASK_REASON),
    ("sandbox", "halt_call"): (2, b"", app.HALT_REASON),
    ("sandbox", "halt_quiet"): (2, b"", "The hook 'dialects' stopped this (halt_quiet)."),
    ("sandbox", "post_halt"): (2, b"", app.HALT_REASON),
    ("sandbox", "gate_rewrite"): (2, b"", REWRITE_DENIED),
    ("sandbox", "open_rewrite"): (0, b"", "cannot carry a rewritten tool input"),
    ("sandbox", "note_call"): (0, b"", "reads no context on PreToolUse; dropped"),
    ("sandbox", "post_note"): (2, b"", app.POST_NOTE),
    ("sandbox", "post_both"): (2, b"", f"{app.POST_REASON}\n\n{app.POST_NOTE}"),
    ("sandbox", "post_replace"): (0, b"", "updatedMCPToolOutput; dropped"),
    ("sandbox", "start_note"): (0, app.POLICY.encode(), None),
    ("sandbox", "start_halt"): (0, b"", "cannot stop the agent at session start"),
    ("sandbox", "keep_going"): (2, b"", app.KEEP_GOING),
    ("sandbox", "stop_halt"): (0, b"", "a halt lets the agent stop"),
    ("sandbox", "prompt_block"): (2, b"", app.PROMPT_BLOCK),
    ("sandbox", "prompt_both"): (2, b"", app.PROMPT_BLOCK),
    ("sandbox", "quiet_note"): (0, b"", "cannot show a systemMessage"),
    ("sandbox", "permission_deny"): (2, b"", app.ASK_REASON),
}


def run(args: list[str], stdin: bytes) -> Run:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDLER_KIT_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    done = subprocess.run(
        [str(HANDLER_KIT), *args],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    return Run(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace"))


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, str], Run]:
    def one(key: tuple[str, str]) -> Run:
        runtime, handler = key
        stdin = json.dumps(INPUTS[HANDLER_EVENT[handler]]).encode()
        return run(["command", DIALECTS_APP, "--handler", handler, "--runtime", runtime], stdin)

    with ThreadPoolExecutor(max_workers=PROCESSES_AT_ONCE) as pool:
        return dict(zip(CASES, pool.map(one, CASES), strict=True))


@pytest.mark.parametrize("key", list(CASES), ids=lambda k: f"{k[0]}-{k[1]}")
def test_each_runtime_reads_its_dialect(
    key: tuple[str, str], runs: dict[tuple[str, str], Run]
) -> None:
    code, stdout, warning = CASES[key]
    result = runs[key]
    assert result.code == code, result
    if isinstance(stdout, dict):
        assert result.stdout.endswith(b"\n")
        assert json.loads(result.stdout) == stdout
    else:
        assert result.stdout == stdout
    if code == 2:
        assert result.stderr == f"{warning}\n"  # the reason, and nothing else: the model reads it
    elif warning is None:
        assert result.stderr == ""
    else:
        assert result.stderr.startswith("handler-kit: warning: "), result.stderr
        assert warning in result.stderr


# what the dialect logs besides an exit-2 reason (the command hook writes these to its log only)
BLOCK_NOTES = {
    ("sandbox", "gate_ask"): (
        "PreToolUse: the sandbox dialect cannot carry 'ask' (there is no one to ask); "
        "answered as deny",
    ),
    ("sandbox", "halt_call"): (
        "PreToolUse: the sandbox dialect cannot stop the agent; the call is blocked instead",
    ),
    ("sandbox", "halt_quiet"): (
        "PreToolUse: the sandbox dialect cannot stop the agent; the call is blocked instead",
    ),
    ("sandbox", "post_halt"): (
        "PostToolUse: the sandbox dialect cannot stop the agent; its reason is feedback instead",
    ),
    ("sandbox", "gate_rewrite"): (
        "PreToolUse: the sandbox dialect cannot carry a rewritten tool input; the fail-closed "
        "gate denies the call instead",
    ),
    ("sandbox", "permission_deny"): (
        "PermissionRequest: the sandbox dialect does not read the permission fields "
        "updatedPermissions; dropped",
    ),
    ("sandbox", "prompt_both"): (
        "UserPromptSubmit: context dropped: exit 2 carries only the reason",
    ),
    ("sandbox", "keep_going"): (
        "Stop: the sandbox dialect has no context on Stop; the agent is kept going with it as "
        "a block's reason",
    ),
}


# the note each row with a warning logs, word for word (the console script writes it to stderr)
NOTES: dict[tuple[str, str], str | tuple[str, ...]] = {
    ("codex", "gate_ask"): "PreToolUse: the codex dialect cannot carry 'ask' (there is no one "
    "to ask); answered as deny",
    ("codex", "open_ask"): "PreToolUse: the codex dialect cannot carry 'ask' (there is no one "
    "to ask); answered as deny",
    ("codex", "defer_call"): "PreToolUse: the codex dialect cannot carry 'defer' (there is no "
    "one to ask); answered as deny",
    ("codex", "halt_call"): "PreToolUse: Codex cannot stop the agent from a tool hook; the call "
    "is denied instead",
    ("codex", "quiet_deny"): "PreToolUse: the codex dialect does not read the fields "
    "suppressOutput; dropped",
    ("codex", "post_replace"): "PostToolUse: the codex dialect does not read hookSpecificOutput "
    "updatedMCPToolOutput; dropped",
    ("codex", "keep_going"): "Stop: the codex dialect has no context on Stop; the agent is kept "
    "going with it as a block's reason",
    ("codex", "quiet_note"): "PreToolUse: the codex dialect does not read the fields "
    "suppressOutput, terminalSequence; dropped",
    ("posit", "gate_rewrite"): "PreToolUse: the posit dialect cannot carry a rewritten tool "
    "input; the fail-closed gate denies the call instead",
    ("posit", "open_rewrite"): "PreToolUse: the posit dialect cannot carry a rewritten tool "
    "input; the call runs with its original input",
    ("posit", "defer_call"): "PreToolUse: Posit has no 'defer'; answered as 'ask'",
    ("posit", "start_halt"): "SessionStart: Posit ignores continue:false here; dropped",
    ("posit", "keep_going"): "Stop: the posit dialect has no context on Stop; the agent is kept "
    "going with it as a block's reason",
    ("posit", "post_replace"): "PostToolUse: the posit dialect does not read hookSpecificOutput "
    "updatedMCPToolOutput; dropped",
    ("posit", "quiet_note"): "PreToolUse: the posit dialect does not read the fields "
    "terminalSequence; dropped",
    ("sandbox", "open_rewrite"): "PreToolUse: the sandbox dialect cannot carry a rewritten tool "
    "input; the call runs with its original input",
    ("sandbox", "note_call"): "PreToolUse: the sandbox dialect reads no context on PreToolUse; "
    "dropped",
    ("sandbox", "post_replace"): "PostToolUse: the sandbox dialect does not read "
    "hookSpecificOutput updatedMCPToolOutput; dropped",
    ("sandbox", "start_halt"): "SessionStart: the sandbox dialect cannot stop the agent at "
    "session start; the halt is dropped",
    ("sandbox", "stop_halt"): "Stop: a halt lets the agent stop, which exit 0 already does",
    # exit codes carry neither the message nor the other top-level fields: two notes
    ("sandbox", "quiet_note"): (
        "PreToolUse: the sandbox dialect cannot show a systemMessage; dropped",
        "PreToolUse: the sandbox dialect does not read the fields suppressOutput, "
        "terminalSequence; dropped",
    ),
}


def _notes(key: tuple[str, str]) -> tuple[str, ...]:
    """The notes of a row of NOTES: one, or a tuple of several."""
    notes = NOTES[key]
    return notes if isinstance(notes, tuple) else (notes,)


def _rendered_in_process(runtime: str, name: str) -> dialects.Rendered:
    """The handler's answer, rendered in this process as the command hook renders it: the
    same table, for the tests that choose what to run by the functions a test calls here
    (``make mutation``: the console script's calls happen in a child)."""
    handler = app.app.by_name[name]
    event = parse_event(INPUTS[handler.event])
    answer = app.app.answer_sync(event, handlers=[handler], transport="command")
    return dialects.render(
        runtime,
        handler.event,
        answer.output,
        fail_closed=handler.fail_closed,
        fallback=lambda what: f"The hook 'dialects' {what} this ({name}).",
        stop_hook_active=False,
    )


@pytest.mark.parametrize("key", list(CASES), ids=lambda k: f"{k[0]}-{k[1]}")
def test_each_dialect_rendered_in_process(key: tuple[str, str]) -> None:
    code, stdout, warning = CASES[key]
    result = _rendered_in_process(*key)
    assert result.code == code, result
    if isinstance(stdout, dict):
        assert result.stdout.endswith(b"\n")
        assert json.loads(result.stdout) == stdout
    else:
        assert result.stdout == stdout
    if code == 2:
        assert (result.stderr, result.notes) == (warning, BLOCK_NOTES.get(key, ())), result
    elif warning is None:
        assert (result.stderr, result.notes) == ("", ()), result
    else:
        assert (result.stderr, result.notes) == ("", _notes(key)), result
        assert warning in _notes(key)[0]


def test_exit_codes_is_the_sandbox_dialect() -> None:
    stdin = json.dumps(INPUTS["PostToolUse"]).encode()
    alias = run(["command", DIALECTS_APP, "--handler", "post_note", "--exit-codes"], stdin)
    assert alias == Run(2, b"", f"{app.POST_NOTE}\n")
    both = run(
        ["command", DIALECTS_APP, "--exit-codes", "--runtime=sandbox", "--handler=post_note"],
        stdin,
    )
    assert both == alias


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runtime", "claude"], "invalid choice: 'claude'"),
        (["--exit-codes", "--runtime", "codex"], "--exit-codes is --runtime sandbox"),
    ],
)
def test_runtime_usage_errors_are_one_line_and_exit_1(args: list[str], message: str) -> None:
    stdin = json.dumps(INPUTS["PreToolUse"]).encode()
    result = run(["command", DIALECTS_APP, "--handler", "gate_ask", *args], stdin)
    assert (result.code, result.stdout) == (1, b"")
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


# -- the pure rendering -----------------------------------------------------------------------


def test_safe_decisions_are_the_cores() -> None:
    from handler_kit.claude_code.settings import RUNTIMES
    from handler_kit.command.hook import CLAUDE_CODE
    from handler_kit.core.outputs import SAFE_DECISIONS

    assert dialects.SAFE_EVENTS == SAFE_DECISIONS
    assert RUNTIMES == dialects.RUNTIMES
    assert CLAUDE_CODE == dialects.DEFAULT_RUNTIME


def test_codex_permission_request_keeps_only_what_codex_reads() -> None:
    """Codex fails a PermissionRequest run closed on updatedInput and interrupt, and reads no
    Claude-shaped updatedPermissions: a fail-closed rewrite denies, the rest is dropped."""
    verdict = {
        "behavior": "allow",
        "updatedInput": {"command": "ls"},
        "updatedPermissions": [{"type": "setMode", "mode": "acceptEdits"}],
    }
    output = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": verdict}}
    closed = dialects.render("codex", "PermissionRequest", output, fail_closed=True)
    decision = json.loads(closed.stdout)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny" and "rewrite" in decision["message"]
    assert set(decision) == {"behavior", "message"}
    dropped = (
        "PermissionRequest: the codex dialect does not read the permission fields "
        "updatedPermissions; dropped"
    )
    assert closed.notes == (
        "PermissionRequest: the codex dialect cannot carry a rewritten tool input; the "
        "fail-closed gate denies the call instead",
        dropped,
    )
    opened = dialects.render("codex", "PermissionRequest", output)
    assert json.loads(opened.stdout) == {}  # no verdict: the user is asked, as without a hook
    assert opened.notes == (
        "PermissionRequest: the codex dialect cannot carry a rewritten tool input; the call "
        "runs with its original input",
        dropped,
    )


@pytest.mark.parametrize("event", ["PreToolUse", "PermissionRequest"])
def test_codex_halt_on_a_tool_event_without_a_reason_denies_with_the_generic_one(
    event: str,
) -> None:
    rendered = dialects.render("codex", event, {"continue": False})
    assert rendered.notes == (
        f"{event}: Codex cannot stop the agent from a tool hook; the call is denied instead",
    )
    specific = json.loads(rendered.stdout)["hookSpecificOutput"]
    if event == "PreToolUse":
        assert specific["permissionDecisionReason"] == "A hook stopped this."
    else:
        assert specific["decision"] == {"behavior": "deny", "message": "A hook stopped this."}


def test_legacy_spellings_are_read() -> None:
    legacy = {"decision": "block", "reason": "no"}
    assert dialects.render("sandbox", "PreToolUse", legacy) == dialects.Rendered(2, b"", "no")
    codex = dialects.render("codex", "PreToolUse", {"decision": "approve"})
    assert json.loads(codex.stdout) == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}
    }


def test_a_legacy_decision_without_a_new_spelling_is_read_as_it_is() -> None:
    rendered = dialects.render("posit", "PreToolUse", {"decision": "deny", "reason": "No."})
    assert rendered == dialects.Rendered(0, dialects.dump(deny("No.")), "")


def test_events_a_runtime_never_runs_pass_through() -> None:
    output = {"hookSpecificOutput": {"hookEventName": "WorktreeCreate", "worktreePath": "/w"}}
    for runtime in ("codex", "posit"):
        rendered = dialects.render(runtime, "WorktreeCreate", output)
        assert rendered == dialects.Rendered(0, dialects.dump(output), "")


def test_json_with_a_lone_surrogate_is_escaped() -> None:
    rendered = dialects.render(
        "codex", "UserPromptSubmit", {"decision": "block", "reason": "\udc8f"}
    )
    assert rendered.stdout == b'{"decision":"block","reason":"\\udc8f"}\n'


def test_safe_output_per_event() -> None:
    assert dialects.safe_output("PreToolUse", "r") == deny("r")
    assert dialects.safe_output("UserPromptSubmit", "r") == {"decision": "block", "reason": "r"}
    assert dialects.safe_output("PermissionRequest", "r") == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "r"},
        }
    }
    assert dialects.safe_output("PostToolUse", "r") is None


FOR_ANOTHER_EVENT = {
    "decision": "block",
    "reason": "Billing questions only.",
    "hookSpecificOutput": {
        "hookEventName": "PostToolUse",
        "permissionDecision": "allow",
        "additionalContext": "Approved.",
    },
}


def test_posit_ignores_a_hook_specific_output_for_another_event() -> None:
    """Posit ignores it with a warning: dropped, not relabelled and applied; what is left of
    the answer (a top-level block) stands, and a fail-closed gate with nothing left denies."""
    allow = {"hookSpecificOutput": FOR_ANOTHER_EVENT["hookSpecificOutput"]}
    ignored = dialects.render("posit", "PreToolUse", allow)
    assert ignored.stdout == b"{}\n"
    assert ignored.notes == (
        "PreToolUse: the answer's hookSpecificOutput is for 'PostToolUse'; Posit ignores it, "
        "dropped",
    )
    gate = dialects.render("posit", "PreToolUse", allow, fail_closed=True)
    assert json.loads(gate.stdout) == deny(
        "Blocked by policy: this check answered for PostToolUse, not PreToolUse, and is "
        "configured to fail closed."
    )
    assert gate.notes == (
        "PreToolUse: the answer's hookSpecificOutput is for 'PostToolUse'; the fail-closed "
        "gate answers deny instead",
    )
    # what is left denies already: the gate's own reason stands
    denying = dialects.render("posit", "PreToolUse", FOR_ANOTHER_EVENT, fail_closed=True)
    assert json.loads(denying.stdout) == deny("Billing questions only.")
    assert denying.notes == ignored.notes
    prompt = dialects.render("posit", "UserPromptSubmit", FOR_ANOTHER_EVENT, fail_closed=True)
    assert json.loads(prompt.stdout) == {"decision": "block", "reason": "Billing questions only."}
    legacy = dialects.render("posit", "PreToolUse", FOR_ANOTHER_EVENT)
    assert json.loads(legacy.stdout) == deny("Billing questions only.")


def test_runtime_names_and_their_error() -> None:
    assert [dialects.runtime_name(name) for name in dialects.RUNTIMES] == [
        "claude-code",
        "codex",
        "posit",
        "sandbox",
    ]
    expected = "unknown runtime 'claude' (choose from claude-code, codex, posit, sandbox)"
    with pytest.raises(ValueError) as named:
        dialects.runtime_name("claude")
    assert str(named.value) == expected
    with pytest.raises(ValueError) as rendered:
        dialects.render("claude", "Stop", {})
    assert str(rendered.value) == expected


@pytest.mark.parametrize(
    ("event", "body", "active"),
    [
        ("Stop", b'{"stop_hook_active": true}', True),
        ("SubagentStop", b'{"stop_hook_active": true}', True),
        ("Stop", b'{"stop_hook_active": false}', False),
        ("Stop", b'{"stop_hook_active": 1}', False),
        ("Stop", b"{}", False),
        ("Stop", b"[true]", False),
        ("Stop", b"not json", False),
        ("Stop", b"[" * 100_000, False),
        ("PreToolUse", b'{"stop_hook_active": true}', False),
        (None, b'{"stop_hook_active": true}', False),
    ],
)
def test_stop_hook_active_read_from_the_raw_input(
    event: str | None, body: bytes, active: bool
) -> None:
    assert dialects.stop_hook_active(event, body) is active


def test_needs_json_is_codex_on_stop_only() -> None:
    assert [
        dialects.needs_json(runtime, event)
        for runtime in ("codex", "posit", "sandbox", "claude-code")
        for event in ("Stop", "SubagentStop", "PreToolUse")
    ] == [True, True, False] + [False] * 9


def test_a_block_without_a_reason_gets_the_generic_one() -> None:
    assert dialects.render("codex", "Stop", {"decision": "block"}) == dialects.Rendered(
        0, b'{"decision":"block","reason":"A hook blocked this."}\n', ""
    )
    assert dialects.render("sandbox", "PreToolUse", {"decision": "block"}) == dialects.Rendered(
        2, b"", "A hook blocked this."
    )


def test_rendered_equality_and_repr() -> None:
    one = dialects.Rendered(2, b"x", "r", ("n",))
    assert repr(one) == "Rendered(code=2, stdout=b'x', stderr='r', notes=('n',))"
    assert one == dialects.Rendered(2, b"x", "r", ("n",))
    assert one != dialects.Rendered(2, b"x", "r")
    assert dialects.Rendered(0, b"", "").notes == ()
    assert (one == (2, b"x", "r", ("n",))) is False
    assert dialects.Rendered.__hash__ is None


@pytest.mark.parametrize("event", ["SessionEnd", "SubagentStart", "Interrupt"])
def test_codex_drops_a_halt_where_there_is_no_turn_to_stop(event: str) -> None:
    assert dialects.render(
        "codex", event, {"continue": False, "stopReason": "Out of budget."}
    ) == dialects.Rendered(
        0, b"{}\n", "", (f"{event}: Codex ignores continue:false here; dropped",)
    )


@pytest.mark.parametrize("event", ["PreCompact", "PermissionRequest"])
def test_codex_drops_context_where_it_reads_none(event: str) -> None:
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": "Be brief."}}
    assert dialects.render("codex", event, output) == dialects.Rendered(
        0, b"{}\n", "", (f"{event}: Codex reads no additionalContext here; dropped",)
    )


def test_codex_keeps_the_system_message_and_drops_the_other_top_level_fields() -> None:
    output = {"systemMessage": "Checked.", "suppressOutput": True}
    assert dialects.render("codex", "PreToolUse", output) == dialects.Rendered(
        0,
        b'{"systemMessage":"Checked."}\n',
        "",
        ("PreToolUse: the codex dialect does not read the fields suppressOutput; dropped",),
    )


def test_codex_denied_call_carries_no_rewritten_input() -> None:
    specific = {"permissionDecision": "deny", "permissionDecisionReason": "Not on main."}
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            **specific,
            "updatedInput": {"command": "ls"},
        }
    }
    assert json.loads(dialects.render("codex", "PreToolUse", output).stdout) == deny("Not on main.")


@pytest.mark.parametrize(
    ("runtime", "event"), [("codex", "PostToolUse"), ("posit", "UserPromptSubmit")]
)
def test_context_where_the_runtime_reads_it_is_carried(runtime: str, event: str) -> None:
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": "Be brief."}}
    assert dialects.render(runtime, event, output) == dialects.Rendered(
        0,
        b'{"hookSpecificOutput":{"hookEventName":"%s","additionalContext":"Be brief."}}\n'
        % event.encode(),
        "",
    )


def test_the_fields_a_dialect_drops_are_named_in_one_note() -> None:
    output = {"suppressOutput": True, "trace": "t-1"}
    assert dialects.render("codex", "PreToolUse", output).notes == (
        "PreToolUse: the codex dialect does not read the fields suppressOutput, trace; dropped",
    )


def test_stop_context_joins_the_blocks_reason() -> None:
    output = {
        "decision": "block",
        "reason": "Cite the ticket.",
        "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "Check the tests."},
    }
    rendered = dialects.render("codex", "Stop", output)
    assert json.loads(rendered.stdout) == {
        "decision": "block",
        "reason": "Cite the ticket.\n\nCheck the tests.",
    }


@pytest.mark.parametrize("runtime", ["codex", "posit"])
def test_stop_context_is_dropped_while_stop_hook_active(runtime: str) -> None:
    output = {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "Go on."}}
    assert dialects.render(runtime, "Stop", output, stop_hook_active=True) == dialects.Rendered(
        0,
        b"{}\n",
        "",
        (
            f"Stop: stop_hook_active is true, and the {runtime} dialect could carry the context "
            "only as a block that would keep the agent going again; dropped",
        ),
    )


def test_json_keeps_non_ascii_text_as_utf8() -> None:
    rendered = dialects.render("codex", "UserPromptSubmit", {"decision": "block", "reason": "é"})
    assert rendered == dialects.Rendered(0, '{"decision":"block","reason":"é"}\n'.encode(), "")


def test_codex_permission_request_deny_is_carried_with_its_message() -> None:
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "Not today."},
        }
    }
    assert dialects.render("codex", "PermissionRequest", output) == dialects.Rendered(
        0, dialects.dump(output), ""
    )


def test_a_reason_that_is_not_text_is_no_reason() -> None:
    rendered = dialects.render("codex", "UserPromptSubmit", {"decision": "block", "reason": 5})
    assert json.loads(rendered.stdout) == {"decision": "block", "reason": "A hook blocked this."}


@pytest.mark.parametrize("context", [5, ""])
def test_context_that_is_not_text_is_no_context(context: Any) -> None:
    output = {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}
    }
    assert dialects.render("posit", "UserPromptSubmit", output) == dialects.Rendered(0, b"{}\n", "")


def test_a_deny_with_a_rewrite_keeps_the_deny_and_says_so() -> None:
    """Where the rewrite cannot be carried, a deny beside it stands: the note says the rewrite
    is dropped, not that the call runs."""
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no",
            "updatedInput": {"command": "ls"},
        }
    }
    rendered = dialects.render("posit", "PreToolUse", output)
    assert rendered.code == 0
    assert json.loads(rendered.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert rendered.notes == (
        "PreToolUse: the posit dialect cannot carry a rewritten tool input; the rewrite is "
        "dropped and the 'deny' stands",
    )


def _specific(event: str, **fields: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, **fields}}


# Answers the core refuses from a handler (tests/support/apps/dialects.py cannot give them),
# which `handler-kit forward` still renders from another server: (runtime, event, answer) ->
# what the runtime is given.
UNCHECKED_ANSWERS: list[tuple[str, str, dict[str, Any], dialects.Rendered]] = [
    # a verdict with no behavior decides nothing
    (
        "codex",
        "PermissionRequest",
        _specific("PermissionRequest", decision={"message": "Not today."}),
        dialects.Rendered(0, b"{}\n", ""),
    ),
    (
        "posit",
        "Notification",
        _specific("Notification", additionalContext="Be brief."),
        dialects.Rendered(
            0, b"{}\n", "", ("Notification: Posit reads no additionalContext here; dropped",)
        ),
    ),
    (
        "posit",
        "SessionStart",
        {"decision": "block", "reason": "Not now."},
        dialects.Rendered(0, b"{}\n", "", ("SessionStart: Posit reads no block here; dropped",)),
    ),
    # 'block' is no permissionDecision: Posit reads none
    (
        "posit",
        "PreToolUse",
        _specific("PreToolUse", permissionDecision="block"),
        dialects.Rendered(0, b"{}\n", "", ("PreToolUse: Posit reads no block here; dropped",)),
    ),
    # nothing is blocked at session start: the context still goes to the system prompt
    (
        "sandbox",
        "SessionStart",
        {
            "decision": "block",
            "reason": "Not now.",
            **_specific("SessionStart", additionalContext="Be brief."),
        },
        dialects.Rendered(
            0, b"Be brief.", "", ("SessionStart: a block is ignored at session start; dropped",)
        ),
    ),
]


@pytest.mark.parametrize(
    ("runtime", "event", "output", "rendered"),
    UNCHECKED_ANSWERS,
    ids=[f"{row[0]}-{row[1]}-{i}" for i, row in enumerate(UNCHECKED_ANSWERS)],
)
def test_answers_no_handler_gives_are_rendered(
    runtime: str, event: str, output: dict[str, Any], rendered: dialects.Rendered
) -> None:
    assert dialects.render(runtime, event, output) == rendered
