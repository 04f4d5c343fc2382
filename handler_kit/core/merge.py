"""Combining several handlers' answers to one event, by the runtime's rules.

One implementation serves both sides: a :class:`~handler_kit.core.app.HookApp` merges the answers
of its own handlers into one response (``dialect="claude"``, Claude Code's rules, which keep
``ask`` and ``defer``), and the reference dispatcher merges the answers of a hooks document's
handlers exactly as Runbear does (``dialect="runbear"``).

The rules, in document (registration) order:

- every additionalContext is kept, each capped at 10,000 characters (Runbear injects it only
  on SessionStart, UserPromptSubmit and PostToolUse);
- PreToolUse: the strictest decision wins (deny > defer > ask > allow; Runbear: defer is
  ignored and a winning ask is then treated as deny), with the first reason given for it; a
  failed fail-closed handler counts as deny at its own position with a generic notice;
  updatedInput comes from the last handler that set one and is dropped when the call is denied;
- events with a top-level decision: one block blocks, the first blocking reason is given; a
  failed fail-closed UserPromptSubmit handler blocks with the notice;
- ``continue: false`` from any handler halts (first stopReason); other keys: first setter wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from handler_kit.core.outputs import BLOCK_EVENTS, SAFE_DECISIONS, Output, cap_context

Dialect = Literal["claude", "runbear"]

RUNBEAR_FAIL_CLOSED_NOTICE = (
    "A policy check configured by your organization did not allow this request."
)
RUNBEAR_CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PostToolUse"})
_SEVERITY = {"allow": 1, "ask": 2, "defer": 3, "deny": 4}


# Failure and Merged are plain slotted classes, written out rather than made by
# ``dataclasses`` (whose generated methods are compiled at import, in every command hook's
# start-up), with what the dataclasses had: constructor, repr, equality, ``__match_args__``.


class Failure:
    """A handler that failed (raised, timed out, answered something unreadable)."""

    __slots__ = ("fail_closed", "notice")
    __match_args__ = ("fail_closed", "notice")

    fail_closed: bool
    notice: str | None

    def __init__(self, fail_closed: bool = False, notice: str | None = None) -> None:
        self.fail_closed = fail_closed
        self.notice = notice

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(fail_closed={self.fail_closed!r}, notice={self.notice!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Failure) or other.__class__ is not self.__class__:
            return NotImplemented
        return (self.fail_closed, self.notice) == (other.fail_closed, other.notice)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value


class Merged:
    """The combined answer to one event."""

    __match_args__ = (
        "event",
        "decision",
        "reason",
        "contexts",
        "updated_input",
        "continue_",
        "stop_reason",
        "system_messages",
        "suppress_output",
        "specific",
        "extra",
    )
    __slots__ = __match_args__

    event: str
    decision: str | None
    reason: str | None
    contexts: list[str]
    updated_input: dict[str, Any] | None
    continue_: bool | None
    stop_reason: str | None
    system_messages: list[str]
    suppress_output: bool | None
    specific: dict[str, Any]
    extra: dict[str, Any]

    def __init__(
        self,
        event: str,
        decision: str | None = None,
        reason: str | None = None,
        contexts: list[str] | None = None,
        updated_input: dict[str, Any] | None = None,
        continue_: bool | None = None,
        stop_reason: str | None = None,
        system_messages: list[str] | None = None,
        suppress_output: bool | None = None,
        specific: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.event = event
        self.decision = decision
        self.reason = reason
        self.contexts = [] if contexts is None else contexts
        self.updated_input = updated_input
        self.continue_ = continue_
        self.stop_reason = stop_reason
        self.system_messages = [] if system_messages is None else system_messages
        self.suppress_output = suppress_output
        self.specific = {} if specific is None else specific
        self.extra = {} if extra is None else extra

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Merged) or other.__class__ is not self.__class__:
            return NotImplemented
        fields = self.__match_args__
        return tuple(getattr(self, name) for name in fields) == tuple(
            getattr(other, name) for name in fields
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def to_output(self) -> Output:
        """One :class:`Output` carrying the merged answer (contexts joined by blank lines)."""
        return Output(
            decision=self.decision,
            reason=self.reason,
            context="\n\n".join(self.contexts) if self.contexts else None,
            updated_input=self.updated_input,
            continue_=self.continue_,
            stop_reason=self.stop_reason,
            system_message="\n".join(self.system_messages) if self.system_messages else None,
            suppress_output=self.suppress_output,
            specific=self.specific or None,
            extra=self.extra or None,
        )


def merge(
    event: str,
    results: Sequence[Output | Failure | None],
    *,
    dialect: Dialect = "claude",
    fail_closed_notice: str = RUNBEAR_FAIL_CLOSED_NOTICE,
) -> Merged:
    """Merge handler results given in document/registration order.

    ``None`` is a handler that gave no opinion (or was skipped). A :class:`Failure` is ignored
    unless fail-closed, in which case it counts as the event's safe decision at its position.
    """
    runbear = dialect == "runbear"
    merged = Merged(event=event)
    decisions: list[tuple[str, str | None]] = []  # (decision, reason) in order
    for result in results:
        if result is None:
            continue
        if isinstance(result, Failure):
            safe = SAFE_DECISIONS.get(event)
            if result.fail_closed and safe is not None:
                decisions.append((safe, result.notice or fail_closed_notice))
            continue
        decision = result.decision
        if decision is not None:
            decision = _effective_decision(event, decision, runbear)
            if decision is not None:
                decisions.append((decision, result.reason))
        _take(merged, result, runbear)
    if decisions:
        _decide(merged, decisions, runbear)
    if merged.decision == "deny":
        merged.updated_input = None
    return merged


def _take(merged: Merged, result: Output, runbear: bool) -> None:
    """Add to ``merged`` everything of ``result`` but its decision."""
    event = merged.event
    if result.updated_input is not None and event in ("PreToolUse", "PermissionRequest"):
        merged.updated_input = result.updated_input
    if result.context and (not runbear or event in RUNBEAR_CONTEXT_EVENTS):
        merged.contexts.append(cap_context(result.context))
    if result.continue_ is False:
        merged.continue_ = False
        if merged.stop_reason is None:
            merged.stop_reason = result.stop_reason
    elif result.continue_ is True and merged.continue_ is None:
        merged.continue_ = True
    if result.system_message:
        merged.system_messages.append(result.system_message)
    if result.suppress_output is not None:
        merged.suppress_output = bool(merged.suppress_output) or result.suppress_output
    for target, source in ((merged.specific, result.specific), (merged.extra, result.extra)):
        if source:
            for key, value in source.items():
                target.setdefault(key, value)


def _decide(merged: Merged, decisions: list[tuple[str, str | None]], runbear: bool) -> None:
    """The winning decision of ``decisions`` (in order) and its reason, into ``merged``."""
    winner = max(decisions, key=lambda item: _SEVERITY.get(item[0], 5))[0]
    merged.decision = winner
    if runbear and winner == "block":
        # Runbear: "the first blocking handler in document order supplies the reason".
        merged.reason = next(r for d, r in decisions if d == winner)
    else:
        merged.reason = next((r for d, r in decisions if d == winner and r is not None), None)
    if runbear and winner == "ask":
        merged.decision = "deny"  # ranked as ask (deny over ask), then treated as deny


def _effective_decision(event: str, decision: str, runbear: bool) -> str | None:
    """The decision as this event and dialect read it; None when it is ignored."""
    if event in ("PreToolUse", "PermissionRequest"):
        if not runbear:
            return decision
        return decision if decision in ("allow", "deny", "ask") else None  # defer ignored
    if decision == "block" and event in BLOCK_EVENTS:
        return "block"
    return None
