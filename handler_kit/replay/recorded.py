"""Recorded decisions as replay reads them, from either version of the audit record.

- Version 2: one ``decision`` record per answer, its handlers nested, and ``input_complete``
  saying whether the whole hook input was recorded (``HANDLER_KIT_AUDIT_INPUT=full``) with
  nothing in it redacted or truncated.
- Version 1: an ``answer`` record, and one ``invocation`` record per handler linked to it by
  ``answer_id``. A version-1 record keeps only the identifiers and ``tool_input`` (the prompt
  texts with ``HANDLER_KIT_AUDIT_TEXT``), so its input is never complete.

A decision whose input is not complete is never replayed: a handler may read the very field
that was not recorded, and answering a part of the input would be a guess. It is reported
apart, with why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from handler_kit.ops.audit.reading import DECISION_KINDS, V1_ANSWER, decision_of_v1
from handler_kit.ops.audit.records import REDACTED, TOO_DEEP

__all__ = ["DECISION_KINDS", "RecordedDecision", "RecordedHandler", "from_record", "is_decision"]
# What the redactor writes in place of a long string's end
TRUNCATED_MARK = "...[truncated "


@dataclass(frozen=True)
class RecordedHandler:
    """What one handler contributed to a recorded decision."""

    name: str
    status: str | None = None
    decision: str | None = None
    reason: str | None = None
    error: str | None = None
    output: dict[str, Any] | None = None


@dataclass(frozen=True)
class RecordedDecision:
    """One decision of the log: the input it was made on (None when nothing usable was
    recorded), what was answered, and the handlers that took part.

    ``incomplete``: why the input cannot be replayed (None when it can).
    """

    event_id: str
    time: str
    ts: float
    app: str | None
    event: str
    tool_name: str | None
    input: dict[str, Any] | None
    output: dict[str, Any]
    failed: bool
    handlers: tuple[RecordedHandler, ...]
    schema_version: int
    incomplete: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def handler_names(self) -> tuple[str, ...]:
        return tuple(h.name for h in self.handlers)


def is_decision(record: Mapping[str, Any]) -> bool:
    return record.get("kind") in DECISION_KINDS


def from_record(
    record: Mapping[str, Any], invocations: Iterable[Mapping[str, Any]] = ()
) -> RecordedDecision:
    """A decision from a version-2 ``decision`` record, or from a version-1 ``answer`` record
    and its ``invocation`` records (read as the audit trail's readers read it: one decision,
    its invocations as its handlers)."""
    if record.get("kind") == V1_ANSWER and not _nested(record):
        record = decision_of_v1(dict(record), [dict(inv) for inv in invocations])
    version = record.get("schema_version") or 1
    handlers = tuple(_handler(h) for h in record.get("handlers") or () if isinstance(h, dict))
    recorded_input = record.get("input")
    if version < 2:
        incomplete: str | None = (
            "a version-1 record keeps only the identifiers and tool_input of the input "
            "(record the whole input with HANDLER_KIT_AUDIT_INPUT=full)"
        )
    else:
        incomplete = _why_incomplete_v2(record, recorded_input)
    event = str(record.get("event") or "")
    hook_input: dict[str, Any] | None = None
    if isinstance(recorded_input, dict):
        hook_input = dict(recorded_input)
        hook_input.setdefault("hook_event_name", event)
    output = record.get("output")
    return RecordedDecision(
        event_id=str(record.get("event_id") or ""),
        time=str(record.get("time") or ""),
        ts=float(record.get("ts") or 0.0),
        app=record.get("app"),
        event=event,
        tool_name=record.get("tool_name"),
        input=hook_input,
        output=output if isinstance(output, dict) else {},
        failed=bool(record.get("failed")),
        handlers=handlers,
        schema_version=int(version),
        incomplete=incomplete,
    )


def _nested(record: Mapping[str, Any]) -> bool:
    """Whether a version-1 answer was already read as a decision (its handlers nested)."""
    handlers = record.get("handlers")
    return (
        isinstance(handlers, list) and bool(handlers) and all(isinstance(h, dict) for h in handlers)
    )


def _handler(data: Mapping[str, Any]) -> RecordedHandler:
    output = data.get("output")
    return RecordedHandler(
        name=str(data.get("name") or ""),
        status=data.get("status"),
        decision=data.get("decision"),
        reason=data.get("reason"),
        error=data.get("error"),
        output=output if isinstance(output, dict) else None,
    )


def _why_incomplete_v2(record: Mapping[str, Any], recorded_input: Any) -> str | None:
    if not isinstance(recorded_input, dict):
        return "the record holds no input"
    # The writer's word is checked against the text too: a marker anywhere means a value is
    # not the one the handler saw.
    marker = altered(recorded_input)
    if marker is not None:
        return marker
    if record.get("input_complete") is not True:
        return (
            "the record does not hold the whole input (record it with "
            "HANDLER_KIT_AUDIT_INPUT=full), or something in it was redacted or truncated"
        )
    return None


def altered(value: Any) -> str | None:
    """Why ``value`` (a recorded input) is not what was sent: a redacted, truncated or
    cut value inside it; None when no marker is found."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if REDACTED in item:
                return "a value of the input was redacted"
            if TRUNCATED_MARK in item:
                return "a value of the input was truncated"
            if item == TOO_DEEP:
                return "a value of the input was nested too deeply to record"
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None
