"""Each runtime's dialect: what a hook process prints, and exits with, for one answer.

A handler answers once, in Claude Code's JSON (``HookApp.answer`` renders it; a server sends
it). The runtimes that start command hooks do not all read that JSON the same way:

- ``claude-code``: the JSON as it is, exit 0.
- ``codex``: JSON, but an ``ask``, a ``continue: false`` or a ``suppressOutput`` on a tool
  event marks the hook run failed and the tool proceeds; Stop and SubagentStop need JSON on
  exit 0; its schemas refuse keys they do not list.
- ``posit``: JSON; it ignores a ``hookSpecificOutput`` whose ``hookEventName`` differs (so it
  is dropped here, not relabelled), reads no ``updatedInput`` and no ``defer``, and ignores
  ``continue: false`` on events with no turn.
- ``sandbox``: exit codes only. Exit 2 blocks a Pre tool use call with stderr as the reason,
  and on Post tool use appends stderr to the tool result as feedback; Session start stdout is
  appended to the system prompt; anything else proceeds.

:func:`render` turns the one answer into what the chosen runtime reads. A decision the
runtime cannot carry becomes the closest safe one it can (an ``ask`` is a deny where nobody
can be asked; a ``continue: false`` on a tool event is a deny of that call), and each such
change comes back as a note for the caller to log: the mapping is never silent.

Pure functions, standard library only, not even :mod:`handler_kit.core`: ``handler-kit
forward`` renders with them and must start about as fast as a bare Python script.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from handler_kit.core.loop_guard import LOOP_GUARDED_EVENTS, in_stop_loop

TYPE_CHECKING = False  # typing.TYPE_CHECKING to a type checker, without importing typing
if TYPE_CHECKING:
    from typing import Any

CLAUDE_CODE = "claude-code"
CODEX = "codex"
POSIT = "posit"
SANDBOX = "sandbox"
RUNTIMES = (CLAUDE_CODE, CODEX, POSIT, SANDBOX)
DEFAULT_RUNTIME = CLAUDE_CODE
# What each runtime's name means, for --help and error messages.
RUNTIME_HELP = {
    CLAUDE_CODE: "Claude Code JSON on stdout (the default)",
    CODEX: "the JSON Codex applies: no ask, no continue:false on tool events",
    POSIT: "the JSON Posit Assistant reads: no updatedInput, hookEventName always set",
    SANDBOX: "exit codes only: 2 blocks (Pre tool use) or gives feedback (Post tool use)",
}

OK_EXIT = 0
BLOCK_EXIT = 2

# The safe decision of each event that has one: what a fail-closed gate answers when it
# cannot answer anything else. The same events as handler_kit.core.outputs.SAFE_DECISIONS
# (a test keeps them equal); written out here so the forwarder imports nothing of the core.
SAFE_EVENTS = {
    "PreToolUse": "deny",
    "PermissionRequest": "deny",
    "UserPromptSubmit": "block",
    "UserPromptExpansion": "block",
}
# Events whose answer can stop something, where a decision or a halt the runtime cannot
# carry is mapped to a block of that thing.
_PERMISSION_EVENTS = frozenset({"PreToolUse", "PermissionRequest"})
_STOP_EVENTS = LOOP_GUARDED_EVENTS
# Events on which Posit parses continue:false and ignores it: there is no turn to stop.
_POSIT_NO_TURN = frozenset({"SessionStart", "SessionEnd", "SubagentStart", "Notification"})
_POSIT_EVENTS = frozenset(
    {
        "SessionStart",
        "SessionEnd",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "Notification",
    }
)
# What Posit reads in hookSpecificOutput, per event; events not listed read none of it.
_POSIT_CONTEXT = frozenset({"PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart"})
_POSIT_BLOCK = frozenset({"PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop"})
_CODEX_EVENTS = frozenset(
    {
        "SessionStart",
        "SessionEnd",
        "SubagentStart",
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "PreCompact",
        "PostCompact",
        "UserPromptSubmit",
        "SubagentStop",
        "Stop",
        "Interrupt",
    }
)
_CODEX_CONTEXT = frozenset(
    {"SessionStart", "SubagentStart", "PreToolUse", "PostToolUse", "UserPromptSubmit"}
)
_CODEX_BLOCK = frozenset({"PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop"})
# Events whose run Codex lets go on after continue:false: there it is parsed and ignored
# (Interrupt reads nothing but systemMessage: the turn is over already).
_CODEX_NO_TURN = frozenset({"SessionEnd", "SubagentStart", "Interrupt"})


class Rendered:
    """What the hook process writes: its exit code, stdout, the stderr text (the reason of a
    block in the exit-code dialect, else empty) and the notes to log (each one line)."""

    __slots__ = ("code", "notes", "stderr", "stdout")

    def __init__(self, code: int, stdout: bytes, stderr: str, notes: tuple[str, ...] = ()) -> None:
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.notes = notes

    def _fields(self) -> tuple[int, bytes, str, tuple[str, ...]]:
        return (self.code, self.stdout, self.stderr, self.notes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rendered):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # equal by value, and its fields can change

    def __repr__(self) -> str:
        code, stdout, stderr, notes = self._fields()
        return f"Rendered(code={code!r}, stdout={stdout!r}, stderr={stderr!r}, notes={notes!r})"


def runtime_name(value: str) -> str:
    """``value`` as a runtime name; ``ValueError`` naming the choices when it is not one."""
    if value in RUNTIMES:
        return value
    raise ValueError(f"unknown runtime {value!r} (choose from {', '.join(RUNTIMES)})")


def _generic_reason(what: str) -> str:
    return f"A hook {what} this."


def render(
    runtime: str,
    event: str,
    output: dict[str, Any],
    *,
    fail_closed: bool = False,
    fallback: Callable[[str], str] = _generic_reason,
    stop_hook_active: bool = False,
) -> Rendered:
    """The answer ``output`` (Claude Code JSON for ``event``) as ``runtime`` reads it.

    ``fail_closed`` says the answer comes from a fail-closed gate: a rewrite the runtime cannot
    apply then denies the call instead of letting it run with its original input.
    ``fallback(what)`` gives the reason of a block that has none (``what`` is ``"blocked"`` or
    ``"stopped"``): Codex reads an exit 2 or a Stop block with no reason as a failed run.
    ``stop_hook_active`` is the input's flag of that name: the agent is already going on
    because of a Stop hook, so Stop context is not turned into a block (see
    :func:`_stop_context_continues`).
    """
    if runtime == CLAUDE_CODE:
        return Rendered(OK_EXIT, dump(output), "")
    parts = _Parts.read(event, output)
    continuing = in_stop_loop(event, stop_hook_active)
    parts.continuing = continuing
    if runtime == SANDBOX:
        return _exit_codes(event, parts, fail_closed, fallback)
    if runtime == CODEX:
        if event not in _CODEX_EVENTS:
            return Rendered(OK_EXIT, dump(output), "")  # Codex never runs it
        return _codex(event, parts, fail_closed, fallback)
    if runtime == POSIT:
        if event not in _POSIT_EVENTS:
            return Rendered(OK_EXIT, dump(output), "")  # Posit never runs it
        if parts.mismatched is not None:  # read without it: Posit ignores it
            named = parts.mismatched
            rest = {k: v for k, v in output.items() if k != "hookSpecificOutput"}
            parts = _Parts.read(event, rest)
            parts.continuing, parts.mismatched = continuing, named
        return _posit(event, parts, fail_closed, fallback)
    raise ValueError(f"unknown runtime {runtime!r} (choose from {', '.join(RUNTIMES)})")


def safe_output(event: str, reason: str) -> dict[str, Any] | None:
    """The event's safe decision with ``reason``, as Claude Code JSON; None for an event that
    has none (nothing there stops a call)."""
    decision = SAFE_EVENTS.get(event)
    if decision is None:
        return None
    if event == "PreToolUse":
        specific = {"permissionDecision": "deny", "permissionDecisionReason": reason}
        return {"hookSpecificOutput": {"hookEventName": event, **specific}}
    if event == "PermissionRequest":
        verdict = {"behavior": "deny", "message": reason}
        return {"hookSpecificOutput": {"hookEventName": event, "decision": verdict}}
    return {"decision": "block", "reason": reason}


def stop_hook_active(event: str | None, body: bytes) -> bool:
    """True when ``body``, the hook input of ``event``, is a Stop or SubagentStop input with
    ``stop_hook_active: true``: what :func:`render` needs from an input it was not given
    parsed (``handler-kit forward`` sends the bytes on as they came)."""
    if event not in _STOP_EVENTS:
        return False
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("stop_hook_active") is True


def needs_json(runtime: str, event: str) -> bool:
    """True when the runtime reads an empty stdout on exit 0 as a broken answer (Codex on
    Stop and SubagentStop), so "no opinion" must be ``{}``."""
    return runtime == CODEX and event in _STOP_EVENTS


def dump(value: dict[str, Any]) -> bytes:
    """Compact JSON and a newline, as the command hook prints it."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return text.encode() + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON allows
        return json.dumps(value, separators=(",", ":")).encode() + b"\n"


