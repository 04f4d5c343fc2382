"""Hook outputs: what a handler answers, and its exact Claude Code JSON for each event.

A handler does not know which JSON spelling its event wants (``deny`` is
``hookSpecificOutput.permissionDecision`` on PreToolUse but ``decision.behavior`` on
PermissionRequest; ``block`` is a top-level ``decision``), so the helpers build an event-neutral
:class:`Output` and :meth:`Output.render` writes it for the event it was returned from. An output
the event cannot carry raises :class:`OutputError` there, in the server, instead of reaching the
runtime as a silently wrong answer.

:func:`parse_output` is the reverse: it reads a Claude Code JSON object into an
:class:`Output`, keeping keys it does not know, as a runtime reading another server's answer
must. A handler's own ``dict`` is read by :func:`parse_handler_output`, which first checks every
key against the event's output schema: a misspelt or misplaced key would otherwise reach the
runtime and be ignored there, silently.
"""

from __future__ import annotations

from typing import Any

from handler_kit.core.names import EVENT_NAMES
from handler_kit.core.names import SAFE_DECISIONS as SAFE_DECISIONS

CONTEXT_LIMIT = 10_000
TRUNCATION_MARKER = "\n[... truncated by handler-kit: context over 10,000 characters]"

# Events whose top-level ``decision: "block"`` means something.
BLOCK_EVENTS = frozenset(
    {
        "UserPromptSubmit",
        "UserPromptExpansion",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "Stop",
        "SubagentStop",
        "ConfigChange",
        "PreCompact",
        "TaskCreated",
        "TaskCompleted",
        "TeammateIdle",
    }
)
# Events that read ``hookSpecificOutput.additionalContext``.
CONTEXT_EVENTS = frozenset(
    {
        "SessionStart",
        "Setup",
        "SubagentStart",
        "UserPromptSubmit",
        "UserPromptExpansion",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "Stop",
        "SubagentStop",
    }
)
PERMISSION_DECISIONS = ("allow", "deny", "ask", "defer")
# SAFE_DECISIONS, the events whose safe answer is known, is derived from the table of events.

_UNIVERSAL = {
    "continue": "continue_",
    "stopReason": "stop_reason",
    "systemMessage": "system_message",
    "suppressOutput": "suppress_output",
}

# The top-level fields of Claude Code's output: the universal ones, the decision, and the
# object of the event's own fields.
TOP_LEVEL_FIELDS = frozenset(
    {
        "continue",
        "stopReason",
        "suppressOutput",
        "systemMessage",
        "terminalSequence",
        "decision",
        "reason",
        "hookSpecificOutput",
    }
)
# The hookSpecificOutput fields each event carries, besides hookEventName; an event missing
# here carries none.
SPECIFIC_FIELDS: dict[str, frozenset[str]] = {
    "SessionStart": frozenset(
        {"additionalContext", "initialUserMessage", "sessionTitle", "watchPaths", "reloadSkills"}
    ),
    "Setup": frozenset({"additionalContext"}),
    "SubagentStart": frozenset({"additionalContext"}),
    "UserPromptSubmit": frozenset({"additionalContext", "sessionTitle", "suppressOriginalPrompt"}),
    "UserPromptExpansion": frozenset({"additionalContext"}),
    "PreToolUse": frozenset(
        {"permissionDecision", "permissionDecisionReason", "updatedInput", "additionalContext"}
    ),
    "PermissionRequest": frozenset({"decision"}),
    "PermissionDenied": frozenset({"retry"}),
    "PostToolUse": frozenset(
        {"additionalContext", "updatedToolOutput", "updatedMCPToolOutput", "classifierContext"}
    ),
    "PostToolUseFailure": frozenset({"additionalContext"}),
    "PostToolBatch": frozenset({"additionalContext"}),
    "Stop": frozenset({"additionalContext"}),
    "SubagentStop": frozenset({"additionalContext"}),
    "WorktreeCreate": frozenset({"worktreePath"}),
    "Elicitation": frozenset({"action", "content"}),
    "ElicitationResult": frozenset({"action", "content"}),
    "MessageDisplay": frozenset({"displayContent"}),
    "CwdChanged": frozenset({"watchPaths"}),
    "FileChanged": frozenset({"watchPaths"}),
}
# The fields of PermissionRequest's hookSpecificOutput.decision.
PERMISSION_VERDICT_FIELDS = frozenset(
    {"behavior", "updatedInput", "updatedPermissions", "message", "interrupt"}
)
_EVERY_SPECIFIC_FIELD = frozenset().union(*SPECIFIC_FIELDS.values())
_KNOWN_EVENTS = frozenset(EVENT_NAMES)


