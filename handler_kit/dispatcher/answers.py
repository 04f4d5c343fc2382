"""Reading another server's answer the way Runbear reads it: its fields, and nothing else.

Runbear reads a few fields of the Claude Code output and accepts everything else unread, "so a
hook written for Claude Code never fails to parse", in the words of its hooks reference. What
it reads:

- ``decision`` and ``reason``: ``block`` blocks on UserPromptSubmit, PostToolUse and Stop (and
  is ignored on SessionStart by the merge); on PreToolUse ``block`` is the older spelling of
  deny and ``approve`` of allow (``deny`` and ``allow`` read as themselves). ``approve``
  elsewhere is an old no-op spelling;
- ``hookSpecificOutput``, an object whose ``hookEventName``, when present, names the event;
- in it, ``additionalContext`` on SessionStart, UserPromptSubmit and PostToolUse;
- in it, on PreToolUse, ``permissionDecision`` (``allow``, ``deny``, ``ask`` or ``defer``),
  ``permissionDecisionReason`` and ``updatedInput``.

One of those with the wrong type or an unknown value is output Runbear cannot parse, a failure
(:class:`~handler_kit.core.outputs.OutputError`). Any other key, at the top level or in
``hookSpecificOutput``, is ignored whatever its type: ``"suppressOutput": "yes"`` beside a deny
leaves the deny standing. Ignored keys are kept, as given, in the output's ``extra`` (top level)
and ``specific`` (``hookSpecificOutput``) so a report can say what was ignored; nothing reads
them as decisions.

This is the runtime's reader, lenient by design. :func:`handler_kit.core.outputs.parse_output`
is the reader of handler-kit's own handlers' answers, which are checked strictly; the two must
not be merged.
"""

from __future__ import annotations

from typing import Any

from handler_kit.core.outputs import PERMISSION_DECISIONS, Output, OutputError

CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PostToolUse"})
# Top-level decisions on PreToolUse: Claude Code's older spellings (block, approve), and the
# permission words themselves.
_TOP_PERMISSIONS = {"block": "deny", "approve": "allow", "deny": "deny", "allow": "allow"}
_READ_TOP = frozenset({"decision", "reason", "hookSpecificOutput"})


def read_answer(event: str, data: Any) -> Output:
    """Read a handler's JSON answer to ``event`` as Runbear does (see the module docstring).

    Raises :class:`~handler_kit.core.outputs.OutputError` when a field Runbear reads is not
    what it can read; never for a field it ignores.
    """
    if not isinstance(data, dict):
        raise OutputError("output must be a JSON object")
    out = Output()
    reason = _string("reason", data.get("reason"))
    decision = _string("decision", data.get("decision"))
    if decision is not None:
        if event == "PreToolUse":
            if decision not in _TOP_PERMISSIONS:
                raise OutputError(f"unknown decision {decision!r}")
            out.decision, out.reason = _TOP_PERMISSIONS[decision], reason
        elif decision == "block":
            out.decision, out.reason = "block", reason
        elif decision != "approve":  # an old no-op spelling outside PreToolUse
            raise OutputError(f"unknown decision {decision!r}")
    out.extra = {key: value for key, value in data.items() if key not in _READ_TOP} or None

    specific = data.get("hookSpecificOutput")
    if specific is None:
        return out
    if not isinstance(specific, dict):
        raise OutputError("hookSpecificOutput must be an object")
    name = specific.get("hookEventName")
    if name is not None and name != event:
        raise OutputError(f"hookSpecificOutput.hookEventName is {name!r}, expected {event!r}")
    ignored: dict[str, Any] = {}
    for key, value in specific.items():
        if key == "hookEventName":
            continue
        if key == "additionalContext" and event in CONTEXT_EVENTS:
            out.context = _string(key, value)
        elif key == "additionalContext" and isinstance(value, str):
            # Not read on PreToolUse and Stop (decision events): kept so a report can say so;
            # the merge leaves it out.
            out.context = value
        elif event != "PreToolUse":
            ignored[key] = value
        elif key == "permissionDecision":
            if value is not None and value not in PERMISSION_DECISIONS:
                raise OutputError(
                    f"permissionDecision {value!r} is not one of allow/deny/ask/defer"
                )
            if value is not None:
                out.decision = value
        elif key == "permissionDecisionReason":
            out.reason = _string(key, value)
        elif key == "updatedInput":
            if value is not None and not isinstance(value, dict):
                raise OutputError("updatedInput must be an object")
            out.updated_input = value
        else:
            ignored[key] = value
    out.specific = ignored or None
    return out


def _string(key: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise OutputError(f"{key} must be a string")
