"""Operations: the audit trail, metrics, tracing and idempotency around a HookApp's answers.

:meth:`Operations.build` turns an :class:`~handler_kit.config.OperationsConfig` into the
features it names, and :meth:`Operations.apply` returns the HookApp with them around its answer
path (:meth:`HookApp.extended <handler_kit.core.app.HookApp.extended>`): an observer, called
after every answer with the transport and its ``traceparent``, feeds the audit trail, metrics
and spans; a wrapper makes ``idempotent=True`` handlers run once. The user's HookApp is never
changed. :attr:`Operations.extension` is what a server adds for them: the ``/metrics`` route and
a lifespan context that flushes the audit trail and closes the stores on shutdown.

With the durable audit trail (``audit_durable``), a committer follows the observer: it holds
the answer until its records are committed, at most for what is left of the handler's
deadline, and past that (or when the commit failed) sends the failure policy's answer instead
(:meth:`HookApp.answer_unrecorded <handler_kit.core.app.HookApp.answer_unrecorded>`).
:attr:`Operations.not_ready` says why the server should get no traffic (``/readyz``).

Importing this module costs nothing: each feature imports its library when it is turned on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from handler_kit.config import Extension, OperationsConfig

if TYPE_CHECKING:
    from handler_kit.core.app import HookApp
    from handler_kit.core.vocabulary import Answer
    from handler_kit.ops.audit.capture import Observed
    from handler_kit.ops.audit.trail import AuditTrail
    from handler_kit.ops.idempotency import Idempotency
    from handler_kit.ops.metrics import Metrics
    from handler_kit.ops.tracing import Tracing


# The one entry the observer leaves for the committer in the context HookApp.answer hands to
# both (its keys are strings): the durable answer as it was handed to the audit trail, its
# acknowledgement a field of it.
_OBSERVED = "handler_kit.ops.observed"

logger = logging.getLogger("handler_kit.operations")

Transport = Literal["server", "command"]


class Operations:
    """The features built for one HookApp, and the observer that feeds them."""

    def __init__(
        self,
        hook_app: HookApp,
        *,
        audit: AuditTrail | None = None,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
        idempotency: Idempotency | None = None,
        command: bool = False,
        traceparent: str | None = None,
    ) -> None:
        self.hook_app = hook_app
        self.traceparent = traceparent
        self.audit = audit
        self.metrics = metrics
        self.tracing = tracing
        self.idempotency = idempotency
        self.command = command
        self.pid = os.getpid()
        self.closed = False
        # the HookApp apply() returned: the durable committer answers failures through it
        self.served: HookApp | None = None

    def observe(self, answer: Answer, transport: str, context: dict[str, Any]) -> None:
        """The observer: spans, metrics, then one item on the audit queue. Nothing here waits
        on I/O (the audit queue is bounded and drained by a thread; when it is full, the
        answer's records are dropped and counted, or with ``audit_on_full="block"`` waited
        for, at most until the handler's deadline)."""
        traceparent = context.get("traceparent")
        if traceparent is None:
            traceparent = self.traceparent
        ids = None
        if self.tracing is not None:
            try:
                ids = self.tracing.record(answer, transport, traceparent)
                if self.command:
                    self.tracing.force_flush()  # a command hook exits right after
            except Exception:
                logger.exception("could not record the spans of an answer")
        durable = False
        if self.audit is not None:
            # the decision's id drawn, left in the context, the answer queued: the trail's
            # part, whose module has its names imported (an import statement here would run
            # again on every answer)
            item = self.audit.observe(answer, transport, context, traceparent, ids, self.pid)
            if item.ack is not None:
                # the committer, handed the same context, awaits the answer's commit (an
                # answer the committer replaces is observed again: the latest is the one)
                context[_OBSERVED] = item
                durable = True
        if self.metrics is not None and not durable:
            # durable: the answer sent may yet be the failure policy's, so it is counted by
            # commit() once known, and only that one
            self.metrics.observe(answer, transport)

    async def commit(self, answer: Answer, transport: str, context: dict[str, Any]) -> Answer:
        """The durable committer: ``answer`` once its records are committed; otherwise, by
        what is left of its handlers' deadline, the failure policy's answer (deny or block
        for a fail-closed gate; a failed answer, which the webhook sends as a 503)."""
        item: Observed | None = context.pop(_OBSERVED, None)
        audit = self.audit
        if item is None or item.ack is None or audit is None:
            return answer

        if answer.invocations:
            budget = audit.deadline_left(answer)
        else:  # no handler ran: the event's own deadline bounds the wait
            from handler_kit.core.vocabulary import (
                DEFAULT_TIMEOUT,
                DEFAULT_TIMEOUTS,
                server_deadline,
            )

            name = answer.event.hook_event_name
            budget = server_deadline(DEFAULT_TIMEOUTS.get(name, DEFAULT_TIMEOUT))
        if await audit.committed(item.ack, budget):
            self._count(item.answer, transport)
            return answer
        handlers = [inv.handler for inv in answer.invocations]
        audit.unrecorded_answer(
            [h.name for h in handlers],
            audit.sink_down or "the commit did not come by the deadline",
        )
        if self.metrics is not None:
            self.metrics.audit_unrecorded.inc()
        served = self.served if self.served is not None else self.hook_app
        # observed like any answer: recorded (without waiting) once the sinks commit again
        replacement = served.answer_unrecorded(
            answer.event, handlers, transport=transport, context=context
        )
        # observed again: what the observer left for a commit nobody waits for
        context.pop(_OBSERVED, None)
        self._count(replacement, transport)
        return replacement

    def _count(self, answer: Answer, transport: str) -> None:
        if self.metrics is not None:
            self.metrics.observe(answer, transport)

    def close_sync(self) -> None:
        """Flush and close what needs no event loop (audit, tracing): for command hooks and
        process exit."""
        if self.closed:
            return
        self.closed = True
        if self.audit is not None:
            self.audit.close()
        if self.tracing is not None:
            self.tracing.shutdown()

    async def aclose(self) -> None:
        """Shutdown: write every queued audit record, close the stores."""
        if self.closed:
            return
        if self.idempotency is not None:
            try:
                await self.idempotency.store.aclose()
            except Exception:
                logger.exception("closing the idempotency store failed")
        await asyncio.to_thread(self.close_sync)

    @classmethod
    def build(
        cls,
        hook_app: HookApp,
        settings: OperationsConfig,
        *,
        transport: Transport = "server",
        traceparent: str | None = None,
        secrets: Sequence[str] = (),
    ) -> Operations:
        """The features ``settings`` turns on, for ``hook_app``.

        ``secrets``: the server's own (its tokens, its JWT secret), which the audit trail
        redacts wherever a recorded text repeats one.

        ``transport="command"``: a one-shot process, so the audit trail writes synchronously,
        no thread is started, and nothing server-only (metrics, idempotency) is built; its
        answers are parented by ``traceparent`` (the ``TRACEPARENT`` a parent process passes).

        Idempotent handlers get an in-memory store even with nothing configured, so
        ``idempotent=True`` always means what it says in one process.
        """
        command = transport == "command"
        metrics = None
        if settings.metrics and not command:
            from handler_kit.ops.metrics import Metrics

            metrics = Metrics(multiprocess_dir=settings.metrics_dir, events=hook_app.by_event)
        wants_idempotency = not command and any(h.idempotent for h in hook_app.handlers)
        return cls(
            hook_app,
            audit=_audit(hook_app, settings, command=command, secrets=secrets, metrics=metrics),
            metrics=metrics,
            tracing=_tracing(hook_app, settings),
            idempotency=(_idempotency(hook_app, settings, metrics) if wants_idempotency else None),
            command=command,
            traceparent=traceparent,
        )

    @property
    def active(self) -> bool:
        """True when any feature was built."""
        return any(
            feature is not None
            for feature in (self.audit, self.metrics, self.tracing, self.idempotency)
        )

    def apply(self, hook_app: HookApp) -> HookApp:
        """``hook_app`` with these features around its answer path (a new HookApp)."""
        observes = self.audit is not None or self.metrics is not None or self.tracing is not None
        durable = self.audit is not None and self.audit.durable
        served = hook_app.extended(
            observers=(self.observe,) if observes else (),
            # outermost: a replayed answer runs nothing else
            wrappers=(self.idempotency,) if self.idempotency is not None else (),
            committers=(self.commit,) if durable else (),
        )
        self.served = served
        return served

    @property
    def not_ready(self) -> str | None:
        """Why this server should not be sent traffic now, or None: the durable audit
        trail's sinks are down (an answer would be the failure policy's)."""
        if self.audit is not None and self.audit.durable and self.audit.sink_down is not None:
            return f"the audit sinks are down: {self.audit.sink_down}"
        return None

    @property
    def extension(self) -> Extension:
        """What the server adds: ``/metrics``, and the lifespan that flushes and closes."""
        routes = (self.metrics.route(),) if self.metrics is not None else ()
        return Extension(routes=routes, lifespan=self.lifespan)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """The server lifespan context: the durable audit trail's sinks probed on the way in
        (``/readyz`` says ready once they commit), flushed and closed on the way out."""
        try:
            if self.audit is not None:
                await self.audit.start()
            yield
        finally:
            await self.aclose()


def _audit(
    hook_app: HookApp,
    settings: OperationsConfig,
    *,
    command: bool,
    secrets: Sequence[str] = (),
    metrics: Metrics | None = None,
) -> AuditTrail | None:
    if not (settings.audit or settings.audit_sinks):
        return None
    from handler_kit.ops.audit.records import default_replica
    from handler_kit.ops.audit.trail import AuditTrail, RecordPolicy, Redactor

    policy = RecordPolicy(
        redactor=Redactor(settings.audit_redact, secrets=secrets),
        tool_input=settings.audit_tool_input,
        text=settings.audit_text,
        full_input=settings.audit_input == "full",
        app_version=settings.app_version,
        replica=settings.replica or default_replica(),
    )
    return AuditTrail(
        hook_app.name,
        policy,
        specs=settings.audit,
        sinks=settings.audit_sinks,
        process=settings.audit_process,
        queue_size=settings.audit_queue_size,
        on_full=settings.audit_on_full,
        synchronous=command,
        on_drop=metrics.audit_dropped.inc if metrics is not None else None,
        durable=settings.audit_durable,
        on_commit=metrics.audit_commit.observe if metrics is not None else None,
        # a commit slower than the shortest deadline fails that handler's answers
        stall_after=min((h.deadline for h in hook_app.handlers), default=1.0),
        events=tuple(hook_app.by_event),
    )


def _tracing(hook_app: HookApp, settings: OperationsConfig) -> Tracing | None:
    if not (settings.otel or settings.tracer_provider is not None):
        return None
    from handler_kit.ops import tracing

    if not tracing.available():
        logger.warning("HANDLER_KIT_OTEL is set but opentelemetry is not installed: no spans")
        return None
    if settings.tracer_provider is not None:
        return tracing.Tracing(settings.tracer_provider)
    provider, owned = tracing.default_provider(hook_app.name)
    return tracing.Tracing(provider, owned=owned)


def _idempotency(
    hook_app: HookApp, settings: OperationsConfig, metrics: Metrics | None = None
) -> Idempotency:
    import multiprocessing

    from handler_kit.config import IdempotencyStore
    from handler_kit.ops.idempotency import Idempotency, MemoryStore, RedisStore

    store: IdempotencyStore
    if settings.idempotency_store is not None:
        store = settings.idempotency_store
    elif settings.idempotency_redis_url:
        store = RedisStore(
            settings.idempotency_redis_url,
            ttl=settings.idempotency_ttl,
            keys=settings.idempotency_keys,
            on_invalid=metrics.idempotency_invalid.inc if metrics is not None else None,
        )
    else:
        store = MemoryStore(ttl=settings.idempotency_ttl)
        if multiprocessing.parent_process() is not None:
            logger.warning(
                "idempotent handlers with several workers need a shared store: set "
                "HANDLER_KIT_IDEMPOTENCY_REDIS_URL (each worker now remembers only its own)"
            )
    return Idempotency(store, hook_app.name)
