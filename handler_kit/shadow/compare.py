"""Whether a candidate's answer agrees with the enforced one, compared as a decision.

Two answers agree when they would have told the runtime the same thing: the same output (its
decision, reason, context, rewritten input, everything the runtime reads) and both answered
or both failed. Each handler is compared the same way, paired by name: what it decided, why,
what it output, and whether it failed; a handler only one app has is compared with "no
opinion". Latency and error texts are not compared: they say how, not what.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from handler_kit.core.names import Status
from handler_kit.core.vocabulary import Answer, Invocation
from handler_kit.ops.audit.capture import invocation_decision

__all__ = ["answers_agree", "handler_agreements"]

_ANSWERED = (Status.OK, Status.LOOP_GUARDED)
_NO_OPINION: tuple[Any, ...] = (None, None, None, False)


def answers_agree(enforced: Answer, candidate: Answer) -> bool:
    """True when ``candidate`` would have sent what ``enforced`` sent."""
    return enforced.failed == candidate.failed and enforced.output == candidate.output


def handler_agreements(
    event_name: str, enforced: Sequence[Invocation], candidate: Sequence[Invocation]
) -> list[tuple[str, bool]]:
    """``(handler name, agrees)`` for every handler of either answer: the enforced app's in
    their order, then those only the candidate has."""
    mine = {inv.handler.name: _view(inv, event_name) for inv in enforced}
    theirs = {inv.handler.name: _view(inv, event_name) for inv in candidate}
    names = [*mine, *(name for name in theirs if name not in mine)]
    return [(name, mine.get(name, _NO_OPINION) == theirs.get(name, _NO_OPINION)) for name in names]


def _view(inv: Invocation, event_name: str) -> tuple[Any, ...]:
    decision, reason = invocation_decision(inv, event_name)
    output = inv.output.render(event_name) if inv.output is not None else None
    return (decision, reason, output, inv.status not in _ANSWERED)