class _Parts:
    """The answer, read out of its JSON spelling: what it decides, and what else it carries."""

    __slots__ = (
        "context",
        "continuing",
        "decision",
        "halt",
        "mismatched",
        "reason",
        "specific",
        "stop_reason",
        "top",
        "updated_input",
        "verdict_rest",
    )

    def __init__(self) -> None:
        self.decision: str | None = None
        self.reason: str | None = None
        self.context: str | None = None
        self.updated_input: Any = None
        self.halt = False
        self.stop_reason: str | None = None
        self.top: dict[str, Any] = {}  # other top-level keys (systemMessage, suppressOutput...)
        self.specific: dict[str, Any] = {}  # other hookSpecificOutput keys
        self.verdict_rest: dict[str, Any] = {}  # PermissionRequest: updatedPermissions...
        self.continuing = False  # a Stop input with stop_hook_active: true
        # the hookSpecificOutput's hookEventName when it names another event, else None
        self.mismatched: str | None = None

    @classmethod
    def read(cls, event: str, output: dict[str, Any]) -> _Parts:
        parts = cls()
        hso = output.get("hookSpecificOutput")
        hso = dict(hso) if isinstance(hso, dict) else {}
        named = hso.pop("hookEventName", None)
        if named is not None and named != event:
            parts.mismatched = str(named)
        for key, value in output.items():
            if key in ("hookSpecificOutput", "decision", "reason"):
                continue
            if key == "continue":
                parts.halt = value is False
            elif key == "stopReason":
                parts.stop_reason = _text(value)
            else:
                parts.top[key] = value
        top_decision = output.get("decision")
        top_reason = _text(output.get("reason"))
        if event == "PreToolUse":
            legacy = {"approve": "allow", "block": "deny"}.get(str(top_decision), top_decision)
            parts.decision = hso.pop("permissionDecision", None) or legacy
            parts.reason = _text(hso.pop("permissionDecisionReason", None)) or top_reason
            parts.updated_input = hso.pop("updatedInput", None)
        elif event == "PermissionRequest":
            verdict = hso.pop("decision", None)
            if isinstance(verdict, dict):
                rest = dict(verdict)
                parts.decision = rest.pop("behavior", None)
                parts.reason = _text(rest.pop("message", None))
                parts.updated_input = rest.pop("updatedInput", None)
                parts.verdict_rest = rest
        elif top_decision == "block":
            parts.decision, parts.reason = "block", top_reason
        context = hso.pop("additionalContext", None)
        parts.context = context if isinstance(context, str) and context else None
        parts.specific = hso
        return parts


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _mapped_rewrite(
    runtime: str, event: str, parts: _Parts, fail_closed: bool, notes: list[str]
) -> None:
    """A rewritten input the runtime cannot apply: a fail-closed gate denies the call; any
    other handler leaves it to the runtime (no decision), since allowing it with the input the
    handler meant to replace is not what the handler said."""
    if parts.updated_input is None:
        return
    parts.updated_input = None
    if fail_closed:
        parts.decision = "deny"
        parts.reason = (
            "Blocked by policy: this check rewrites the call's input, and the agent cannot "
            "apply a rewrite."
        )
        notes.append(
            f"{event}: the {runtime} dialect cannot carry a rewritten tool input; the "
            "fail-closed gate denies the call instead"
        )
    else:
        if parts.decision == "allow":
            parts.decision = None
        # a rewrite beside a deny (or an ask) drops the rewrite, not the decision
        outcome = (
            "the call runs with its original input"
            if parts.decision is None
            else f"the rewrite is dropped and the {parts.decision!r} stands"
        )
        notes.append(
            f"{event}: the {runtime} dialect cannot carry a rewritten tool input; {outcome}"
        )


