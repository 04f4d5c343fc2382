"""The decision audit trail: one record per handler invocation and one per merged answer.

A hook server decides what an agent may do, so every decision must be explainable afterwards:
which event arrived, which handler said what, why, how long it took, whether it failed and
what the failure policy made of it. Every :class:`~handler_kit.core.app.Answer`, whatever transport
carried it (webhook, MCP, command, direct), becomes records (:mod:`handler_kit.ops.audit.records`
says exactly what is recorded and how it is redacted) written to sinks: JSON lines (stdout,
stderr or a file) and SQLite (:mod:`handler_kit.ops.audit.sqlite`).

The cost stays off the request: Python runs one thread at a time, so work "in the background"
of the server process still takes CPU from the event loop (and a busy thread holds the GIL for
a whole switch interval at a stretch). So:

1. hot path: the observer appends one :class:`Observed` (references, no copying) to a deque:
   no lock, no thread wake-up;
2. a writer thread wakes every 10 ms, copies each answer's values into a :class:`Capture`
   (a fraction of the cost of building its records) and sends them, pickled, down a pipe in
   batches of 64 (each write releases the GIL: the event loop never waits long for it);
3. a small writer process (:mod:`handler_kit.ops.audit.process`, one per server worker) builds,
   redacts, serializes and writes the records, on another core. Waking often keeps its bursts
   short, so it does not take a core from the server for long either.

:meth:`AuditTrail.close` (the server's shutdown) writes out everything queued and stops the
writer process, so a graceful shutdown loses nothing. Sink objects given in code are written by
the writer thread itself (``process=False`` does that for every sink); a command hook writes
synchronously (``synchronous=True``): one process per call has no time for either.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import hashlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from handler_kit.config import AuditSink
from handler_kit.core.outputs import SAFE_DECISIONS
from handler_kit.core.vocabulary import Status, fail_closed_notice
from handler_kit.ops.audit.records import (
    DEFAULT_MAX_CHARS,
    ID_FIELDS,
    REDACTED,
    SCHEMA_VERSION,
    SCOPE_FIELDS,
    SECRET_KEY_PATTERN,
    SECRET_VALUE_PATTERN,
    Capture,
    JsonLinesSink,
    RecordPolicy,
    Redactor,
    iso_time,
    make_key,
    new_event_id,
    new_span_id,
    new_trace_id,
    output_decision,
    parse_sinks,
    parse_traceparent,
    records,
    scope_of,
    serialize,
    worst_status,
)

if TYPE_CHECKING:
    from handler_kit.core.events import HookEvent
    from handler_kit.core.vocabulary import Answer, Invocation
    from handler_kit.ops.audit.process import AuditProcess

__all__ = [
    "DEFAULT_MAX_CHARS",
    "ID_FIELDS",
    "REDACTED",
    "SCHEMA_VERSION",
    "SECRET_KEY_PATTERN",
    "SECRET_VALUE_PATTERN",
    "AuditSink",
    "AuditTrail",
    "Capture",
    "JsonLinesSink",
    "Observed",
    "RecordPolicy",
    "Redactor",
    "TraceIds",
    "build_records",
    "capture",
    "idempotency_key",
    "input_digest",
    "iso_time",
    "new_event_id",
    "new_span_id",
    "new_trace_id",
    "output_decision",
    "parse_sinks",
    "parse_traceparent",
]

logger = logging.getLogger("handler_kit.audit")

DEFAULT_QUEUE_SIZE = 10_000
BATCH_SIZE = 64  # answers per send: each send (a write to a pipe) lets the event loop have the GIL


# -- keys ---------------------------------------------------------------------------------


def input_digest(event: HookEvent) -> str:
    """A digest of the hook input as received, nulls dropped (see
    :func:`handler_kit.ops.audit.records.input_digest_of`)."""
    return hashlib.sha256(event.model_dump_json(exclude_none=True).encode()).hexdigest()[:16]


def idempotency_key(event: HookEvent, handler: str | None, digest: str | None = None) -> str:
    """``scope:event:handler:digest``: what makes two calls "the same call".

    The scope (tool_use_id / turn_id / prompt_id / session_id) names the call; the input digest
    makes a reused identifier with a different input a different call, so a replay can never
    hand a recorded "no opinion" to a changed tool input. ``handler`` None is the answer's key.
    """
    scope = scope_of({name: getattr(event, name, None) for name in SCOPE_FIELDS})
    return make_key(scope, event.hook_event_name, handler, digest or input_digest(event))


# -- what the observer hands over -----------------------------------------------------------


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
    replayed: frozenset[str] = frozenset()


def invocation_decision(inv: Invocation, event_name: str) -> tuple[str | None, str | None]:
    """What one handler contributed: its own decision, or the safe one it failed closed to."""
    if inv.status is Status.FAIL_CLOSED:
        return SAFE_DECISIONS.get(event_name), fail_closed_notice(inv)
    out = inv.output
    if out is None:
        return None, None
    if out.decision is not None:
        return out.decision, out.reason
    if out.continue_ is False:
        return "halt", out.stop_reason
    return None, None


def answer_status(answer: Answer) -> str:
    """The answer's status: the most severe of its invocations' (fail_closed first)."""
    return worst_status(inv.status for inv in answer.invocations)


def capture(item: Observed) -> Capture:
    """The plain values of one observed answer (what :func:`records` needs)."""
    answer = item.answer
    name = answer.event.hook_event_name
    single = len(answer.invocations) == 1
    invocations = []
    for inv in answer.invocations:
        decision, reason = invocation_decision(inv, name)
        if inv.output is None:
            output = None
        elif single:
            output = answer.output  # the answer is this handler's output, rendered once
        else:
            output = inv.output.render(name)
        invocations.append(
            (
                inv.handler.name,
                inv.status,
                decision,
                reason,
                inv.error,
                inv.latency_ms,
                output,
                inv.handler.name in item.replayed,
            )
        )
    trace = item.trace
    return Capture(
        item.end_ns,
        item.transport,
        item.principal,
        item.traceparent,
        item.pid,
        name,
        answer.event.model_dump_json(exclude_none=True),
        answer.output,
        answer.failed,
        tuple(invocations),
        None
        if trace is None
        else (
            trace.trace_id,
            trace.answer_span_id,
            trace.parent_span_id,
            trace.span_ids,
            trace.answer_event_id,
            trace.event_ids,
        ),
    )


def build_records(item: Observed, app: str, policy: RecordPolicy) -> list[dict[str, Any]]:
    """The records of one observed answer (invocations first, the answer last)."""
    return records(capture(item), app, policy)


# -- the trail ----------------------------------------------------------------------------


_STOP = object()


class AuditTrail:
    """A bounded queue of observed answers, drained by a writer thread into the sinks.

    ``submit`` is the only hot-path call: an ``append`` to a deque, with no lock and no wake-up
    (waking a thread per request costs more than the request's own record). The writer thread
    wakes every ``interval`` seconds (or when asked: flush, close, a full queue). When
    ``queue_size`` answers are waiting (the sinks have stalled), ``on_full="block"`` (default)
    makes the request wait rather than lose a record; ``"drop"`` drops and counts it
    (``dropped``).

    ``specs`` (``HANDLER_KIT_AUDIT`` items) are written by a writer process unless
    ``process=False``; ``sinks`` (objects) by the writer thread; ``synchronous=True`` writes
    everything in ``submit`` itself (command hooks).
    """

    def __init__(
        self,
        app: str,
        policy: RecordPolicy,
        *,
        specs: Sequence[str] = (),
        sinks: Sequence[AuditSink] = (),
        process: bool = True,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        on_full: str = "block",
        synchronous: bool = False,
        interval: float = 0.01,
    ) -> None:
        if on_full not in ("block", "drop"):
            raise ValueError("on_full is 'block' or 'drop'")
        self.app = app
        self.policy = policy
        use_process = process and not synchronous and bool(specs)
        self.specs = list(specs) if use_process else []
        # Checked now, whoever writes them (a bad spec fails at start-up); opened on the first
        # record.
        parsed = parse_sinks(specs, command=synchronous)
        self.sinks: list[AuditSink] = list(sinks) if use_process else [*parsed, *sinks]
        self.on_full = on_full
        self.synchronous = synchronous
        self.interval = interval
        self.queue_size = max(1, queue_size)
        self.written = 0
        self.dropped = 0
        self.failed = 0
        self.process: AuditProcess | None = None
        self._items: collections.deque[Any] = collections.deque()
        self._wake = threading.Event()
        self._drained = threading.Condition()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._opened = False
        self._closed = False

    # hot path
    def submit(self, item: Observed) -> None:
        if self._closed:
            logger.warning("audit record submitted after the audit trail was closed: dropped")
            self.dropped += 1
            return
        if self.synchronous:
            with self._lock:
                self._write_local([capture(item)])
            return
        if self._thread is None:
            self._start()
        if len(self._items) >= self.queue_size:
            if self.on_full == "drop":
                self.dropped += 1
                if self.dropped in (1, 10, 100) or self.dropped % 1000 == 0:
                    logger.warning("audit queue full: %d records dropped so far", self.dropped)
                return
            with self._drained:
                while len(self._items) >= self.queue_size:
                    self._wake.set()
                    self._drained.wait(0.1)
        self._items.append(item)

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            thread = threading.Thread(target=self._run, name="handler-kit-audit", daemon=True)
            thread.start()
            self._thread = thread
            atexit.register(self.close)

    def _run(self) -> None:
        items = self._items
        stop = False
        while not stop:
            self._wake.wait(self.interval)
            self._wake.clear()
            while items:
                batch: list[Capture] = []
                markers: list[threading.Event] = []
                while items and len(batch) < BATCH_SIZE:
                    entry = items.popleft()
                    if entry is _STOP:
                        stop = True
                    elif isinstance(entry, threading.Event):
                        markers.append(entry)
                    else:
                        try:
                            batch.append(capture(entry))
                        except Exception:
                            self.failed += 1
                            logger.exception("could not capture an answer for the audit trail")
                if batch:
                    self._write(batch)
                if markers:
                    if self.process is not None:
                        self.process.flush()
                    for marker in markers:
                        marker.set()
                with self._drained:
                    self._drained.notify_all()
        if self.process is not None:
            self.process.close()
        self._close_sinks()

    def _write(self, batch: list[Capture]) -> None:
        if self.specs:
            self._send(batch)
        if self.sinks:
            self._write_local(batch)

    def _send(self, batch: list[Capture]) -> None:
        """Hand the batch to the writer process; on its failure, take its sinks over."""
        from handler_kit.ops.audit.process import AuditProcess, WriterFailed

        try:
            if self.process is None:
                self.process = AuditProcess(self.specs, app=self.app, policy=self.policy)
            self.process.send(batch)
            self.written += sum(len(item.invocations) + 1 for item in batch)
        except WriterFailed as exc:
            logger.error("audit writer process failed (%s): writing in the server from now", exc)
            if self.process is not None:
                self.process.kill()
            self.process = None
            taken_over = parse_sinks(self.specs)
            self.specs = []
            if self._opened:  # the others are open already; these not yet
                for sink in taken_over:
                    try:
                        sink.open()
                    except Exception:
                        logger.exception("audit sink %r could not be opened", sink)
            self.sinks = [*taken_over, *self.sinks]  # _write() writes the batch to them

    def _write_local(self, batch: Sequence[Capture]) -> None:
        if not self._opened:
            self._open_sinks()
        lines: list[tuple[dict[str, Any], str]] = []
        for item in batch:
            try:
                lines.extend(serialize(records(item, self.app, self.policy)))
            except Exception:
                self.failed += 1
                logger.exception("could not build an audit record")
        if not lines:
            return
        for sink in self.sinks:
            try:
                sink.write(lines)
            except Exception:
                self.failed += len(lines)
                logger.exception("audit sink %r failed to write %d records", sink, len(lines))
        self.written += len(lines)

    def _open_sinks(self) -> None:
        self._opened = True
        for sink in self.sinks:
            try:
                sink.open()
            except Exception:
                logger.exception("audit sink %r could not be opened", sink)

    def _close_sinks(self) -> None:
        if not self._opened:
            return
        for sink in self.sinks:
            try:
                sink.close()
            except Exception:
                logger.exception("audit sink %r failed to close", sink)

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until everything submitted so far is written; False if ``timeout`` passed."""
        if self._thread is None or not self._thread.is_alive():
            return True
        marker = threading.Event()
        self._items.append(marker)
        self._wake.set()
        return marker.wait(timeout)

    def close(self, timeout: float | None = 10.0) -> None:
        """Write everything queued, close the sinks, stop the thread (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        if thread is not None and thread.is_alive():
            self._items.append(_STOP)
            self._wake.set()
            thread.join(timeout)
            if thread.is_alive():
                logger.error("the audit trail did not finish writing within %s s", timeout)
        else:
            self._close_sinks()
