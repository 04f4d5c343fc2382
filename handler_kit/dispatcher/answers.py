"""Reading another server's answer the way Runbear reads it: its fields, and nothing else.

Runbear reads a few fields of the Claude Code output and accepts everything else unread, "so a
hook written for Claude Code never fails to parse", in the words of its hooks reference. What
it reads:

- ``decision``, and ``reason`` as its reason: ``block`` blocks on UserPromptSubmit, PostToolUse
  and Stop; on PreToolUse ``block`` is the older spelling of deny and ``approve`` of allow
  (``deny`` and ``allow`` read as themselves), unless a ``permissionDecision`` is given, which
  replaces them. ``approve`` elsewhere is an old no-op spelling. On SessionStart a block is
  ignored, so no decision is read there;
- ``hookSpecificOutput``, an object whose ``hookEventName``, when present, names the event, on
  every event but Stop (which reads none of it);
- in it, ``additionalContext`` on SessionStart, UserPromptSubmit and PostToolUse;
- in it, on PreToolUse, ``permissionDecision`` (``allow``, ``deny``, ``ask`` or ``defer``),
  ``permissionDecisionReason`` as its reason, and ``updatedInput`` unless the answer denies (an
  ``ask`` is a deny): a denied call drops it.

One of those with the wrong type or an unknown value is output Runbear cannot parse, a failure
(:class:`~handler_kit.core.outputs.OutputError`). Any other key, at the top level or in
``hookSpecificOutput``, or one of those where it is not read (a ``reason`` with no
``decision``), is ignored whatever its type: ``"suppressOutput": "yes"`` or ``"reason": {}``
beside a ``permissionDecision: "deny"`` leaves the deny standing. Ignored keys are kept, as
given, in the output's ``extra`` (top level) and ``specific`` (``hookSpecificOutput``) so a
report can say what was ignored; nothing reads them as decisions.

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
# The events on which Runbear reads hookSpecificOutput (Stop reads none of it).
_SPECIFIC_EVENTS = frozenset({"PreToolUse", *CONTEXT_EVENTS})
_PERMISSION_KEYS = frozenset({"permissionDecision", "permissionDecisionReason", "updatedInput"})
# A decision with which the call does not run: an updatedInput beside it is dropped unread.
_DENIED = frozenset({"deny", "ask"})


def read_answer(event: str, data: Any) -> Output:
    """Read a handler's JSON answer to ``event`` as Runbear does (see the module docstring).

    Raises :class:`~handler_kit.core.outputs.OutputError` when a field Runbear reads is not
    what it can read; never for a field it ignores. Whether a field is read can depend on the
    others: ``reason`` is read as the reason of a top-level ``decision`` only;
    ``permissionDecision`` replaces the top-level spelling; an ``updatedInput`` is dropped
    with a deny; nothing of ``hookSpecificOutput`` is read on Stop, and no decision on
    SessionStart. A field of the wrong type that would be dropped anyway cannot cost the
    decision beside it.
    """
    if not isinstance(data, dict):
        raise OutputError("output must be a JSON object")
    out = Output()
    specific = _specific_object(event, data.get("hookSpecificOutput"))
    permission = specific.get("permissionDecision") if event == "PreToolUse" else None
    if permission is None:  # a permissionDecision replaces the top-level spelling
        _read_top(event, data, out)
    ignored = _read_specific(event, specific, out)
    _read_permission_reason(permission, specific, out, ignored)
    if "updatedInput" in specific and event == "PreToolUse":
        _read_updated_input(specific["updatedInput"], out, ignored)
    out.extra = {key: value for key, value in data.items() if key not in _READ_TOP} or None
    out.specific = ignored or None
    return out


def _specific_object(event: str, specific: Any) -> dict[str, Any]:
    """The ``hookSpecificOutput`` read on ``event``: empty when absent or not read there.

    On an event that reads it, it must be an object whose ``hookEventName``, when given,
    names the event; on one that does not (Stop), whatever it is, it is ignored, but an
    object is still kept so a report can say what was ignored.
    """
    if event in _SPECIFIC_EVENTS:
        if specific is not None and not isinstance(specific, dict):
            raise OutputError("hookSpecificOutput must be an object")
        name = specific.get("hookEventName") if specific else None
        if name is not None and name != event:
            raise OutputError(f"hookSpecificOutput.hookEventName is {name!r}, expected {event!r}")
    elif not isinstance(specific, dict):
        specific = None  # not read on this event: whatever it is, it is ignored
    return specific or {}


def _read_specific(event: str, specific: dict[str, Any], out: Output) -> dict[str, Any]:
    """Which keys of ``hookSpecificOutput`` are read on ``event``: the context and the
    ``permissionDecision`` go into ``out``; the keys ignored are returned, as given.

    ``permissionDecisionReason`` and ``updatedInput`` on PreToolUse are left to
    :func:`_read_permission_reason` and :func:`_read_updated_input`, which depend on the
    decision read here.
    """
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
        elif event != "PreToolUse" or key not in _PERMISSION_KEYS:
            ignored[key] = value
        elif key == "permissionDecision" and value is not None:
            _check_permission_decision(value)
            out.decision = value
    return ignored


def _check_permission_decision(value: Any) -> None:
    """Whether a (non-null) ``permissionDecision`` is one Runbear can read."""
    if value not in PERMISSION_DECISIONS:
        raise OutputError(f"permissionDecision {value!r} is not one of allow/deny/ask/defer")


def _read_permission_reason(
    permission: Any, specific: dict[str, Any], out: Output, ignored: dict[str, Any]
) -> None:
    """Whether ``permissionDecisionReason`` is read: as the reason of a ``permissionDecision``
    only, leniently beside a ``defer`` (which Runbear ignores); with none it is ignored.
    """
    if permission is not None:
        reason = specific.get("permissionDecisionReason")
        if permission == "defer":  # ignored by Runbear: its reason is not read either
            out.reason = _lenient(reason)
        else:
            out.reason = _string("permissionDecisionReason", reason)
    elif "permissionDecisionReason" in specific:
        ignored["permissionDecisionReason"] = specific["permissionDecisionReason"]


def _read_updated_input(value: Any, out: Output, ignored: dict[str, Any]) -> None:
    """Whether a PreToolUse ``updatedInput`` is read: not beside a deny (an ask is one), which
    drops it unread (so it is never a failure); otherwise it must be an object or null.
    """
    if out.decision in _DENIED:
        # dropped with a deny (an ask is one): never read, so never a failure
        if isinstance(value, dict):
            out.updated_input = value
        elif value is not None:
            ignored["updatedInput"] = value
    else:
        if value is not None and not isinstance(value, dict):
            raise OutputError("updatedInput must be an object")
        out.updated_input = value


def _read_top(event: str, data: dict[str, Any], out: Output) -> None:
    """The top-level ``decision``, and ``reason`` as its reason."""
    decision = data.get("decision")
    if event == "SessionStart":
        # a block is ignored there: a decision of any kind is not read (a block is kept so
        # a report can say it was ignored)
        if decision == "block":
            out.decision, out.reason = "block", _lenient(data.get("reason"))
        return
    decision = _string("decision", decision)
    if decision is None:
        return  # a reason with no decision is the reason of nothing: not read
    if event == "PreToolUse":
        if decision not in _TOP_PERMISSIONS:
            raise OutputError(f"unknown decision {decision!r}")
        out.decision = _TOP_PERMISSIONS[decision]
        out.reason = _string("reason", data.get("reason"))
    elif decision == "block":
        out.decision, out.reason = "block", _string("reason", data.get("reason"))
    elif decision != "approve":  # an old no-op spelling outside PreToolUse
        raise OutputError(f"unknown decision {decision!r}")


def _lenient(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _string(key: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise OutputError(f"{key} must be a string")