def _asked_is_denied(runtime: str, event: str, parts: _Parts, notes: list[str]) -> None:
    """``ask`` (and ``defer``) where nobody can be asked: the safe reading is deny."""
    if parts.decision in ("ask", "defer"):
        notes.append(
            f"{event}: the {runtime} dialect cannot carry {parts.decision!r} (there is no one "
            "to ask); answered as deny"
        )
        parts.decision = "deny"


def _stop_context_continues(runtime: str, event: str, parts: _Parts, notes: list[str]) -> None:
    """Stop's additionalContext keeps the agent going with that text (Claude Code); elsewhere
    the one way to say so is a block whose reason is the text.

    Not when the agent is already going on because of a Stop hook (``stop_hook_active``):
    the core's loop guard drops a handler's block there, and this block would be made after
    it, on every stop, with nothing to end the loop (Codex has no cap of its own). The
    context is dropped instead and the agent stops. A block the handler itself sent past the
    guard (``stop_loop_guard=False``) is its own choice and is kept.
    """
    if event in _STOP_EVENTS and parts.context is not None and parts.continuing:
        parts.context = None
        notes.append(
            f"{event}: stop_hook_active is true, and the {runtime} dialect could carry the "
            "context only as a block that would keep the agent going again; dropped"
        )
    elif event in _STOP_EVENTS and parts.context is not None:
        parts.reason = "\n\n".join(r for r in (parts.reason, parts.context) if r)
        parts.decision = "block"
        parts.context = None
        notes.append(
            f"{event}: the {runtime} dialect has no context on {event}; the agent is kept "
            "going with it as a block's reason"
        )


