"""Reading audit records of either schema version as decisions.

Schema version 2 writes one record per decision (``kind: "decision"``, its handlers nested)
and ``kind: "shadow"`` records linked to one by ``decision_id``. Version 1 wrote one
``invocation`` record per handler and one ``answer`` record, linked by the invocations'
``answer_id``; a store or a JSON lines file written during a rolling upgrade holds both.
Readers (the stores' query APIs, the inspector, replay) see a version-1 answer as a decision:
:func:`decision_of_v1` puts its invocation records in its ``handlers``, shaped as version 2's,
and says its input is not complete (version 1 never recorded the whole input).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

__all__ = [
    "DECISION_KINDS",
    "V1_ANSWER",
    "V1_INVOCATION",
    "decision_of_v1",
    "decisions",
    "handler_of_v1",
    "is_decision",
]

V1_ANSWER = "answer"
V1_INVOCATION = "invocation"
# the kinds of record that are decisions, whatever their version
DECISION_KINDS = ("decision", V1_ANSWER)


def is_decision(record: dict[str, Any]) -> bool:
    return record.get("kind") in DECISION_KINDS


def handler_of_v1(invocation: dict[str, Any]) -> dict[str, Any]:
    """A version-1 invocation record as a version-2 decision's handler entry."""
    return {
        "name": invocation.get("handler"),
        "status": invocation.get("status"),
        "decision": invocation.get("decision"),
        "reason": invocation.get("reason"),
        "error": invocation.get("error"),
        "latency_ms": invocation.get("latency_ms"),
        "replayed": invocation.get("replayed", False),
        "idempotency_key": invocation.get("idempotency_key"),
        "output": invocation.get("output"),
    }


def decision_of_v1(answer: dict[str, Any], invocations: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A version-1 answer record and its invocation records as one decision (its
    ``schema_version`` stays 1: what was written). Handlers with no invocation record (a
    record lost, a store trimmed) keep their name and nothing else."""
    found = {inv.get("handler"): inv for inv in invocations}
    names = answer.get("handlers") or list(found)
    handlers = [
        handler_of_v1(found[name]) if name in found else {"name": name}
        for name in names
        if isinstance(name, str)
    ]
    decision = dict(answer)
    decision.pop("handler", None)
    decision["decision_id"] = None
    decision["handlers"] = handlers
    decision["input_digest"] = None
    decision["input_complete"] = False
    return decision


def decisions(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The decisions and shadow records of a stream of records in write order (a JSON lines
    file): version-2 records as they are; each version-1 answer, which follows its
    invocations, with them as its handlers."""
    pending: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        kind = record.get("kind")
        if kind == V1_INVOCATION:
            answer_id = record.get("answer_id")
            if isinstance(answer_id, str):
                pending.setdefault(answer_id, []).append(record)
        elif kind == V1_ANSWER:
            yield decision_of_v1(record, pending.pop(str(record.get("event_id")), []))
        else:
            yield record
