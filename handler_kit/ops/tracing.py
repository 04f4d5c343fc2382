"""OpenTelemetry spans for hook decisions (the ``handler-kit[otel]`` extra).

One span per handler invocation, named ``{event} {handler}``, with the attributes an operator
filters on (``handler_kit.event``, ``.handler``, ``.decision``, ``.tool_name``, ``.status``,
``.transport``, ``.event_id``) and an error status for error/timeout/fail_closed. The parent
is the caller's span named by the incoming W3C ``traceparent`` (read with OpenTelemetry's own
propagator), so the decision shows up inside the agent run's trace. Without a traceparent, the
answer gets a root span ``{event}`` and its invocations are its children: one trace per answer,
the trace the audit record names.

Spans are recorded from :class:`~handler_kit.core.app.Answer` right after the answer, with the
measured start and end of each invocation: the observer sees the ``traceparent`` of every
transport, while a handler wrapper does not. The consequence: spans a handler itself starts
(an instrumented HTTP call) are not children of its invocation span.

Off unless OpenTelemetry is importable and ``HANDLER_KIT_OTEL=1`` (or ``otel=True`` /
``tracer_provider=`` in :class:`~handler_kit.ops.operations.OperationsConfig`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from handler_kit.core.names import Status
from handler_kit.ops.audit.trail import TraceIds, invocation_decision, new_event_id, output_decision

if TYPE_CHECKING:
    from handler_kit.core.vocabulary import Answer

logger = logging.getLogger("handler_kit.tracing")

_ERROR_STATUSES = frozenset({Status.ERROR, Status.TIMEOUT, Status.FAIL_CLOSED})


def available() -> bool:
    """True when the OpenTelemetry API is importable."""
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        return False
    return True


def default_provider(service_name: str) -> tuple[Any, bool]:
    """The tracer provider to use: the global one when the application configured one (the
    SDK, or ``opentelemetry-instrument``), else a new SDK provider exporting over OTLP when
    ``opentelemetry-exporter-otlp`` is installed. Returns (provider, created here)."""
    from opentelemetry import trace

    current = trace.get_tracer_provider()
    if type(current).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider"):
        return current, False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        logger.warning("HANDLER_KIT_OTEL=1 but opentelemetry-sdk is not installed: no spans")
        return current, False
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        logger.warning(
            "HANDLER_KIT_OTEL=1: spans are created but not exported; install "
            "opentelemetry-exporter-otlp (configured by OTEL_EXPORTER_OTLP_* variables) or "
            "configure a tracer provider in code"
        )
    else:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider, True


class Tracing:
    """Records the spans of each answer and returns their ids for the audit trail."""

    def __init__(self, tracer_provider: Any, *, owned: bool = False) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.provider = tracer_provider
        self.owned = owned
        self.tracer = tracer_provider.get_tracer("handler_kit")
        self.propagator = TraceContextTextMapPropagator()
        self._kind_server = SpanKind.SERVER
        self._kind_internal = SpanKind.INTERNAL
        self._status = Status
        self._error_code = StatusCode.ERROR

    def record(self, answer: Answer, transport: str, traceparent: str | None) -> TraceIds | None:
        """Create the spans of ``answer`` (ended now) and return their ids; None when no
        handler ran (nothing to trace; the audit record makes its own ids)."""
        if not answer.invocations:
            return None
        end_ns = time.time_ns()
        event = answer.event
        name = event.hook_event_name
        tool_name = getattr(event, "tool_name", None)
        parent_ctx = None
        if traceparent:
            parent_ctx = self.propagator.extract({"traceparent": traceparent})
        answer_event_id = new_event_id()
        root = None
        if parent_ctx is None or not _has_span(parent_ctx):
            longest = max((i.latency_ms for i in answer.invocations), default=0.0)
            decision, _ = output_decision(answer.output)
            root = self.tracer.start_span(
                name,
                kind=self._kind_server,
                start_time=end_ns - int(longest * 1e6),
                attributes=_attributes(
                    event=name,
                    transport=transport,
                    tool_name=tool_name,
                    decision=decision,
                    event_id=answer_event_id,
                ),
            )
            from opentelemetry.trace import set_span_in_context

            parent_ctx = set_span_in_context(root)
        from opentelemetry.trace import get_current_span

        parent = get_current_span(parent_ctx).get_span_context()
        span_ids: list[str] = []
        event_ids: list[str] = []
        for inv in answer.invocations:
            decision, _ = invocation_decision(inv, name)
            # the span names the record it is part of: the decision's (one record per answer)
            event_id = answer_event_id
            span = self.tracer.start_span(
                f"{name} {inv.handler.name}",
                context=parent_ctx,
                kind=self._kind_internal,
                start_time=end_ns - int(inv.latency_ms * 1e6),
                attributes=_attributes(
                    event=name,
                    handler=inv.handler.name,
                    transport=transport,
                    tool_name=tool_name,
                    decision=decision,
                    status=inv.status,
                    event_id=event_id,
                ),
            )
            if inv.status in _ERROR_STATUSES:
                span.set_status(self._status(self._error_code, inv.error))
            span.end(end_time=end_ns)
            span_ids.append(f"{span.get_span_context().span_id:016x}")
            event_ids.append(event_id)
        if root is not None:
            root.end(end_time=end_ns)
        # The answer's span: our root span, or the caller's span named by the traceparent.
        return TraceIds(
            trace_id=f"{parent.trace_id:032x}",
            answer_span_id=f"{parent.span_id:016x}",
            parent_span_id=None,
            span_ids=span_ids,
            answer_event_id=answer_event_id,
            event_ids=event_ids,
        )

    def force_flush(self) -> None:
        flush = getattr(self.provider, "force_flush", None)
        if flush is not None:
            flush()

    def shutdown(self) -> None:
        """Flush; and shut the provider down if it was created here."""
        self.force_flush()
        if self.owned:
            self.provider.shutdown()


def _has_span(ctx: Any) -> bool:
    from opentelemetry.trace import get_current_span

    return get_current_span(ctx).get_span_context().is_valid


def _attributes(**values: Any) -> dict[str, Any]:
    return {f"handler_kit.{key}": value for key, value in values.items() if value is not None}