def _drop(runtime: str, event: str, what: str, keys: Any, notes: list[str]) -> None:
    names = ", ".join(sorted(keys))
    if names:
        notes.append(f"{event}: the {runtime} dialect does not read {what} {names}; dropped")


# -- JSON dialects -------------------------------------------------------------------------


def _codex(
    event: str, parts: _Parts, fail_closed: bool, fallback: Callable[[str], str]
) -> Rendered:
    notes: list[str] = []
    if event == "PermissionRequest":
        _mapped_rewrite(CODEX, event, parts, fail_closed, notes)
    if event in _PERMISSION_EVENTS:
        _asked_is_denied(CODEX, event, parts, notes)
        if parts.halt:
            # continue:false on a tool event is a failed run and the tool proceeds: the part
            # of a halt Codex can carry is not running this call
            parts.halt = False
            parts.decision = "deny"
            parts.reason = parts.reason or parts.stop_reason or fallback("stopped")
            parts.stop_reason = None
            notes.append(
                f"{event}: Codex cannot stop the agent from a tool hook; the call is denied instead"
            )
    elif parts.halt and event in _CODEX_NO_TURN:
        parts.halt, parts.stop_reason = False, None
        notes.append(f"{event}: Codex ignores continue:false here; dropped")
    _stop_context_continues(CODEX, event, parts, notes)
    if parts.context is not None and event not in _CODEX_CONTEXT:
        parts.context = None
        notes.append(f"{event}: Codex reads no additionalContext here; dropped")
    if parts.decision in ("deny", "block") and not parts.reason:
        parts.reason = fallback("blocked")  # Codex requires the reason of a block
    _drop(CODEX, event, "hookSpecificOutput", parts.specific, notes)
    _drop(CODEX, event, "the permission fields", parts.verdict_rest, notes)
    top = {k: v for k, v in parts.top.items() if k == "systemMessage"}
    _drop(CODEX, event, "the fields", (k for k in parts.top if k not in top), notes)
    return Rendered(OK_EXIT, dump(_json(event, parts, top)), "", tuple(notes))