class OutputError(ValueError):
    """A handler's answer that its event cannot carry, or output JSON that is malformed."""


def cap_context(text: str) -> str:
    """Cap one context string at 10,000 characters, with a visible truncation marker."""
    if len(text) <= CONTEXT_LIMIT:
        return text
    return text[: CONTEXT_LIMIT - len(TRUNCATION_MARKER)] + TRUNCATION_MARKER


_SIX_NONES = (None, None, None, None, None, None)


class Output:
    """One handler's answer, independent of the JSON spelling of any event.

    ``decision`` is ``allow``/``deny``/``ask``/``defer`` (permission events) or ``block``.
    ``specific`` holds other ``hookSpecificOutput`` keys (``sessionTitle``,
    ``updatedToolOutput``...), ``extra`` other top-level keys; both are passed through.
    """

    __slots__ = (
        "context",
        "continue_",
        "decision",
        "extra",
        "reason",
        "specific",
        "stop_reason",
        "suppress_output",
        "system_message",
        "updated_input",
    )

    def __init__(
        self,
        decision: str | None = None,
        reason: str | None = None,
        context: str | None = None,
        updated_input: dict[str, Any] | None = None,
        continue_: bool | None = None,
        stop_reason: str | None = None,
        system_message: str | None = None,
        suppress_output: bool | None = None,
        specific: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.decision = decision
        self.reason = reason
        self.context = context
        self.updated_input = updated_input
        self.continue_ = continue_
        self.stop_reason = stop_reason
        self.system_message = system_message
        self.suppress_output = suppress_output
        self.specific = specific
        self.extra = extra

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{name}={getattr(self, name)!r}"
            for name in self.__slots__
            if getattr(self, name) is not None
        )
        return f"Output({fields})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Output):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    @property
    def is_plain(self) -> bool:
        """True when the output is a decision other than ``block`` with at most its reason,
        nothing else: what most gates answer (``deny(...)``, ``allow()``, no opinion).

        The one test of "plain" every answer path uses: such an output carries nothing a
        handler made that JSON might not carry, and nothing the stop-loop guard must see, so
        it needs no check once :meth:`check` passed. A block, a rewrite, context or any other
        field makes it not plain, and it gets every check."""
        # the six optional fields as one tuple against all-None: one comparison in C rather
        # than six in the interpreter (each is None, a string, a bool or a dict, none of which
        # equals None)
        return (
            self.decision != "block"
            and (
                self.context,
                self.updated_input,
                self.continue_,
                self.stop_reason,
                self.system_message,
                self.suppress_output,
            )
            == _SIX_NONES
            and not self.specific
            and not self.extra
        )

    @property
    def is_empty(self) -> bool:
        """True when the output says nothing: the runtime's "no opinion"."""
        return all(getattr(self, name) is None for name in self.__slots__)

    def check(self, event: str) -> None:
        """Raise :class:`OutputError` if ``event`` cannot carry this output."""
        decision = self.decision
        if decision is not None:
            if decision == "block":
                if event not in BLOCK_EVENTS:
                    hint = " (use deny())" if event in ("PreToolUse", "PermissionRequest") else ""
                    raise OutputError(f"{event} cannot carry a block{hint}")
            elif event == "PreToolUse":
                if decision not in PERMISSION_DECISIONS:
                    raise OutputError(f"{decision!r} is not a PreToolUse permission decision")
            elif event == "PermissionRequest":
                if decision not in ("allow", "deny"):
                    raise OutputError(f"PermissionRequest cannot carry {decision!r}")
            else:
                raise OutputError(f"{event} cannot carry a permission decision ({decision})")
        if self.updated_input is not None and event not in ("PreToolUse", "PermissionRequest"):
            raise OutputError(f"{event} cannot carry updated_input (PreToolUse only)")
        if self.context is not None and event not in CONTEXT_EVENTS:
            raise OutputError(f"{event} cannot carry additional context")

    def render(self, event: str, *, checked: bool = False) -> dict[str, Any]:
        """The exact Claude Code JSON object of this output for ``event``.

        Raises :class:`OutputError` when the event cannot carry it (``checked=True`` when
        :meth:`check` already passed). ``{}`` is "no opinion".
        """
        if not checked:
            self.check(event)
        out: dict[str, Any] = {}
        # the event's own object starts with its name: sent when anything follows it
        specific: dict[str, Any] = {"hookEventName": event}
        decision = self.decision
        if event == "PreToolUse":
            if decision is not None:
                specific["permissionDecision"] = decision
                if self.reason is not None:
                    specific["permissionDecisionReason"] = self.reason
            if self.updated_input is not None:
                specific["updatedInput"] = self.updated_input
        elif event == "PermissionRequest":
            if decision is not None:
                specific["decision"] = self._verdict(decision)
        elif decision == "block":
            out["decision"] = "block"
            if self.reason is not None:
                out["reason"] = self.reason
        if self.context is not None:
            specific["additionalContext"] = cap_context(self.context)
        given = self.specific
        if given:
            _add_given(specific, given)
        if len(specific) > 1 or (given and "hookEventName" in given):
            out["hookSpecificOutput"] = specific
        # the universal fields, in _UNIVERSAL's order, without a loop of getattr calls: this
        # runs on every answer
        if self.continue_ is not None:
            out["continue"] = self.continue_
        if self.stop_reason is not None:
            out["stopReason"] = self.stop_reason
        if self.system_message is not None:
            out["systemMessage"] = self.system_message
        if self.suppress_output is not None:
            out["suppressOutput"] = self.suppress_output
        if self.extra:
            for key, value in self.extra.items():
                out.setdefault(key, value)
        return out

    def _verdict(self, decision: str) -> dict[str, Any]:
        """PermissionRequest's ``hookSpecificOutput.decision`` object."""
        verdict: dict[str, Any] = {"behavior": decision}
        if self.reason is not None:
            verdict["message"] = self.reason
        if self.updated_input is not None:
            verdict["updatedInput"] = self.updated_input
        # updatedPermissions, interrupt: kept next to the verdict by parse_output
        rest = (self.specific or {}).get("decision")
        if isinstance(rest, dict):
            verdict.update((k, v) for k, v in rest.items() if k not in verdict)
        return verdict


