"""Prometheus metrics and the ``/metrics`` route (``HANDLER_KIT_METRICS=1``).

Series:

- ``handler_kit_invocations_total{event, handler, decision, status}``: handler runs;
  ``decision`` is ``none`` when the handler had no opinion;
- ``handler_kit_invocation_duration_seconds{event, handler}``: histogram of handler latency;
- ``handler_kit_answers_total{event, decision, status, transport}``: merged answers;
- ``handler_kit_idempotent_replays_total{event, handler}``: answers replayed, handler not run;
- ``handler_kit_audit_dropped_total``: answers whose audit records were dropped (the audit
  queue was full: the sinks stalled).
- durable audit mode only: ``handler_kit_audit_commit_answers``, a histogram of the answers
  each commit held (its ``_count`` is the commits, ``_sum`` the answers: their ratio is the
  group commit's batching), and ``handler_kit_audit_unrecorded_total``, answers not sent
  because their records were not committed by the deadline (the failure policy answered).
- shadow mode only: ``handler_kit_shadow_answers_total{event, result}``, the candidate's
  answers (``agree``, ``disagree``, ``timeout``, ``skipped``: it would have run a handler with
  side effects); ``handler_kit_shadow_handler_answers_total{event, handler, result}``, each
  handler's part (``agree`` or ``disagree``); ``handler_kit_shadow_shed_total{reason}``,
  candidate answers not made (``queue_full``; ``expired``: waited past the shadow deadline;
  ``lost``: the candidate's process ended before answering).

Every label takes a bounded set of values, or each distinct value would be a new series in
every scrape for the life of the server. ``event`` is the one a client chooses: ``POST /hooks``
answers any ``hook_event_name`` (a runtime's own events included), so a name that is neither a
known event nor one the app has handlers for is counted as ``other``. ``handler`` and
``decision`` come from the app's own handlers and answers, ``status`` and ``transport`` from
handler-kit.

Several workers (``handler-kit serve --workers N``) are one server to the scraper, so their
counts must add up whichever worker answers the scrape: prometheus-client's multiprocess mode,
where each worker writes its values to files in a shared folder and a scrape sums them. The
folder is ``OperationsConfig.metrics_dir``, read from ``PROMETHEUS_MULTIPROC_DIR`` (the
variable prometheus-client itself reads to choose its value class, so it must be in the
workers' environment before they start): ``serve`` makes a private one for its workers, and
one you set yourself wins (needed when another supervisor, e.g. gunicorn, starts the workers).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from handler_kit.core.names import EVENT_NAMES
from handler_kit.ops.audit.capture import answer_status, invocation_decision
from handler_kit.ops.audit.records import output_decision
from handler_kit.ops.idempotency import ReplayedOutput

if TYPE_CHECKING:
    from handler_kit.core.vocabulary import Answer

logger = logging.getLogger("handler_kit.metrics")

# The ``event`` label of every event name that is not a known one or one the app handles.
OTHER_EVENT = "other"

# answers per commit of the durable audit trail
COMMIT_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The metric objects of one served app, and the ``/metrics`` endpoint."""

    def __init__(self, multiprocess_dir: str | None = None, events: Iterable[str] = ()) -> None:
        """``events``: the event names the app has handlers for (``allow_unknown_event``
        ones included); they and the known events are counted by name, any other as
        ``other``."""
        self.multiprocess_dir = multiprocess_dir
        self.events = frozenset(EVENT_NAMES).union(events)
        from prometheus_client import CollectorRegistry, Counter, Histogram

        # A private registry: several apps (tests) in one process do not collide.
        self.registry = CollectorRegistry(auto_describe=True)
        self.invocations = Counter(
            "handler_kit_invocations_total",
            "Handler invocations by event, handler, decision and status.",
            ("event", "handler", "decision", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "handler_kit_invocation_duration_seconds",
            "Handler latency, from start to answer (or deadline).",
            ("event", "handler"),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.answers = Counter(
            "handler_kit_answers_total",
            "Merged answers by event, decision, status and transport.",
            ("event", "decision", "status", "transport"),
            registry=self.registry,
        )
        self.replays = Counter(
            "handler_kit_idempotent_replays_total",
            "Answers replayed from the idempotency store without running the handler.",
            ("event", "handler"),
            registry=self.registry,
        )
        self.idempotency_invalid = Counter(
            "handler_kit_idempotency_invalid_total",
            "Idempotency records in Redis without a valid MAC (planted, written before the "
            "upgrade, or signed with a retired key): ignored, their handlers ran again.",
            registry=self.registry,
        )
        self.audit_dropped = Counter(
            "handler_kit_audit_dropped_total",
            "Answers whose audit records were dropped: the audit queue was full.",
            registry=self.registry,
        )
        self.audit_commit = Histogram(
            "handler_kit_audit_commit_answers",
            "Durable audit: the answers each commit held (one transaction and fsync each).",
            buckets=COMMIT_BUCKETS,
            registry=self.registry,
        )
        self.audit_unrecorded = Counter(
            "handler_kit_audit_unrecorded_total",
            "Durable audit: answers whose records were not committed by their deadline, "
            "answered by their failure policy instead.",
            registry=self.registry,
        )
        self.shadow_answers = Counter(
            "handler_kit_shadow_answers_total",
            "Shadow mode: the candidate's answers by event and result (agree, disagree, "
            "timeout, skipped).",
            ("event", "result"),
            registry=self.registry,
        )
        self.shadow_handlers = Counter(
            "handler_kit_shadow_handler_answers_total",
            "Shadow mode: each handler's part in the candidate's answers, agree or disagree.",
            ("event", "handler", "result"),
            registry=self.registry,
        )
        self.shadow_shed_total = Counter(
            "handler_kit_shadow_shed_total",
            "Shadow mode: candidate answers not made (queue_full, expired, lost).",
            ("reason",),
            registry=self.registry,
        )
        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe(self, answer: Answer, transport: str) -> None:
        """Count one answer and its invocations (on the hot path: label lookups cached); a
        replayed idempotent answer is one whose output is a :class:`ReplayedOutput`."""
        name = answer.event.hook_event_name
        event = name if name in self.events else OTHER_EVENT
        for inv in answer.invocations:
            decision = invocation_decision(inv, name)[0] or "none"
            handler = inv.handler.name
            self._child(self.invocations, event, handler, decision, inv.status).inc()
            self._child(self.latency, event, handler).observe(inv.latency_ms / 1000)
            if type(inv.output) is ReplayedOutput:
                self._child(self.replays, event, handler).inc()
        decision = output_decision(answer.output)[0] or "none"
        self._child(self.answers, event, decision, answer_status(answer), transport).inc()

    def shadow_answer(
        self, event_name: str, result: str, handlers: Iterable[tuple[str, bool]]
    ) -> None:
        """Count one candidate answer and each handler's agreement."""
        event = event_name if event_name in self.events else OTHER_EVENT
        self._child(self.shadow_answers, event, result).inc()
        for handler, agrees in handlers:
            outcome = "agree" if agrees else "disagree"
            self._child(self.shadow_handlers, event, handler, outcome).inc()

    def shadow_shed(self, reason: str) -> None:
        self._child(self.shadow_shed_total, reason).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The text exposition of every worker's values (multiprocess) or this process's."""
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        if self.multiprocess_dir:
            from prometheus_client.multiprocess import MultiProcessCollector

            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=self.multiprocess_dir)
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def route(self) -> Any:
        """``GET /metrics`` as a Starlette route (behind the server's auth like every path
        but ``/healthz``)."""
        from starlette.concurrency import run_in_threadpool
        from starlette.responses import Response
        from starlette.routing import Route

        async def endpoint(_: Any) -> Response:
            body, content_type = await run_in_threadpool(self.exposition)
            return Response(body, media_type=content_type)

        return Route("/metrics", endpoint, methods=["GET"])