def _posit(
    event: str, parts: _Parts, fail_closed: bool, fallback: Callable[[str], str]
) -> Rendered:
    notes: list[str] = []
    if parts.mismatched is not None:
        _mismatch_ignored(event, parts, fail_closed, notes)
    _mapped_rewrite(POSIT, event, parts, fail_closed, notes)
    if parts.decision == "defer":
        parts.decision = "ask"
        notes.append(f"{event}: Posit has no 'defer'; answered as 'ask'")
    if parts.halt and event in _POSIT_NO_TURN:
        parts.halt, parts.stop_reason = False, None
        notes.append(f"{event}: Posit ignores continue:false here; dropped")
    _stop_context_continues(POSIT, event, parts, notes)
    if parts.context is not None and event not in _POSIT_CONTEXT:
        parts.context = None
        notes.append(f"{event}: Posit reads no additionalContext here; dropped")
    if parts.decision == "block" and event not in _POSIT_BLOCK:
        parts.decision = None
        notes.append(f"{event}: Posit reads no block here; dropped")
    _drop(POSIT, event, "hookSpecificOutput", parts.specific, notes)
    top = {k: v for k, v in parts.top.items() if k in ("systemMessage", "suppressOutput")}
    _drop(POSIT, event, "the fields", (k for k in parts.top if k not in top), notes)
    return Rendered(OK_EXIT, dump(_json(event, parts, top)), "", tuple(notes))


def _mismatch_ignored(event: str, parts: _Parts, fail_closed: bool, notes: list[str]) -> None:
    """The answer's hookSpecificOutput named another event, and ``parts`` were read without
    it: Posit ignores such a hookSpecificOutput (with a warning), so it is not relabelled and
    applied here either. From a fail-closed gate it is an answer that cannot be read as one to
    this event, a failure it can observe: the safe decision, unless what is left denies."""
    named = parts.mismatched
    safe = SAFE_EVENTS.get(event)
    if fail_closed and safe is not None and parts.decision not in ("deny", "block"):
        parts.decision = safe
        parts.reason = (
            f"Blocked by policy: this check answered for {named}, not {event}, and is "
            "configured to fail closed."
        )
        parts.updated_input = None
        notes.append(
            f"{event}: the answer's hookSpecificOutput is for {named!r}; the fail-closed gate "
            f"answers {safe} instead"
        )
    else:
        notes.append(
            f"{event}: the answer's hookSpecificOutput is for {named!r}; Posit ignores it, dropped"
        )


def _json(event: str, parts: _Parts, top: dict[str, Any]) -> dict[str, Any]:
    """Claude Code's spelling of what is left of the answer; hookEventName always set."""
    out: dict[str, Any] = {}
    specific: dict[str, Any] = {}
    if parts.decision == "deny":
        parts.updated_input = None  # a denied call runs with no input at all
    if event == "PreToolUse":
        if parts.decision is not None:
            specific["permissionDecision"] = parts.decision
            if parts.reason:
                specific["permissionDecisionReason"] = parts.reason
        if parts.updated_input is not None:
            specific["updatedInput"] = parts.updated_input
    elif event == "PermissionRequest":
        if parts.decision is not None:
            verdict: dict[str, Any] = {"behavior": parts.decision}
            if parts.reason:
                verdict["message"] = parts.reason
            if parts.updated_input is not None:
                verdict["updatedInput"] = parts.updated_input
            specific["decision"] = verdict
    elif parts.decision == "block":
        out["decision"] = "block"
        if parts.reason:
            out["reason"] = parts.reason
    if parts.context is not None:
        specific["additionalContext"] = parts.context
    if specific:
        out["hookSpecificOutput"] = {"hookEventName": event, **specific}
    if parts.halt:
        out["continue"] = False
        if parts.stop_reason:
            out["stopReason"] = parts.stop_reason
    out.update(top)
    return out