def _add_given(specific: dict[str, Any], given: dict[str, Any]) -> None:
    """A handler's own ``hookSpecificOutput`` keys, after the ones the output's fields made."""
    for key, value in given.items():
        if key == "hookEventName":
            specific[key] = value  # a name given replaces the event's, in its place
        else:
            specific.setdefault(key, value)


# -- helpers a handler returns ------------------------------------------------------------


def allow(reason: str | None = None, updated_input: dict[str, Any] | None = None) -> Output:
    """Let the tool call run (PreToolUse, PermissionRequest); optionally rewrite its input.

    ``updated_input`` replaces the whole argument object: include the unchanged fields.
    """
    return Output(decision="allow", reason=reason, updated_input=_input(updated_input))


def deny(reason: str) -> Output:
    """Refuse the tool call; ``reason`` is handed to the model as the tool's error result."""
    # _reason's check inline and the fields by position: a gate calls this on every refusal
    if not isinstance(reason, str) or not reason:
        raise TypeError("a reason must be a non-empty string")
    return Output("deny", reason)


def ask(reason: str | None = None, updated_input: dict[str, Any] | None = None) -> Output:
    """Have the user confirm the tool call (Runbear treats ask as deny)."""
    return Output(decision="ask", reason=reason, updated_input=_input(updated_input))


def rewrite(updated_input: dict[str, Any], reason: str | None = None) -> Output:
    """Allow the tool call with these arguments instead of the model's.

    Spelled ``permissionDecision: "allow"`` + ``updatedInput``, the one form Claude Code and
    Codex both honour. Use ``ask(updated_input=...)`` to rewrite and still have the user confirm.
    """
    if updated_input is None:
        raise TypeError("rewrite() needs the full replacement input object")
    return Output(decision="allow", reason=reason, updated_input=_input(updated_input))


def block(reason: str) -> Output:
    """Block: the prompt (UserPromptSubmit), or send the agent back to work (Stop), or give
    feedback next to a tool result (PostToolUse)."""
    if not isinstance(reason, str) or not reason:  # as in deny()
        raise TypeError("a reason must be a non-empty string")
    return Output("block", reason)


def context(text: str) -> Output:
    """Add context the agent reads next to the event (capped at 10,000 characters)."""
    if not isinstance(text, str):
        raise TypeError("context() takes a string")
    return Output(context=text)


def halt(stop_reason: str | None = None) -> Output:
    """Stop the agent entirely (``continue: false``); ``stop_reason`` is shown to the user."""
    return Output(continue_=False, stop_reason=stop_reason)


