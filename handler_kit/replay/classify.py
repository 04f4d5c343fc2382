"""How a replayed answer differs from the recorded one: a verdict and the differences, field
by field.

Decisions are ranked by how much they let through: ``allow`` (the call runs without asking),
then no opinion (``none``, ``defer``: the runtime's own rules apply), then ``ask``, then
``deny``, ``block`` and ``halt``. A candidate whose decision ranks higher *tightened* the
decision, lower *loosened* it; the same rank with any other difference in the answer (the
reason, the context, a rewrite of the input, the system message) is *changed*. An answer that
failed (no handler could answer: HTTP 500) ranks as no opinion, which is what a runtime makes
of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from handler_kit.ops.audit.records import output_decision

Verdict = Literal["unchanged", "tightened", "loosened", "changed"]
VERDICTS: tuple[Verdict, ...] = ("unchanged", "tightened", "loosened", "changed")
RANK: dict[str, int] = {
    "allow": 0,
    "none": 1,
    "defer": 1,
    "ask": 2,
    "deny": 3,
    "block": 3,
    "halt": 3,
}
_SPECIFIC_FIELDS = {
    "hookEventName",
    "permissionDecision",
    "permissionDecisionReason",
    "additionalContext",
    "updatedInput",
    "decision",
}
_TOP_FIELDS = {
    "hookSpecificOutput",
    "decision",
    "reason",
    "continue",
    "stopReason",
    "systemMessage",
}


@dataclass(frozen=True)
class Difference:
    """One field of the answer that the candidate answers otherwise."""

    field: str
    was: str
    now: str

    def __str__(self) -> str:
        return f"{self.field}: was {self.was}, now {self.now}"

    def as_json(self) -> dict[str, str]:
        return {"field": self.field, "was": self.was, "now": self.now}


@dataclass(frozen=True)
class Aspects:
    """The parts of an answer a policy owner reads."""

    decision: str
    reason: str | None
    context: str | None
    updated_input: Any
    system_message: str | None
    rest: dict[str, Any]


def aspects(output: dict[str, Any] | None, *, failed: bool = False) -> Aspects:
    output = output or {}
    decision, reason = output_decision(output)
    specific = output.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    updated = specific.get("updatedInput")
    verdict = specific.get("decision")
    if updated is None and isinstance(verdict, dict):
        updated = verdict.get("updatedInput")
    rest = {k: v for k, v in output.items() if k not in _TOP_FIELDS}
    rest.update(
        {f"hookSpecificOutput.{k}": v for k, v in specific.items() if k not in _SPECIFIC_FIELDS}
    )
    if failed:
        rest["failed"] = True
    context = specific.get("additionalContext")
    message = output.get("systemMessage")
    return Aspects(
        decision=str(decision) if decision is not None else "none",
        reason=reason if isinstance(reason, str) else None,
        context=context if isinstance(context, str) else None,
        updated_input=updated,
        system_message=message if isinstance(message, str) else None,
        rest=rest,
    )


def handler_aspects(
    decision: str | None,
    reason: str | None,
    output: dict[str, Any] | None,
    status: str | None,
    error: str | None,
) -> Aspects:
    """One handler's part: its decision and reason as recorded (a fail-closed handler's is
    the safe decision it failed to, with no output), its output, and how it failed."""
    found = aspects(output)
    rest = dict(found.rest)
    if status not in (None, "ok"):
        rest["status"] = status
        rest["error"] = error
    return Aspects(
        decision=decision or "none",
        reason=reason,
        context=found.context,
        updated_input=found.updated_input,
        system_message=found.system_message,
        rest=rest,
    )


def compare(
    was: dict[str, Any] | None,
    now: dict[str, Any] | None,
    *,
    was_failed: bool = False,
    now_failed: bool = False,
) -> tuple[Verdict, list[Difference]]:
    """The verdict on ``now`` (the candidate's answer) against ``was`` (the recorded one),
    and every difference, in the order a reader checks them."""
    return compare_aspects(aspects(was, failed=was_failed), aspects(now, failed=now_failed))


def compare_aspects(old: Aspects, new: Aspects) -> tuple[Verdict, list[Difference]]:
    """:func:`compare`, of answers already read."""
    differences: list[Difference] = []
    if old.decision != new.decision:
        differences.append(Difference("decision", old.decision, new.decision))
    for name, a, b in (
        ("reason", old.reason, new.reason),
        ("context", old.context, new.context),
        ("system_message", old.system_message, new.system_message),
    ):
        if a != b:
            differences.append(Difference(name, *texts(a, b)))
    if old.updated_input != new.updated_input:
        differences.append(
            Difference("updated_input", as_json(old.updated_input), as_json(new.updated_input))
        )
    for key in sorted(set(old.rest) | set(new.rest)):
        if old.rest.get(key) != new.rest.get(key):
            differences.append(
                Difference(key, as_json(old.rest.get(key)), as_json(new.rest.get(key)))
            )
    old_rank, new_rank = RANK.get(old.decision, 1), RANK.get(new.decision, 1)
    if new_rank > old_rank:
        return "tightened", differences
    if new_rank < old_rank:
        return "loosened", differences
    return ("changed" if differences else "unchanged"), differences


# How much of a long text is shown before the first character that differs
LEAD = 24


def texts(a: str | None, b: str | None) -> tuple[str, str]:
    """Two texts as a difference shows them: quoted, and when both are long and begin alike,
    from a little before the first character that differs (the start elided as ``...``)."""
    if a is None or b is None or len(a) + len(b) < 160:
        return text(a), text(b)
    same = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        same += 1
    cut = max(same - LEAD, 0)
    if cut < 10:
        return text(a), text(b)
    return "..." + text(a[cut:]), "..." + text(b[cut:])


def text(value: str | None) -> str:
    if value is None:
        return "none"
    shown = value if len(value) <= 300 else value[:300] + "..."
    return json.dumps(shown, ensure_ascii=False)


def as_json(value: Any) -> str:
    if value is None:
        return "none"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