# -- the exit-code dialect -----------------------------------------------------------------


def _exit_codes(
    event: str, parts: _Parts, fail_closed: bool, fallback: Callable[[str], str]
) -> Rendered:
    """The sandbox runtime's contract, for the events it names, and Claude Code's exit-code
    meanings for the others (runtimes that read only exit codes share them):

    - PreToolUse: exit 2 blocks, stderr is the reason; ``ask`` and a halt block too.
    - PostToolUse: exit 2 appends stderr to the tool result as feedback: a block's reason
      and the context both go there.
    - SessionStart: stdout is appended to the system prompt: the context goes there; a block
      or deny is ignored (nothing is blocked at session start), never exit 2.
    - Stop, SubagentStop: exit 2 keeps the agent going (a block, or context); a halt lets
      it stop, which exit 0 already does.
    - others: deny, block, ask and halt exit 2 with the reason; context is stdout.
    """
    notes: list[str] = []
    _mapped_rewrite(SANDBOX, event, parts, fail_closed, notes)
    _asked_is_denied(SANDBOX, event, parts, notes)
    _stop_context_continues(SANDBOX, event, parts, notes)
    if event == "SessionStart" and parts.decision is not None:
        # only stdout is read at session start, and a block is nothing there: exit 2
        # would lose the context
        notes.append(f"{event}: a {parts.decision} is ignored at session start; dropped")
        parts.decision = None
    feedback: list[str] = []  # stderr with exit 2
    stdout = b""
    if parts.decision in ("deny", "block"):
        feedback.append(parts.reason or fallback("blocked"))
    if parts.halt:
        if event in _STOP_EVENTS:
            notes.append(f"{event}: a halt lets the agent stop, which exit 0 already does")
        elif event == "SessionStart":
            notes.append(
                f"{event}: the {SANDBOX} dialect cannot stop the agent at session start; "
                "the halt is dropped"
            )
        elif not feedback:
            feedback.append(parts.stop_reason or fallback("stopped"))
            if event in ("PreToolUse", "PostToolUse"):
                what = "the call is blocked" if event == "PreToolUse" else "its reason is feedback"
                notes.append(
                    f"{event}: the {SANDBOX} dialect cannot stop the agent; {what} instead"
                )
    if parts.context is not None:
        if event == "PostToolUse":
            feedback.append(parts.context)
        elif event == "PreToolUse":
            notes.append(f"{event}: the {SANDBOX} dialect reads no context on {event}; dropped")
        elif feedback:
            notes.append(f"{event}: context dropped: exit 2 carries only the reason")
        else:
            stdout = parts.context.encode()
    if "systemMessage" in parts.top:
        notes.append(f"{event}: the {SANDBOX} dialect cannot show a systemMessage; dropped")
    _drop(SANDBOX, event, "hookSpecificOutput", parts.specific, notes)
    _drop(SANDBOX, event, "the permission fields", parts.verdict_rest, notes)
    # suppressOutput, terminalSequence...: exit codes and two streams carry none of them
    _drop(SANDBOX, event, "the fields", (k for k in parts.top if k != "systemMessage"), notes)
    if feedback:
        return Rendered(BLOCK_EXIT, b"", "\n\n".join(feedback), tuple(notes))
    return Rendered(OK_EXIT, stdout, "", tuple(notes))