def _input(updated_input: dict[str, Any] | None) -> dict[str, Any] | None:
    if updated_input is not None and not isinstance(updated_input, dict):
        raise TypeError("updated_input must be a dict holding the whole tool input")
    return updated_input


# -- reading Claude Code JSON ---------------------------------------------------------------


def parse_output(event: str, data: Any) -> Output:
    """Read a Claude Code JSON output object for ``event`` into an :class:`Output`.

    Accepts the older spellings runtimes still honour (top-level ``decision: "approve"`` /
    ``"block"`` on PreToolUse). Unknown keys are kept and passed through. Raises
    :class:`OutputError` for a value of the wrong type, a ``hookEventName`` naming another
    event, or a permission decision that does not exist.
    """
    if not isinstance(data, dict):
        raise OutputError("output must be a JSON object")
    out = Output()
    extra: dict[str, Any] = {}
    for key, value in data.items():
        if key in _UNIVERSAL:
            expected = bool if key in ("continue", "suppressOutput") else str
            setattr(out, _UNIVERSAL[key], _typed(key, value, expected))
        elif key not in ("decision", "reason", "hookSpecificOutput"):
            extra[key] = value
    _read_decision(out, event, data, extra)
    out.extra = extra or None
    hso = data.get("hookSpecificOutput")
    if hso is None:
        return out
    if not isinstance(hso, dict):
        raise OutputError("hookSpecificOutput must be an object")
    name = hso.get("hookEventName")
    if name is not None and name != event:
        raise OutputError(f"hookSpecificOutput.hookEventName is {name!r}, expected {event!r}")
    specific: dict[str, Any] = {}
    for key, value in hso.items():
        if key == "hookEventName":
            continue
        if event == "PermissionRequest" and key == "decision" and value is not None:
            rest = _read_verdict(out, value)
            if rest:
                specific["decision"] = rest
        elif not _read_specific(out, event, key, value):
            specific[key] = value
    out.specific = specific or None
    return out


def _read_decision(out: Output, event: str, data: dict[str, Any], extra: dict[str, Any]) -> None:
    """The top-level ``decision`` and ``reason`` into ``out`` (a reason without a decision
    into ``extra``)."""
    top_decision = _typed("decision", data.get("decision"), str)
    top_reason = _typed("reason", data.get("reason"), str)
    if top_decision is None:
        if top_reason is not None:
            extra["reason"] = top_reason
        return
    if event in ("PreToolUse", "PermissionRequest"):
        legacy = {"approve": "allow", "block": "deny", "allow": "allow", "deny": "deny"}
        if top_decision not in legacy:
            raise OutputError(f"unknown decision {top_decision!r}")
        out.decision, out.reason = legacy[top_decision], top_reason
    elif top_decision == "block":
        out.decision, out.reason = "block", top_reason
    elif top_decision != "approve":  # "approve" is an old no-op spelling elsewhere
        raise OutputError(f"unknown decision {top_decision!r}")


def _read_specific(out: Output, event: str, key: str, value: Any) -> bool:
    """One ``hookSpecificOutput`` key into ``out``: False when it is not a field of
    :class:`Output` (kept as it is in ``specific``). PermissionRequest's ``decision`` object
    is read by :func:`_read_verdict`."""
    if key == "additionalContext":
        out.context = _typed(key, value, str)
    elif event != "PreToolUse":
        return False
    elif key == "permissionDecision":
        if value is not None and value not in PERMISSION_DECISIONS:
            raise OutputError(f"permissionDecision {value!r} is not one of allow/deny/ask/defer")
        if value is not None:
            out.decision = value
    elif key == "permissionDecisionReason":
        out.reason = _typed(key, value, str)
    elif key == "updatedInput":
        out.updated_input = _typed(key, value, dict)
    else:
        return False
    return True


def _read_verdict(out: Output, value: Any) -> dict[str, Any]:
    """PermissionRequest's ``hookSpecificOutput.decision`` into ``out``: the rest of its keys
    (``updatedPermissions``, ``interrupt``...), kept next to the verdict."""
    if not isinstance(value, dict):
        # passed through, the runtime would find no behavior in it and ask the user: the
        # handler's verdict lost without a word
        raise OutputError(
            'hookSpecificOutput.decision must be an object: {"behavior": "allow"} or '
            '{"behavior": "deny", "message": ...}'
        )
    behavior = value.get("behavior")
    if behavior not in ("allow", "deny"):
        raise OutputError(f"decision.behavior {behavior!r} is not allow or deny")
    out.decision = behavior
    out.reason = _typed("decision.message", value.get("message"), str)
    out.updated_input = _typed("decision.updatedInput", value.get("updatedInput"), dict)
    return {k: v for k, v in value.items() if k not in ("behavior", "message", "updatedInput")}


