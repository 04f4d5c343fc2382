"""Operations: audit trail, metrics, tracing and idempotency, installed on a HookApp.

The server (:func:`handler_kit.server.create_asgi_app`) and the command hook call
:func:`install_operations`, the one place these features are attached to a HookApp through
its extension points: an observer (:attr:`HookApp.observers`, called after every answer with
the transport and its ``traceparent``) feeds the audit trail, metrics and spans; a wrapper
(:attr:`HookApp.wrappers`) makes ``idempotent=True`` handlers run once; the server gets a
``/metrics`` route and a lifespan context that flushes the audit trail and closes the stores on
shutdown.

Configuration: :class:`OperationsConfig` in code (``ServerConfig(operations=...)``) or these
environment variables (read by ``ServerConfig.from_env``, so every ``--workers`` worker sees
them):

============================================  =================================================
``HANDLER_KIT_AUDIT``                         sinks, comma-separated: ``stdout``, ``stderr``,
                                              ``jsonl:PATH``, ``sqlite:PATH``
``HANDLER_KIT_AUDIT_REDACT``                  extra dotted paths to redact, comma-separated
``HANDLER_KIT_AUDIT_TEXT=1``                  also record ``prompt``/``last_assistant_message``
``HANDLER_KIT_AUDIT_TOOL_INPUT=0``            do not record ``tool_input``
``HANDLER_KIT_AUDIT_QUEUE``                   queue size (answers), default 10000
``HANDLER_KIT_AUDIT_ON_FULL``                 ``block`` (default) or ``drop``
``HANDLER_KIT_AUDIT_PROCESS=0``               write in a server thread, not a writer process
``HANDLER_KIT_METRICS=1``                     serve ``/metrics``
``HANDLER_KIT_OTEL=1``                        one OpenTelemetry span per invocation
``HANDLER_KIT_IDEMPOTENCY_REDIS_URL``         Redis store for idempotent handlers
``HANDLER_KIT_IDEMPOTENCY_TTL``               seconds an answer is replayed, default 3600
============================================  =================================================

Importing this module costs nothing: each feature imports its library when it is turned on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handler_kit.app import Answer, HookApp
    from handler_kit.audit import AuditSink, AuditTrail
    from handler_kit.idempotency import Idempotency, IdempotencyStore
    from handler_kit.metrics import Metrics
    from handler_kit.tracing import Tracing

logger = logging.getLogger("handler_kit.operations")

ENV_VARS = (
    "HANDLER_KIT_AUDIT",
    "HANDLER_KIT_METRICS",
    "HANDLER_KIT_OTEL",
    "HANDLER_KIT_IDEMPOTENCY_REDIS_URL",
)


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


@dataclass
class OperationsConfig:
    """What :func:`install_operations` turns on (all off by default)."""

    audit: list[str] = field(default_factory=list)  # sink specs, as HANDLER_KIT_AUDIT
    audit_sinks: list[AuditSink] = field(default_factory=list)  # sink objects, in code
    audit_redact: list[str] = field(default_factory=list)
    audit_text: bool = False
    audit_tool_input: bool = True
    audit_queue_size: int = 10_000
    audit_on_full: str = "block"
    audit_process: bool = True  # build and write records in a writer process (servers)
    metrics: bool = False
    otel: bool = False
    tracer_provider: Any = None  # an OpenTelemetry TracerProvider; implies otel
    idempotency_redis_url: str | None = None
    idempotency_ttl: float = 3600.0
    idempotency_store: IdempotencyStore | None = None  # a store object, in code

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperationsConfig | None:
        """The configuration in ``HANDLER_KIT_*`` variables, or None when nothing is set."""
        env = os.environ if env is None else env
        config = cls(
            audit=_split(env.get("HANDLER_KIT_AUDIT")),
            audit_redact=_split(env.get("HANDLER_KIT_AUDIT_REDACT")),
            audit_text=_flag(env.get("HANDLER_KIT_AUDIT_TEXT")),
            audit_tool_input=env.get("HANDLER_KIT_AUDIT_TOOL_INPUT", "1").strip().lower()
            not in ("0", "false", "no", "off"),
            audit_queue_size=int(env.get("HANDLER_KIT_AUDIT_QUEUE") or 10_000),
            audit_on_full=(env.get("HANDLER_KIT_AUDIT_ON_FULL") or "block").strip().lower(),
            audit_process=env.get("HANDLER_KIT_AUDIT_PROCESS", "1").strip().lower()
            not in ("0", "false", "no", "off"),
            metrics=_flag(env.get("HANDLER_KIT_METRICS")),
            otel=_flag(env.get("HANDLER_KIT_OTEL")),
            idempotency_redis_url=env.get("HANDLER_KIT_IDEMPOTENCY_REDIS_URL") or None,
            idempotency_ttl=float(env.get("HANDLER_KIT_IDEMPOTENCY_TTL") or 3600),
        )
        if not (config.audit or config.metrics or config.otel or config.idempotency_redis_url):
            return None
        return config


@dataclass
class Installed:
    """What the server adds for the installed features: routes and lifespan contexts."""

    routes: list[Any] = field(default_factory=list)
    lifespan_contexts: list[Callable[[], contextlib.AbstractAsyncContextManager[Any]]] = field(
        default_factory=list
    )


class Operations:
    """The features installed on one HookApp, and the observer that feeds them."""

    def __init__(
        self,
        hook_app: HookApp,
        *,
        audit: AuditTrail | None = None,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
        idempotency: Idempotency | None = None,
        command: bool = False,
    ) -> None:
        self.hook_app = hook_app
        self.audit = audit
        self.metrics = metrics
        self.tracing = tracing
        self.idempotency = idempotency
        self.command = command
        self.pid = os.getpid()
        self.closed = False

    def observe(self, answer: Answer, transport: str, context: dict[str, Any]) -> None:
        """The observer: spans, metrics, then one item on the audit queue. Nothing here waits
        on I/O (the audit queue is bounded and drained by a thread)."""
        traceparent = context.get("traceparent")
        if traceparent is None and transport == "command":
            traceparent = os.environ.get("TRACEPARENT")  # how a parent process passes it on
        replayed = (
            self.idempotency.pop_replayed(answer) if self.idempotency is not None else frozenset()
        )
        ids = None
        if self.tracing is not None:
            try:
                ids = self.tracing.record(answer, transport, traceparent)
                if self.command:
                    self.tracing.force_flush()  # a command hook exits right after
            except Exception:
                logger.exception("could not record the spans of an answer")
        if self.metrics is not None:
            self.metrics.observe(answer, transport, replayed)
        if self.audit is not None:
            from handler_kit.audit import Observed

            self.audit.submit(
                Observed(
                    answer=answer,
                    transport=transport,
                    principal=context.get("principal"),
                    traceparent=traceparent,
                    end_ns=time.time_ns(),
                    pid=self.pid,
                    trace=ids,
                    replayed=replayed,
                )
            )

    def detach(self) -> None:
        """Take the observer and wrapper off the HookApp."""
        with contextlib.suppress(ValueError):
            self.hook_app.observers.remove(self.observe)
        if self.idempotency is not None:
            with contextlib.suppress(ValueError):
                self.hook_app.wrappers.remove(self.idempotency)
        if _installed.get(self.hook_app) is self:
            del _installed[self.hook_app]

    def close_sync(self) -> None:
        """Flush and close what needs no event loop (audit, tracing): for command hooks and
        process exit."""
        if self.closed:
            return
        self.closed = True
        self.detach()
        if self.audit is not None:
            self.audit.close()
        if self.tracing is not None:
            self.tracing.shutdown()

    async def aclose(self) -> None:
        """Shutdown: stop observing, write every queued audit record, close the stores."""
        if self.closed:
            return
        self.detach()
        if self.idempotency is not None:
            try:
                await self.idempotency.store.aclose()
            except Exception:
                logger.exception("closing the idempotency store failed")
        await asyncio.to_thread(self.close_sync)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """The server lifespan context: flush and close on the way out."""
        try:
            yield
        finally:
            await self.aclose()


# The operations installed on each HookApp: installing again replaces them (the serve process
# builds the app once to check it, then uvicorn builds it again in the same process).
_installed: weakref.WeakKeyDictionary[HookApp, Operations] = weakref.WeakKeyDictionary()


def installed(hook_app: HookApp) -> Operations | None:
    """The operations currently installed on ``hook_app`` (tests, inspector)."""
    return _installed.get(hook_app)


def install_operations(
    hook_app: HookApp, config: Any = None, *, transport: str = "server"
) -> Installed:
    """Attach the configured features to ``hook_app``; return the server additions.

    ``config``: a :class:`~handler_kit.server.ServerConfig` (its ``operations`` field), an
    :class:`OperationsConfig`, or None to read ``HANDLER_KIT_*`` variables (command hooks).
    ``transport="command"``: a one-shot process, so the audit trail writes synchronously, no
    thread is started, and nothing server-only (metrics, idempotency) is installed.

    Idempotent handlers get an in-memory store even with nothing configured, so
    ``idempotent=True`` always means what it says in one process.
    """
    previous = _installed.get(hook_app)
    if previous is not None:
        previous.detach()
    if config is None:
        settings = OperationsConfig.from_env()
    elif isinstance(config, OperationsConfig):
        settings = config
    else:
        settings = getattr(config, "operations", None)
    command = transport == "command"
    wants_idempotency = not command and any(h.idempotent for h in hook_app.handlers)
    if settings is None and not wants_idempotency:
        return Installed()
    settings = settings or OperationsConfig()

    audit = _audit(hook_app, settings, command=command)
    metrics = None
    if settings.metrics and not command:
        from handler_kit.metrics import Metrics

        metrics = Metrics()
    tracing = _tracing(hook_app, settings)
    idempotency = _idempotency(hook_app, settings) if wants_idempotency else None

    ops = Operations(
        hook_app,
        audit=audit,
        metrics=metrics,
        tracing=tracing,
        idempotency=idempotency,
        command=command,
    )
    _installed[hook_app] = ops
    if audit is not None or metrics is not None or tracing is not None:
        hook_app.observers.append(ops.observe)
    if idempotency is not None:
        hook_app.wrappers.insert(0, idempotency)  # outermost: a replay runs nothing else
    result = Installed(lifespan_contexts=[ops.lifespan])
    if metrics is not None:
        result.routes.append(metrics.route())
    return result


def _audit(hook_app: HookApp, settings: OperationsConfig, *, command: bool) -> AuditTrail | None:
    if not (settings.audit or settings.audit_sinks):
        return None
    from handler_kit.audit import AuditTrail, RecordPolicy, Redactor

    policy = RecordPolicy(
        redactor=Redactor(settings.audit_redact),
        tool_input=settings.audit_tool_input,
        text=settings.audit_text,
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
    )


def _tracing(hook_app: HookApp, settings: OperationsConfig) -> Tracing | None:
    if not (settings.otel or settings.tracer_provider is not None):
        return None
    from handler_kit import tracing

    if not tracing.available():
        logger.warning("HANDLER_KIT_OTEL is set but opentelemetry is not installed: no spans")
        return None
    if settings.tracer_provider is not None:
        return tracing.Tracing(settings.tracer_provider)
    provider, owned = tracing.default_provider(hook_app.name)
    return tracing.Tracing(provider, owned=owned)


def _idempotency(hook_app: HookApp, settings: OperationsConfig) -> Idempotency:
    import multiprocessing

    from handler_kit.idempotency import Idempotency, MemoryStore, RedisStore

    store: IdempotencyStore
    if settings.idempotency_store is not None:
        store = settings.idempotency_store
    elif settings.idempotency_redis_url:
        store = RedisStore(settings.idempotency_redis_url, ttl=settings.idempotency_ttl)
    else:
        store = MemoryStore(ttl=settings.idempotency_ttl)
        if multiprocessing.parent_process() is not None:
            logger.warning(
                "idempotent handlers with several workers need a shared store: set "
                "HANDLER_KIT_IDEMPOTENCY_REDIS_URL (each worker now remembers only its own)"
            )
    return Idempotency(store, hook_app.name)
