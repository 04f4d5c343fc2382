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

**Durable mode** (``durable=True``): an answer is sent only once its records are committed.
:meth:`AuditTrail.submit` then returns an acknowledgement the answer path awaits
(:meth:`AuditTrail.committed`), at most for what is left of the handler's deadline. The
records are committed as a database does a group commit: every answer that arrived while a
commit was in progress goes into the next one, one ``write`` (one transaction, one fsync) per
group, however many answers it holds. The sinks named by specs are committed by the writer
process: the event loop itself hands it the captured answers (a non-blocking write to its pipe)
and reads its word back (as it reads a socket), so neither building the records nor an
acknowledgement waits for a thread of the server to get the GIL from the busy event loop.
Sink objects given in code are written by a writer thread instead (it builds the records and
commits them itself), and so are the sinks of a writer process that died: the answers it had
not answered for fail (nobody can say whether they were committed). A commit that fails, or
that does not come by the deadline, fails its answer. The sinks are down
(:attr:`AuditTrail.sink_down`, what ``/readyz`` reports) from a failed commit until a commit,
or a probe of the sinks (``write([])``), succeeds again, and while a commit has been in
progress longer than ``stall_after`` seconds (the shortest handler deadline: past it, answers
fail). They are down, too, from start-up until the first probe or commit succeeds: a server
does not say ready before its sinks have shown they commit (:meth:`AuditTrail.start`, run by
the server's lifespan, probes them).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from handler_kit.config import AuditSink
from handler_kit.core.vocabulary import one_line
from handler_kit.ops.audit.capture import (
    DECISION_ID,
    Observed,
    TraceIds,
    answer_status,
    build_records,
    capture,
    capture_shadow,
    deadline_left,
    invocation_decision,
)
from handler_kit.ops.audit.durable import (
    PROBE_INTERVAL,
    Channel,
    Pending,
    acknowledge,
    running_loop,
    running_loop_or_none,
)

# imported here, not in the writer thread: an import statement run again (per batch) costs a
# failed attribute lookup, a formatted exception each time
from handler_kit.ops.audit.process import AuditProcess, WriterFailed
from handler_kit.ops.audit.records import (
    DEFAULT_MAX_CHARS,
    ID_FIELDS,
    REDACTED,
    SCHEMA_VERSION,
    SECRET_KEY_PATTERN,
    SECRET_VALUE_PATTERN,
    Capture,
    JsonLinesSink,
    RecordPolicy,
    Redactor,
    iso_time,
    new_event_id,
    new_span_id,
    new_trace_id,
    output_decision,
    parse_sinks,
    parse_traceparent,
    records,
    same_decision,
    serialize,
)
from handler_kit.ops.keys import idempotency_key, input_digest, input_json

if TYPE_CHECKING:
    import asyncio

    from handler_kit.core.events import HookEvent
    from handler_kit.core.vocabulary import Answer, Invocation
    from handler_kit.ops.audit.capture import Ack

# the names this module held before keys, capture and durable commit had modules of their own
__all__ = [
    "DECISION_ID",
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
    "answer_status",
    "build_records",
    "capture",
    "deadline_left",
    "idempotency_key",
    "input_digest",
    "input_json",
    "invocation_decision",
    "iso_time",
    "new_event_id",
    "new_span_id",
    "new_trace_id",
    "output_decision",
    "parse_sinks",
    "parse_traceparent",
    "records",
    "same_decision",
]

logger = logging.getLogger("handler_kit.audit")

DEFAULT_QUEUE_SIZE = 10_000
BATCH_SIZE = 64  # answers per send: each send (a write to a pipe) lets the event loop have the GIL
# Seconds between two warnings about dropped records: a stalled sink drops every answer, and a
# line per answer would bury the log (and cost the event loop a write each).
DROP_LOG_INTERVAL = 10.0
# Durable mode: seconds the server's start-up waits for the first probe of the sinks (past it,
# the server starts not ready, and the probe's outcome makes it ready or not later)
START_PROBE_WAIT = 5.0


_STOP = object()


class Wake:
    """What the writer thread sleeps on between batches: a flag that :meth:`wait` clears as it
    returns, kept as one lock of the interpreter's C code (``threading.Event.wait`` and
    ``set`` run several Python frames of its condition each time, once per batch)."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()  # held: not set

    def set(self) -> None:
        """Wake the waiter (or the next wait returns at once); any thread may set it."""
        try:  # noqa: SIM105 (contextlib.suppress runs two Python frames)
            self._lock.release()
        except RuntimeError:  # released already: set already
            pass

    def wait(self, timeout: float | None = None) -> bool:
        """Until set, or ``timeout`` seconds (None: for good); True when set, and cleared."""
        return self._lock.acquire(True, -1 if timeout is None else timeout)


class AuditTrail:
    """A bounded queue of observed answers, drained by a writer thread into the sinks.

    ``submit`` is the only hot-path call: an ``append`` to a deque, with no lock and no wake-up
    (waking a thread per request costs more than the request's own record). The writer thread
    wakes every ``interval`` seconds (or when asked: flush, close, a full queue).

    ``submit`` runs on the server's event loop, so it must never wait on a sink. When
    ``queue_size`` answers are waiting (the sinks are stalled: a pipe nobody reads, a full
    disk, a locked database), ``on_full="drop"`` (default) drops the answer's records: counted
    in ``dropped``, reported to ``on_drop`` (the metric), and logged at most once every
    :data:`DROP_LOG_INTERVAL` seconds. ``"block"`` waits for room instead, holding the event
    loop, so at most what is left of the answer's handler deadline (its caller stops waiting
    then); once a wait has run out, it drops without waiting until the writer takes an answer
    again: it waits for a slow sink, not for a stopped one.

    ``specs`` (``HANDLER_KIT_AUDIT`` items) are written by a writer process unless
    ``process=False``; ``sinks`` (objects) by the writer thread; ``synchronous=True`` writes
    everything in ``submit`` itself (command hooks).

    ``durable=True``: see the module docstring. ``submit`` returns an acknowledgement for
    :meth:`committed`; the writer process commits the ``specs`` sinks (the writer thread does,
    with ``process=False`` or when ``sinks`` are given too: one commit is one write of every
    sink), stdout and stderr sinks are refused, and a full queue fails the answer instead of
    dropping its records. ``commits`` counts the commits and ``committed_answers`` the
    answers they held (:attr:`answers_per_commit`, their ratio, is the group commit's
    batching), ``last_commit`` the answers of the last one; ``on_commit`` is called with that
    number after each commit (the metric).
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
        on_full: str = "drop",
        synchronous: bool = False,
        interval: float = 0.01,
        on_drop: Callable[[], None] | None = None,
        durable: bool = False,
        on_commit: Callable[[int], None] | None = None,
        stall_after: float = 1.0,
        events: Sequence[str] = (),
    ) -> None:
        if on_full not in ("block", "drop"):
            raise ValueError("on_full is 'block' or 'drop'")
        self.app = app
        self.policy = policy
        self.durable = durable
        # the app's events: the writer process builds their models when it starts
        self.events = tuple(events)
        # durable: one commit is one write of every sink, so the process commits all or none
        use_process = process and not synchronous and bool(specs) and not (durable and sinks)
        self.specs = list(specs) if use_process else []
        # Checked now, whoever writes them (a bad spec fails at start-up); opened on the first
        # record.
        parsed = parse_sinks(specs, command=synchronous, durable=durable)
        self.sinks: list[AuditSink] = list(sinks) if use_process else [*parsed, *sinks]
        self.on_full = on_full
        self.synchronous = synchronous
        self.interval = interval
        self.queue_size = max(1, queue_size)
        self.on_drop = on_drop
        self.written = 0
        self.dropped = 0
        self.failed = 0
        self.on_commit = on_commit
        self.commits = 0
        self.committed_answers = 0
        self.last_commit = 0
        self.unrecorded = 0
        self.stall_after = stall_after
        # why the last commit failed, None once one succeeded
        self._failure: str | None = None
        # durable: a commit or a probe has succeeded since start-up (before, not ready)
        self._proven = not durable
        # durable: a commit or a probe has come back, whatever its outcome
        self._probed = threading.Event()
        # when the commit (or probe) in progress began, None between commits
        self._commit_started: float | None = None
        self._unrecorded_logged = 0
        self._next_unrecorded_log = 0.0
        self._next_failure_log = 0.0
        self._dropped_logged = 0
        self._next_drop_log = 0.0
        # answers the writer thread has taken off the queue, and that count when a wait for
        # room ran out: equal, the writer has not moved since, and "block" does not wait again
        self._taken = 0
        self._stalled_at = -1
        self.process: AuditProcess | None = None
        self._items: collections.deque[Any] = collections.deque()
        self._wake = Wake()
        self._drained = threading.Condition()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._opened = False
        self._closed = False
        self._channel: Channel | None = None

    # hot path
    def observe(
        self,
        answer: Answer,
        transport: str,
        context: dict[str, Any],
        traceparent: str | None,
        trace: TraceIds | None,
        pid: int,
    ) -> Observed:
        """The observer's part: draw the decision's id (the tracer's, when it made one: the
        spans name the same record) and leave it in ``context`` under
        :data:`~handler_kit.ops.audit.capture.DECISION_ID`, so that what runs after the answer
        can name it; then queue the answer (:meth:`submit`). The :class:`Observed` queued,
        its ``ack`` set in durable mode."""
        end_ns = time.time_ns()  # the answer's time, and its decision id's
        decision_id = trace.answer_event_id if trace is not None else new_event_id(end_ns)
        context[DECISION_ID] = decision_id
        item = Observed(
            answer,
            transport,
            context.get("principal"),
            traceparent,
            end_ns,
            pid,
            trace,
            None,
            decision_id,
            context.get("body"),
            context.get("event_from_body", False),
        )
        item.ack = self.submit(item)
        return item

    # what the durable committer waits for an answer's commit at most (a name of this
    # module's: the committer runs no import statement per answer)
    deadline_left = staticmethod(deadline_left)

    def record_shadow(
        self,
        decision_id: str,
        candidate_app_name: str,
        event_name: str,
        output: dict[str, Any],
        failed: bool,
        invocations: Sequence[Invocation] | Sequence[tuple[Any, ...]],
        end_ns: int,
        *,
        agrees: bool,
        event: HookEvent | None = None,
        transport: str = "direct",
        principal: str | None = None,
    ) -> None:
        """Record a shadow candidate's answer to the decision ``decision_id`` (the id the
        observer left in the answer's context under
        :data:`~handler_kit.ops.audit.capture.DECISION_ID`): one ``kind: "shadow"`` record,
        its handlers the candidate's (``invocations``), ``agrees`` whether its answer is the
        decision's (:func:`~handler_kit.ops.audit.records.same_decision`). ``event``: the
        hook input, whose identifiers the record copies (its input is the decision's, not
        recorded again).

        Written after its decision, which was submitted first: the queue, the writer
        process's pipe and each sink keep their order, so a shadow record is committed in
        its decision's commit or a later one. Callable from any thread; it never waits,
        and in durable mode nothing waits for its commit (it gates no answer)."""
        try:
            captured = capture_shadow(
                decision_id,
                candidate_app_name,
                event,
                event_name,
                output,
                failed,
                invocations,
                end_ns,
                agrees=agrees,
                transport=transport,
                principal=principal,
                pid=os.getpid(),
            )
        except Exception:
            self.failed += 1
            logger.exception("could not capture a shadow answer for the audit trail")
            return
        channel = self._channel
        if channel is not None and running_loop_or_none() is not channel.loop:
            # the writer process's pipe is its event loop's: handed over there, in order
            try:
                channel.loop.call_soon_threadsafe(self._submit_captured, captured)
            except RuntimeError:
                self._drop("the audit trail's event loop is closed")
            return
        self._submit_captured(captured)

    def _submit_captured(self, captured: Capture) -> None:
        """Queue a record captured already; in durable mode nobody waits for its commit."""
        if (
            self.durable
            and not self.synchronous
            and not self._closed
            and self._channel is None
            and running_loop_or_none() is None
        ):
            # off any event loop: no future to settle; the writer thread commits it
            if self._thread is None:
                self._start()
            self._items.append(captured)
            self._wake.set()
            return
        self.submit(captured)

    def submit(self, item: Observed | Capture) -> Ack | None:
        """Queue ``item``'s records. In durable mode, the acknowledgement to hand to
        :meth:`committed`; otherwise None (nothing waits)."""
        if self._closed:
            self._drop("the audit trail is closed")
            return False if self.durable else None
        if self.synchronous:
            with self._lock:
                try:
                    lines = serialize(records(capture(item), self.app, self.policy))
                except Exception:
                    self.failed += 1
                    logger.exception("could not build an audit record")
                    return False if self.durable else None
                ok = self._write_local(lines)
            if ok:
                self._committed(1)
            return ok if self.durable else None
        if self.durable and self.specs:
            channel = self._channel
            loop = running_loop()
            if channel is not None and channel.loop is not loop:
                if not channel.loop.is_closed():
                    self.failed += 1
                    logger.error("durable audit: an answer came on another event loop: not sent")
                    return False
                # its loop is gone (asyncio.run() per call): so is everyone waiting on it
                self._channel = None
                try:
                    channel.close()
                except Exception:
                    logger.exception("the audit writer process did not close cleanly")
                channel = None
            if channel is None:
                channel = self._open_channel(loop)
            if channel is not None:
                return channel.submit(item)
        if self._thread is None:
            self._start()
        if self.durable:
            return self._enqueue(item)
        if len(self._items) >= self.queue_size and not (
            self.on_full == "block" and self._wait_for_room(item)
        ):
            self._drop(f"the audit queue is full ({self.queue_size} answers waiting for the sinks)")
            return None
        self._items.append(item)
        return None

    def _open_channel(self, loop: asyncio.AbstractEventLoop) -> Channel | None:
        """Durable mode: start the writer process and its channel on ``loop``; None when it
        cannot start (the writer thread has taken its sinks over)."""
        try:
            channel = self._channel = Channel(self, loop)
        except WriterFailed as exc:
            self._take_over(exc)
            return None
        atexit.register(self.close)
        return channel

    async def start(self, wait: float = START_PROBE_WAIT) -> None:
        """Durable mode, at server start-up (on its event loop): probe the sinks, so the
        server says ready (:attr:`sink_down` None) only once they have committed; waits for
        the probe's outcome at most ``wait`` seconds. Nothing otherwise."""
        import asyncio

        if not self.durable or self.synchronous or self._closed:
            return
        channel = self._channel
        if channel is None and self.specs:
            channel = self._open_channel(asyncio.get_running_loop())
        if channel is not None:
            channel.probe()
        else:  # the writer thread probes sinks that have not committed yet
            if self._thread is None:
                self._start()
            self._wake.set()
        deadline = time.monotonic() + wait
        while not self._probed.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    def _enqueue(self, item: Observed | Capture) -> Ack:
        """Durable mode: queue ``item`` with a future its answer path awaits, and wake the
        writer (a commit waited for cannot wait for a timer too)."""
        import asyncio

        if len(self._items) >= self.queue_size:
            self._drop(f"the audit queue is full ({self.queue_size} answers waiting for a commit)")
            return False
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        self._items.append(Pending(item, future, loop))
        self._wake.set()
        return future

    async def committed(self, ack: Ack, budget: float) -> bool:
        """Durable mode, on the answer path: True once the answer's records are committed;
        False when the commit failed, or did not come within ``budget`` seconds (what is left
        of the handler's deadline)."""
        if isinstance(ack, bool):
            return ack
        channel = self._channel
        if channel is not None and not ack.done():
            # through the writer process: every future of the trail is the channel's
            if budget <= 0:
                return False
            channel.expire_at(budget, ack)
            return await ack
        if not ack.done():
            import asyncio

            try:
                async with asyncio.timeout(max(budget, 0.0)):
                    return await ack
            except TimeoutError:
                # a sink that stalls shows in sink_down; one late answer (its handler used up
                # the deadline) says nothing of the sink
                return False
        return ack.result()

    def unrecorded_answer(self, handlers: Sequence[str], why: str) -> None:
        """Count (and log, at most every :data:`DROP_LOG_INTERVAL` seconds) an answer that
        was not sent because its records were not committed: its failure policy answered."""
        self.unrecorded += 1
        now = time.monotonic()
        if now >= self._next_unrecorded_log:
            self._next_unrecorded_log = now + DROP_LOG_INTERVAL
            logger.error(
                "durable audit: an answer of %s was not sent, its failure policy answered "
                "instead (%s): answers so replaced: %d since the last such message, %d in "
                "all (this message comes at most every %g s)",
                ", ".join(handlers) or "no handler",
                why,
                self.unrecorded - self._unrecorded_logged,
                self.unrecorded,
                DROP_LOG_INTERVAL,
            )
            self._unrecorded_logged = self.unrecorded

    @property
    def sink_down(self) -> str | None:
        """Durable mode: why the sinks are down (the last commit failed, or the one in
        progress has stalled), or None while they commit."""
        if self._failure is not None:
            return self._failure
        if not self._proven:
            return "the audit sinks have not committed yet"
        started = self._commit_started
        if started is not None and time.monotonic() - started > self.stall_after:
            return f"a commit has been in progress for more than {self.stall_after:g} s"
        return None

    def _mark_down(self, why: str) -> None:
        if self._failure is None:
            logger.error("durable audit: the audit sinks are down (%s): not ready", why)
        self._failure = why
        self._probed.set()

    def _mark_up(self) -> None:
        self._proven = True
        if self._failure is not None:
            self._failure = None
            logger.warning("durable audit: the audit sinks commit again: ready")
        self._probed.set()

    def _committed(self, answers: int) -> None:
        """A commit of ``answers`` answers succeeded: counted, and the sinks are up."""
        self.commits += 1
        self.committed_answers += answers
        self.last_commit = answers
        self._mark_up()
        if self.on_commit is not None:
            try:
                self.on_commit(answers)
            except Exception:
                logger.exception("the audit commit callback failed")

    def _wait_for_room(self, item: Observed | Capture) -> bool:
        """``on_full="block"``: wait until the queue has room, at most what is left of the
        answer's handler deadline; False when that ran out, or when the last wait did and the
        writer has taken nothing since."""
        # a record captured already (a shadow's) gates no answer: it does not wait
        budget = deadline_left(item.answer) if isinstance(item, Observed) else 0.0
        if budget <= 0 or self._taken == self._stalled_at:
            return False
        limit = time.monotonic() + budget
        with self._drained:
            while len(self._items) >= self.queue_size:
                left = limit - time.monotonic()
                if left <= 0:
                    self._stalled_at = self._taken
                    return False
                self._wake.set()
                self._drained.wait(min(left, 0.1))
        return True

    def _drop(self, why: str) -> None:
        self.dropped += 1
        if self.on_drop is not None:
            self.on_drop()
        now = time.monotonic()
        if now >= self._next_drop_log:
            self._next_drop_log = now + DROP_LOG_INTERVAL
            logger.warning(
                "audit records dropped (%s): answers without records: %d since the last such "
                "message, %d in all (this message comes at most every %g s)",
                why,
                self.dropped - self._dropped_logged,
                self.dropped,
                DROP_LOG_INTERVAL,
            )
            self._dropped_logged = self.dropped

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            thread = threading.Thread(target=self._run, name="handler-kit-audit", daemon=True)
            thread.start()
            self._thread = thread
            atexit.register(self.close)

    def _run(self) -> None:
        if self.durable:
            self._run_durable()
            return
        items = self._items
        take = items.popleft
        block = self.on_full == "block"
        marker_type = threading.Event
        stop = False
        while not stop:
            self._wake.wait(self.interval)
            while items:
                batch: list[Capture] = []
                markers: list[threading.Event] = []
                taken = 0
                while items and taken < BATCH_SIZE:
                    entry = take()
                    taken += 1
                    if entry is _STOP:
                        stop = True
                    elif isinstance(entry, marker_type):
                        markers.append(entry)
                    else:
                        try:
                            batch.append(capture(entry))
                        except Exception:
                            self.failed += 1
                            logger.exception("could not capture an answer for the audit trail")
                self._taken += taken
                if batch:
                    try:
                        self._write(batch)
                    except Exception:  # the thread must go on: it is the trail's only writer
                        self.failed += len(batch)
                        logger.exception("could not write %d answers' records", len(batch))
                if markers:
                    if self.process is not None:
                        self.process.flush()
                    for marker in markers:
                        marker.set()
                if block:  # only a submit waiting for room ("block") waits for this
                    with self._drained:
                        self._drained.notify_all()
        if self.process is not None:
            self.process.close()
        self._close_sinks()

    def _write(self, batch: list[Capture]) -> None:
        if self.specs:
            self._send(batch)
        if self.sinks:
            lines: list[tuple[dict[str, Any], str]] = []
            for item in batch:
                try:
                    lines.extend(serialize(records(item, self.app, self.policy)))
                except Exception:
                    self.failed += 1
                    logger.exception("could not build an audit record")
            if lines:
                self._write_local(lines)

    def _run_durable(self) -> None:
        """The writer thread in durable mode: group commit, then acknowledgements."""
        items = self._items
        stop = False
        while not stop:
            down = self._failure is not None or not self._proven
            self._wake.wait(PROBE_INTERVAL if down else None)
            if not items and (self._failure is not None or not self._proven):
                self._probe()
            while items:
                # the group: whatever arrived while the last commit was in progress
                group: list[Pending | Capture] = []
                markers: list[threading.Event] = []
                for _ in range(min(len(items), self.queue_size)):
                    entry = items.popleft()
                    self._taken += 1
                    if entry is _STOP:
                        stop = True
                    elif isinstance(entry, threading.Event):
                        markers.append(entry)
                    else:
                        group.append(entry)
                if group:
                    self._commit(group)
                for marker in markers:
                    marker.set()
        self._close_sinks()

    def _commit(self, group: list[Pending | Capture]) -> None:
        """Build the group's records, write them to every sink as one batch, then tell each
        answer path how it went (one wake-up per event loop, not one per answer). A record
        captured already (a shadow's) is committed with the group; nobody waits for it."""
        lines: list[tuple[dict[str, Any], str]] = []
        built: list[Pending] = []
        unbuilt: list[Pending] = []
        for pending in group:
            if not isinstance(pending, Pending):
                try:
                    lines.extend(serialize(records(pending, self.app, self.policy)))
                except Exception:
                    self.failed += 1
                    logger.exception("could not build an audit record")
                continue
            try:
                lines.extend(serialize(records(capture(pending.item), self.app, self.policy)))
            except Exception:
                self.failed += 1
                logger.exception("could not build an audit record")
                unbuilt.append(pending)
            else:
                built.append(pending)
        ok = bool(lines) and self._write_local(lines)
        if ok:
            self._committed(len(built))
        acknowledge(unbuilt, False)
        acknowledge(built, ok)

    def _commit_failed(self, why: str) -> None:
        """Durable mode: a commit failed; the sinks are down, and it is logged at most every
        :data:`DROP_LOG_INTERVAL` seconds (a sink that is down fails every commit)."""
        self._mark_down(why)
        now = time.monotonic()
        if now >= self._next_failure_log:
            self._next_failure_log = now + DROP_LOG_INTERVAL
            logger.error(
                "audit sinks failed to commit (%s) (this message comes at most every %g s)",
                why,
                DROP_LOG_INTERVAL,
            )

    def _probe(self) -> None:
        """Sinks that are down: try an empty commit on each; all succeed, they are up."""
        if not self._opened:
            self._open_sinks()
        self._commit_started = time.monotonic()
        try:
            for sink in self.sinks:
                try:
                    sink.write([])
                except Exception as exc:
                    self._mark_down(f"{sink!r}: {one_line(exc)}")
                    return
        finally:
            self._commit_started = None
        self._mark_up()

    def _writer_process(self) -> AuditProcess:
        if self.process is None:
            self.process = AuditProcess(
                self.specs,
                app=self.app,
                policy=self.policy,
                durable=self.durable,
                events=self.events,
            )
        return self.process

    def _send(self, batch: list[Capture]) -> None:
        """Hand the batch to the writer process; on its failure, take its sinks over."""
        process = self.process
        try:
            (process if process is not None else self._writer_process()).send(batch)
            self.written += len(batch)  # one record per answer
        except WriterFailed as exc:
            self._take_over(exc)

    def _take_over(self, exc: Exception) -> None:
        """The writer process failed: its sinks are written by the writer thread from now."""
        logger.error("audit writer process failed (%s): writing in the server from now", exc)
        if self.process is not None:
            self.process.kill()
        self.process = None
        taken_over = parse_sinks(self.specs, durable=self.durable)
        self.specs = []
        if self._opened:  # the others are open already; these not yet
            for sink in taken_over:
                try:
                    sink.open()
                except Exception:
                    logger.exception("audit sink %r could not be opened", sink)
        self.sinks = [*taken_over, *self.sinks]  # _write() writes the next batch to them

    def _write_local(self, lines: list[tuple[dict[str, Any], str]]) -> bool:
        """Write ``lines`` to every sink; True when every sink took them (committed them, in
        durable mode). A failure is logged, in durable mode at most every
        :data:`DROP_LOG_INTERVAL` seconds (a sink that is down fails every commit), and
        marks the sinks down."""
        if not self._opened:
            self._open_sinks()
        ok = True
        self._commit_started = time.monotonic()
        for sink in self.sinks:
            try:
                sink.write(lines)
            except Exception as exc:
                ok = False
                self.failed += len(lines)
                if not self.durable:
                    logger.exception("audit sink %r failed to write %d records", sink, len(lines))
                    continue
                self._mark_down(f"{sink!r}: {one_line(exc)}")
                now = time.monotonic()
                if now >= self._next_failure_log:
                    self._next_failure_log = now + DROP_LOG_INTERVAL
                    logger.exception(
                        "audit sink %r failed to commit %d records (this message comes at "
                        "most every %g s)",
                        sink,
                        len(lines),
                        DROP_LOG_INTERVAL,
                    )
        self._commit_started = None
        self.written += len(lines)
        return ok

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

    @property
    def answers_per_commit(self) -> float:
        """Durable mode: answers per commit so far (the group commit's batching)."""
        return self.committed_answers / self.commits if self.commits else 0.0

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until everything submitted so far is written; False if ``timeout`` passed."""
        channel = self._channel
        if channel is not None:
            # durable, through the writer process: the event loop gets its word; from another
            # thread, wait for it (on the loop itself nothing can be waited for)
            limit = None if timeout is None else time.monotonic() + timeout
            while channel.waiting and running_loop_or_none() is not channel.loop:
                if limit is not None and time.monotonic() >= limit:
                    return False
                time.sleep(0.005)
            return True
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
            channel, self._channel = self._channel, None
        if channel is not None:
            try:
                channel.close()
            except Exception:
                logger.exception("the audit writer process did not close cleanly")
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        if thread is not None and thread.is_alive():
            self._items.append(_STOP)
            self._wake.set()
            thread.join(timeout)
            if thread.is_alive():
                logger.error("the audit trail did not finish writing within %s s", timeout)
                # a writer process stuck in a sink must not outlive the server
                process = self.process
                if process is not None:
                    process.kill()
        else:
            self._close_sinks()