def _typed(key: str, value: Any, expected: type) -> Any:
    if value is None or isinstance(value, expected):
        if expected is str and isinstance(value, bool):
            raise OutputError(f"{key} must be a string")
        return value
    raise OutputError(f"{key} must be {'an object' if expected is dict else expected.__name__}")


def parse_handler_output(event: str, data: dict[str, Any]) -> Output:
    """Read a handler's own Claude Code JSON for ``event``, strictly.

    Every key is checked against the event's output schema first (the top-level fields, the
    ``hookSpecificOutput`` fields the event carries): an unknown or misplaced key raises
    :class:`OutputError` naming it. Then the answer must be one the event can carry. Events
    handler-kit does not know are not checked: their schema is the runtime's.
    """
    if event in _KNOWN_EVENTS:
        check_output_fields(event, data)
    out = parse_output(event, data)
    out.check(event)
    return out


def check_output_fields(event: str, data: dict[str, Any]) -> None:
    """Raise :class:`OutputError` for the first key of ``data`` that ``event``'s output schema
    does not have, saying where it belongs when it belongs elsewhere."""
    specific = SPECIFIC_FIELDS.get(event, frozenset())
    places = {
        **dict.fromkeys(specific, "hookSpecificOutput."),
        **dict.fromkeys(TOP_LEVEL_FIELDS, ""),
    }
    for key in data:
        if key in TOP_LEVEL_FIELDS:
            continue
        if key in specific:
            raise OutputError(f"{key!r} belongs in hookSpecificOutput, not at the top level")
        raise OutputError(
            f"unknown top-level field {key!r}{_hint(key, places)}; "
            f"the top level has {', '.join(sorted(TOP_LEVEL_FIELDS))}"
        )
    hso = data.get("hookSpecificOutput")
    if not isinstance(hso, dict):
        return  # parse_output says what is wrong with a value that is not an object
    for key in hso:
        if key == "hookEventName" or key in specific:
            continue
        if key in TOP_LEVEL_FIELDS:
            raise OutputError(f"hookSpecificOutput.{key} belongs at the top level")
        raise OutputError(
            f"{event}'s hookSpecificOutput has no field {key!r}{_hint(key, places)}; it has "
            f"{', '.join(['hookEventName', *sorted(specific)])}"
        )
    verdict = hso.get("decision")
    if event == "PermissionRequest" and isinstance(verdict, dict):
        for key in verdict:
            if key not in PERMISSION_VERDICT_FIELDS:
                fields = dict.fromkeys(PERMISSION_VERDICT_FIELDS, "")
                raise OutputError(
                    f"hookSpecificOutput.decision has no field {key!r}"
                    f"{_did_you_mean(key, fields)}; it has "
                    f"{', '.join(sorted(PERMISSION_VERDICT_FIELDS))}"
                )


def _hint(key: str, places: dict[str, str]) -> str:
    if key in _EVERY_SPECIFIC_FIELD:
        return " (a hookSpecificOutput field of other events)"
    return _did_you_mean(key, places)


def _did_you_mean(key: str, places: dict[str, str]) -> str:
    """`` (did you mean 'x'?)`` for a known field close to ``key`` ({field: its prefix})."""
    import difflib  # only on the way to an error

    close = difflib.get_close_matches(key, sorted(places), n=1)
    return f" (did you mean {places[close[0]] + close[0]!r}?)" if close else ""


def normalize(event: str, value: Any) -> Output:
    """Turn a handler's return value into an :class:`Output` its event can carry.

    ``None`` is no opinion; a ``str`` is additional context; an :class:`Output` is checked; a
    ``dict`` is read as Claude Code JSON. Anything else raises :class:`OutputError`.
    """
    if value is None:
        return _EMPTY
    if isinstance(value, Output):
        value.check(event)
        return value
    if isinstance(value, str):
        out = Output(context=value) if value else _EMPTY
        out.check(event)
        return out
    if isinstance(value, dict):
        return parse_handler_output(event, value)
    raise OutputError(
        f"a handler returns None, a str, a helper's output or a dict, not {type(value).__name__}"
    )


_EMPTY = Output()
