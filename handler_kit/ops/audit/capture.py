"""What an answer hands the audit trail and the metrics: :class:`Observed` (references, taken
on the answer path) and :func:`capture` (its plain values, what the records are built from).

What travels with an answer is all there is to know of it: whether an idempotent handler's
answer was replayed is the type of its output
(:class:`~handler_kit.ops.idempotency.ReplayedOutput`), and a durable
answer's acknowledgement is a field of its :class:`Observed`. Nothing is looked up on the side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from handler_kit.core.events import model_for
from handler_kit.core.outputs import SAFE_DECISIONS
from handler_kit.core.vocabulary import Status, fail_closed_notice
from handler_kit.ops.audit.records import (
    Capture,
    RecordPolicy,
    new_event_id,
    records,
    worst_status,
)
from handler_kit.ops.idempotency import ReplayedOutput
from handler_kit.ops.keys import input_json

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Sequence
    from typing import TypeAlias

    from handler_kit.core.events import HookEvent
    from handler_kit.core.vocabulary import Answer, Invocation

    # What :meth:`AuditTrail.submit <handler_kit.ops.audit.trail.AuditTrail.submit>` returns
    # in durable mode: a future the writer resolves (True once committed), or the outcome
    # itself when it is known at once (a command hook's synchronous write, a closed trail, a
    # full queue).
    Ack: TypeAlias = asyncio.Future[bool] | bool

__all__ = [
    "DECISION_ID",
    "Observed",
    "TraceIds",
    "answer_status",
    "build_records",
    "capture",
    "capture_shadow",
    "deadline_left",
    "handler_values",
    "invocation_decision",
]

# A status as it is recorded: its text (a plain string pickles and serializes without a call
# into the enum's Python code).
_STATUS_TEXT: dict[Any, str] = {status: status.value for status in Status}
# read per handler of every answer: a global's read, not the enum metaclass's lookup
_FAIL_CLOSED = Status.FAIL_CLOSED

# The key under which the observer leaves the decision id in the context every observer and
# committer of the answer is handed: what code running after the answer (a shadow candidate)
# names the decision by.
DECISION_ID = "handler_kit.decision_id"


@dataclass(slots=True)
class TraceIds:
    """Ids an OpenTelemetry tracer gave the answer's spans, so records and spans agree."""

    trace_id: str
    answer_span_id: str
    parent_span_id: str | None
    span_ids: list[str]
    answer_event_id: str
    event_ids: list[str]


@dataclass(slots=True)
class Observed:
    """One answer as the observer saw it (references only: the hot path copies nothing)."""

    answer: Answer
    transport: str
    principal: str | None
    traceparent: str | None
    end_ns: int
    pid: int
    trace: TraceIds | None = None
    # durable mode: what the trail answered for the commit of this answer's record (set by
    # AuditTrail.submit; the committer awaits it)
    ack: Ack | None = None
    # the decision's id, assigned when the answer is observed (its record's event_id)
    decision_id: str = field(default_factory=new_event_id)
    # the input as received, when the transport had it (the webhook's body)
    body: bytes | None = None
    # whether the event is ``body`` validated by its event's model (the webhook's answers to
    # inputs it read): the writer derives the input's text from the body
    event_from_body: bool = False


def invocation_decision(inv: Invocation, event_name: str) -> tuple[str | None, str | None]:
    """What one handler contributed: its own decision, or the safe one it failed closed to."""
    if inv.status is _FAIL_CLOSED:
        return SAFE_DECISIONS.get(event_name), fail_closed_notice(inv)
    out = inv.output
    if out is None:
        return None, None
    if out.decision is not None:
        return out.decision, out.reason
    if out.continue_ is False:
        return "halt", out.stop_reason
    return None, None


def deadline_left(answer: Answer) -> float:
    """Seconds left of the answer's handler deadlines: how much longer its caller waits."""
    return max(
        (inv.handler.deadline - inv.latency_ms / 1000 for inv in answer.invocations), default=0.0
    )


def answer_status(answer: Answer) -> str:
    """The answer's status: the most severe of its invocations' (fail_closed first)."""
    return worst_status(inv.status for inv in answer.invocations)


def capture(item: Observed | Capture) -> Capture:
    """The plain values of one observed answer (what :func:`records` needs): strings,
    numbers, tuples and the rendered output, which pickle without a call back into Python
    (a status goes as its text, not as the enum). A plain tuple of the :class:`Capture`
    fields, as the writer process is sent it (a NamedTuple pickles through a Python call); a
    record captured already (a shadow's) is its own fields."""
    if type(item) is not Observed:
        return tuple(item)  # type: ignore[arg-type, return-value]
    answer = item.answer
    event = answer.event
    name = event.hook_event_name
    trace = item.trace
    decision_id = item.decision_id
    body = item.body
    return (  # type: ignore[return-value]
        decision_id,
        decision_id,
        item.end_ns,
        item.transport,
        item.principal,
        item.traceparent,
        item.pid,
        name,
        # the webhook's input: the writer derives its text from the body (keys.body_input)
        None
        if item.event_from_body and body is not None and type(event) is model_for(name)
        else input_json(event),
        body,
        answer.output,
        answer.failed,
        handler_values(answer.invocations, name, answer.output),
        None if trace is None else (trace.trace_id, trace.answer_span_id, trace.parent_span_id),
        "decision",
        None,
        None,
    )


def handler_values(
    invocations: Sequence[Invocation], event_name: str, output: dict[str, Any]
) -> tuple[tuple[Any, ...], ...]:
    """The plain values of each handler's part in an answer (see :class:`Capture`);
    ``output`` is the answer's, which is the one handler's when only one took part."""
    single = len(invocations) == 1
    values = []
    for inv in invocations:
        decision, reason = invocation_decision(inv, event_name)
        out = inv.output
        if out is None:
            rendered = None
        elif single:
            rendered = output  # the answer is this handler's output, rendered once
        else:
            rendered = out.render(event_name)
        status = inv.status
        values.append(
            (
                inv.handler.name,
                _STATUS_TEXT.get(status, status),
                decision,
                reason,
                inv.error,
                inv.latency_ms,
                rendered,
                type(out) is ReplayedOutput,
            )
        )
    return tuple(values)


def capture_shadow(
    decision_id: str,
    app: str,
    event: HookEvent | None,
    event_name: str,
    output: dict[str, Any],
    failed: bool,
    invocations: Sequence[Invocation] | Sequence[tuple[Any, ...]],
    end_ns: int,
    *,
    agrees: bool,
    transport: str,
    principal: str | None,
    pid: int,
) -> Capture:
    """The plain values of a shadow candidate's answer to the decision ``decision_id``;
    ``invocations`` may be its handlers' values already (:func:`handler_values`' tuples: a
    candidate answering in another process sends those)."""
    # the identifiers and idempotency keys come from the input as the decision's do; its
    # input itself is the decision's, recorded there
    input_text = input_json(event) if event is not None else "{}"
    return Capture(
        new_event_id(),
        decision_id,
        end_ns,
        transport,
        principal,
        None,
        pid,
        event_name,
        input_text,
        None,
        output,
        failed,
        tuple(invocations)  # type: ignore[arg-type]
        if invocations and isinstance(invocations[0], tuple)
        else handler_values(invocations, event_name, output),  # type: ignore[arg-type]
        None,
        "shadow",
        app,
        agrees,
    )


def build_records(item: Observed, app: str, policy: RecordPolicy) -> list[dict[str, Any]]:
    """The record of one observed answer (a list of one)."""
    return records(capture(item), app, policy)
