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
import hashlib
import heapq
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticSerializationError

from handler_kit.config import AuditSink
from handler_kit.core.outputs import SAFE_DECISIONS
from handler_kit.core.vocabulary import Status, fail_closed_notice, one_line
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
    cut_deep,
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
    import asyncio
    from typing import TypeAlias

    from handler_kit.core.events import HookEvent
    from handler_kit.core.vocabulary import Answer, Invocation
    from handler_kit.ops.audit.process import AuditProcess

    # What :meth:`AuditTrail.submit` returns in durable mode: a future the writer thread
    # resolves (True once committed), or the outcome itself when it is known at once (a
    # command hook's synchronous write, a closed trail, a full queue).
    Ack: TypeAlias = asyncio.Future[bool] | bool
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
# Seconds between two warnings about dropped records: a stalled sink drops every answer, and a
# line per answer would bury the log (and cost the event loop a write each).
DROP_LOG_INTERVAL = 10.0
# Durable mode: seconds between two probes of sinks that are down, so a server with no traffic
# (a load balancer stops sending it any while it is not ready) finds them back up.
PROBE_INTERVAL = 0.5
# Durable mode: seconds the server's start-up waits for the first probe of the sinks (past it,
# the server starts not ready, and the probe's outcome makes it ready or not later)
START_PROBE_WAIT = 5.0
# Durable mode: answers of one event-loop turn that go to the writer process at once, so it
# builds their records while the loop answers the rest of the turn; each next frame of the
# turn is twice as large (a busy turn costs a few frames, not one per few answers).
FIRST_FRAME = 4
# how early the event loop may run a timer (it runs those due within its clock's resolution)
_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution


# -- keys ---------------------------------------------------------------------------------

_REPLACEMENT = "\ufffd".encode()
# A status as it is recorded: its text (a plain string pickles and serializes without a call
# into the enum's Python code).
_STATUS_TEXT: dict[Any, str] = {status: status.value for status in Status}
_new_tuple = tuple.__new__


def input_json(event: HookEvent) -> str:
    """The hook input as JSON, nulls dropped: what the audit trail records and digests.

    pydantic-core writes it, except what it refuses: a lone surrogate (``"\\ud800"``, which
    JSON can escape and UTF-8 cannot hold) or values nested deeper than it writes (an MCP
    argument is not held to the input depth limit). The standard library writes those, the
    surrogate as its escape, the nesting cut at
    :data:`~handler_kit.ops.audit.records.MAX_RECORD_DEPTH`: such an input is recorded too.
    """
    try:
        # model_dump_json() without its frame: the same serializer, the same defaults
        data = event.__pydantic_serializer__.to_json(event, exclude_none=True)
    except PydanticSerializationError:
        pass
    else:
        # pydantic-core writes a lone surrogate in a key as U+FFFDs, one per UTF-8 byte, where
        # in a value it refuses it: such an input is written as the others are (an ASCII
        # text, the usual one, holds none: isascii() reads it a word at a time)
        if data.isascii() or _REPLACEMENT not in data:
            return data.decode()
    # depth 0: the input around its values, which are level 1 as in the input limit
    value = cut_deep(event.model_dump(exclude_none=True), 0)
    return json.dumps(value, separators=(",", ":"))


def input_digest(event: HookEvent) -> str:
    """A digest of the hook input as received, nulls dropped (see
    :func:`handler_kit.ops.audit.records.input_digest_of`)."""
    return hashlib.sha256(input_json(event).encode()).hexdigest()[:16]


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


def deadline_left(answer: Answer) -> float:
    """Seconds left of the answer's handler deadlines: how much longer its caller waits."""
    return max(
        (inv.handler.deadline - inv.latency_ms / 1000 for inv in answer.invocations), default=0.0
    )


def answer_status(answer: Answer) -> str:
    """The answer's status: the most severe of its invocations' (fail_closed first)."""
    return worst_status(inv.status for inv in answer.invocations)


def capture(item: Observed) -> Capture:
    """The plain values of one observed answer (what :func:`records` needs): strings,
    numbers, tuples and the rendered output, which pickle without a call back into Python
    (a status goes as its text, not as the enum)."""
    answer = item.answer
    event = answer.event
    name = event.hook_event_name
    single = len(answer.invocations) == 1
    replayed = item.replayed
    invocations = []
    for inv in answer.invocations:
        decision, reason = invocation_decision(inv, name)
        if inv.output is None:
            output = None
        elif single:
            output = answer.output  # the answer is this handler's output, rendered once
        else:
            output = inv.output.render(name)
        handler = inv.handler.name
        status = inv.status
        invocations.append(
            (
                handler,
                _STATUS_TEXT.get(status, status),
                decision,
                reason,
                inv.error,
                inv.latency_ms,
                output,
                handler in replayed if replayed else False,
            )
        )
    trace = item.trace
    # tuple.__new__: the NamedTuple's own __new__ is a Python function, one more frame
    return _new_tuple(
        Capture,
        (
            item.end_ns,
            item.transport,
            item.principal,
            item.traceparent,
            item.pid,
            name,
            input_json(event),
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
        ),
    )


def build_records(item: Observed, app: str, policy: RecordPolicy) -> list[dict[str, Any]]:
    """The records of one observed answer (invocations first, the answer last)."""
    return records(capture(item), app, policy)


# -- the trail ----------------------------------------------------------------------------


def _acknowledge(group: list[_Pending], ok: bool) -> None:
    """Resolve the futures of ``group`` on their event loops (from the writer thread)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[bool]]] = {}
    for pending in group:
        by_loop.setdefault(pending.loop, []).append(pending.future)
    for loop, futures in by_loop.items():
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody waits there
            loop.call_soon_threadsafe(_settle, futures, ok)


_STOP = object()


@dataclass(slots=True)
class _Pending:
    """Durable mode: an answer waiting for its commit, and how to tell its answer path."""

    item: Observed
    future: asyncio.Future[bool]
    loop: asyncio.AbstractEventLoop


def _running_loop() -> asyncio.AbstractEventLoop:
    import asyncio

    return asyncio.get_running_loop()


def _running_loop_or_none() -> asyncio.AbstractEventLoop | None:
    try:
        return _running_loop()
    except RuntimeError:
        return None


def _settle(futures: list[asyncio.Future[bool]], ok: bool) -> None:
    """On the event loop: tell each waiting answer path how its commit went."""
    for future in futures:
        if not future.done():  # a path that stopped waiting (deadline, disconnect) cancelled it
            future.set_result(ok)


class _Channel:
    """Durable mode with a writer process: the event loop itself talks to the process.

    Answers captured on the event loop during one turn of it go down the pipe (a non-blocking
    write: what the pipe does not take waits for the loop to say it can) in frames of growing
    size, the first after :data:`FIRST_FRAME` answers, so the process builds their records
    while the loop still answers the rest of the turn; the turn's last frame is marked, and
    ends the group the process commits (with every turn that ended while its last commit was
    in progress), answering for them all; the loop reads the answer as it reads a socket and
    settles the frames' futures. No thread of the server is involved, so no acknowledgement
    waits for a thread to get the GIL back from the busy event loop. The answers' deadlines
    are one timer of the channel's (:meth:`expire_at`), not a timer per answer.
    """

    def __init__(self, trail: AuditTrail, loop: asyncio.AbstractEventLoop) -> None:
        import os

        from handler_kit.ops.audit.process import AuditProcess

        self.trail = trail
        self.loop = loop
        self.process = AuditProcess(trail.specs, app=trail.app, policy=trail.policy, durable=True)
        self.fd = self.process.fd
        os.set_blocking(self.fd, False)
        os.set_blocking(self.process.acks, False)
        self.out = bytearray()  # frames the pipe has not taken yet
        self.writing = False
        # plain tuples (a NamedTuple pickles and unpickles through a Python call each)
        self.batch: list[tuple[Any, ...]] = []
        self.futures: list[asyncio.Future[bool]] = []
        self.counts: list[int] = []  # records per answer of the batch
        self.turn = False  # the end of this loop turn's answers is scheduled (_send)
        self.frame_size = FIRST_FRAME  # answers that make the turn's next frame go now
        self.unended = False  # a frame of the turn went without the turn's end mark
        # answers waiting for a commit, by deadline: (when, id, future); one timer, for the
        # earliest (settled answers are dropped from the top as commits come)
        self.deadlines: list[tuple[float, int, asyncio.Future[bool]]] = []
        self.timer: asyncio.TimerHandle | None = None
        self.timer_when = 0.0
        # what the process will answer, in order: a batch's futures and when it was sent, or
        # None for a probe
        self.sent: collections.deque[tuple[list[asyncio.Future[bool]], float, list[int]] | None] = (
            collections.deque()
        )
        self.waiting = 0  # answers sent or about to be, not yet answered
        self.inbox = bytearray()
        self.probing: asyncio.TimerHandle | None = None
        self.failed = False
        loop.add_reader(self.process.acks, self._receive)

    def submit(self, item: Observed) -> Ack:
        trail = self.trail
        if self.waiting >= trail.queue_size:
            trail._drop(
                f"the audit queue is full ({trail.queue_size} answers waiting for a commit)"
            )
            return False
        try:
            captured = capture(item)
        except Exception:
            trail.failed += 1
            logger.exception("could not capture an answer for the audit trail")
            return False
        future: asyncio.Future[bool] = self.loop.create_future()
        if not self.turn:
            self.turn = True
            self.frame_size = FIRST_FRAME
            self.loop.call_soon(self._send)
        batch = self.batch
        batch.append(tuple(captured))
        self.futures.append(future)
        self.counts.append(len(captured.invocations) + 1)
        self.waiting += 1
        if len(batch) >= self.frame_size:
            self.frame_size *= 2
            self._send(False)
        return future

    def _send(self, last: bool = True) -> None:
        """Hand the answers captured since the last frame to the process; ``last``: the
        turn's answers end here (what the process commits as a group)."""
        from handler_kit.ops.audit.process import encode_frame

        if last:
            self.turn = False
        if self.failed or not (self.batch or (last and self.unended)):
            return
        batch, futures, counts = self.batch, self.futures, self.counts
        self.batch, self.futures, self.counts = [], [], []
        try:
            frame = encode_frame(("batch", batch, last))
        except Exception:
            self.trail.failed += len(batch)
            logger.exception("could not hand %d answers to the audit writer", len(batch))
            self.waiting -= len(batch)
            for future in futures:
                if not future.done():
                    future.set_result(False)
            if not (last and self.unended):
                return
            # the turn's earlier frames are committed once its end comes: it comes empty
            batch, futures, counts = [], [], []
            frame = encode_frame(("batch", batch, last))
        self.unended = not last
        self.out += frame
        self.sent.append((futures, time.monotonic(), counts))
        if self.trail._commit_started is None:
            self.trail._commit_started = time.monotonic()
        self._write()

    def expire_at(self, budget: float, future: asyncio.Future[bool]) -> None:
        """Settle ``future`` False in ``budget`` seconds unless its commit came first."""
        when = self.loop.time() + budget
        heapq.heappush(self.deadlines, (when, id(future), future))
        if self.timer is None or when < self.timer_when:
            if self.timer is not None:
                self.timer.cancel()
            self.timer = self.loop.call_at(when, self._expire)
            self.timer_when = when

    def _expire(self) -> None:
        """The earliest deadline: its answers, and any others whose time is up, fail."""
        self.timer = None
        deadlines = self.deadlines
        # the loop runs a timer up to its clock's resolution early: so does this
        now = self.loop.time() + _CLOCK_RESOLUTION
        while deadlines and (deadlines[0][0] < now or deadlines[0][2].done()):
            future = heapq.heappop(deadlines)[2]
            if not future.done():
                future.set_result(False)
        if deadlines:
            when = deadlines[0][0]
            self.timer = self.loop.call_at(when, self._expire)
            self.timer_when = when

    def _write(self) -> None:
        import os

        try:
            while self.out:
                written = os.write(self.fd, self.out)
                del self.out[:written]
        except BlockingIOError:
            if not self.writing:
                self.writing = True
                self.loop.add_writer(self.fd, self._write)
            return
        except OSError as exc:
            self._fail(f"cannot write to it: {exc}")
            return
        if self.writing:
            self.writing = False
            self.loop.remove_writer(self.fd)

    def _receive(self) -> None:
        import os
        import pickle

        from handler_kit.ops.audit.process import LENGTH

        try:
            data = os.read(self.process.acks, 1 << 16)
        except BlockingIOError:
            return
        except OSError as exc:
            self._fail(f"cannot read from it: {exc}")
            return
        if not data:
            self._fail(f"it exited with {self.process.proc.poll()}")
            return
        inbox = self.inbox
        inbox += data
        while len(inbox) >= LENGTH.size:
            size = LENGTH.unpack_from(inbox)[0]
            if len(inbox) < LENGTH.size + size:
                break
            message = pickle.loads(inbox[LENGTH.size : LENGTH.size + size])
            del inbox[: LENGTH.size + size]
            self._answer(message)

    def _answer(self, message: Any) -> None:
        """One word of the process: a probe's outcome, or a commit's (of as many batches as
        it holds, one ``unbuilt`` list each)."""
        trail = self.trail
        if message[0] == "probed":
            if self.sent and self.sent[0] is None:
                self.sent.popleft()
            if message[1] is None:
                trail._mark_up()
            else:
                trail._mark_down(message[1])
                self._probe_later()
        elif message[0] == "committed":
            why: str | None = message[1]
            settled: list[tuple[asyncio.Future[bool], bool]] = []
            built = failed = 0
            for unbuilt in message[2]:
                entry = self.sent.popleft() if self.sent else None
                if entry is None:  # cannot be: batches are answered in order
                    continue
                futures, _, counts = entry
                self.waiting -= len(futures)
                for position, future in enumerate(futures):
                    ok = position not in unbuilt
                    if ok and why is None:
                        built += 1
                        trail.written += counts[position]
                    else:
                        failed += 1
                    settled.append((future, ok and why is None))
            trail.failed += failed
            if why is None:
                if built:
                    trail._committed(built)
            else:
                trail._commit_failed(why)
                self._probe_later()
            for future, ok in settled:
                if not future.done():  # a path that stopped waiting cancelled it
                    future.set_result(ok)
            deadlines = self.deadlines
            while deadlines and deadlines[0][2].done():
                heapq.heappop(deadlines)
        nxt = next((entry for entry in self.sent if entry is not None), None)
        trail._commit_started = None if nxt is None else nxt[1]

    def _probe_later(self) -> None:
        """Sinks that are down, and no traffic to find them back up: probe them."""
        if self.probing is None:
            self.probing = self.loop.call_later(PROBE_INTERVAL, self._probe)

    def _probe(self) -> None:
        self.probing = None
        if self.failed or self.trail._failure is None:
            return
        if self.sent:  # a commit on its way says as much
            self._probe_later()
            return
        self.probe()

    def probe(self) -> None:
        """Ask the process to commit an empty batch to every sink (``("probed", why)``)."""
        from handler_kit.ops.audit.process import encode_frame

        if self.failed:
            return
        self.out += encode_frame(("probe",))
        self.sent.append(None)
        if self.trail._commit_started is None:
            self.trail._commit_started = time.monotonic()
        self._write()

    def _fail(self, why: str) -> None:
        """The process is gone: every answer waiting fails, and the trail writes its sinks
        in the server from now (the writer thread)."""
        import os

        if self.failed:
            return
        self.failed = True
        self._detach()
        trail = self.trail
        trail._mark_down(f"the audit writer process failed: {why}")
        futures = [f for entry in self.sent if entry is not None for f in entry[0]]
        futures += self.futures
        self.sent.clear()
        self.batch, self.futures, self.counts = [], [], []
        for future in futures:
            if not future.done():
                future.set_result(False)
        trail._commit_started = None
        trail._channel = None
        trail.process = self.process
        trail._take_over(RuntimeError(why))
        with contextlib.suppress(OSError):
            os.close(self.process.acks)

    def _detach(self) -> None:
        """Stop watching the pipes (on the loop)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.process.acks)
        if self.writing:
            self.writing = False
            with contextlib.suppress(Exception):
                self.loop.remove_writer(self.fd)
        if self.probing is not None:
            self.probing.cancel()
            self.probing = None

    def close(self) -> None:
        """Write what is queued, end the process (from any thread: the loop lets go of the
        pipes first, if it still runs)."""
        import os

        loop = self.loop
        done = threading.Event()

        def detach() -> None:
            with contextlib.suppress(RuntimeError):  # a closed loop: close() writes it
                self._send()
            self._detach()
            done.set()

        import asyncio

        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if loop.is_running() and not loop.is_closed() and current is not loop:
            try:
                loop.call_soon_threadsafe(detach)
            except RuntimeError:
                detach()
            else:
                done.wait(5.0)
        else:
            detach()
        with contextlib.suppress(OSError):
            os.set_blocking(self.fd, True)
            os.set_blocking(self.process.acks, True)
            if self.out:
                from handler_kit.ops.audit.records import write_all

                write_all(self.fd, bytes(self.out))
                self.out.clear()
        self.process.close()


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
    ) -> None:
        if on_full not in ("block", "drop"):
            raise ValueError("on_full is 'block' or 'drop'")
        self.app = app
        self.policy = policy
        self.durable = durable
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
        self._wake = threading.Event()
        self._drained = threading.Condition()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._opened = False
        self._closed = False
        self._channel: _Channel | None = None

    # hot path
    def submit(self, item: Observed) -> Ack | None:
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
            loop = _running_loop()
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

    def _open_channel(self, loop: asyncio.AbstractEventLoop) -> _Channel | None:
        """Durable mode: start the writer process and its channel on ``loop``; None when it
        cannot start (the writer thread has taken its sinks over)."""
        from handler_kit.ops.audit.process import WriterFailed

        try:
            channel = self._channel = _Channel(self, loop)
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

    def _enqueue(self, item: Observed) -> Ack:
        """Durable mode: queue ``item`` with a future its answer path awaits, and wake the
        writer (a commit waited for cannot wait for a timer too)."""
        import asyncio

        if len(self._items) >= self.queue_size:
            self._drop(f"the audit queue is full ({self.queue_size} answers waiting for a commit)")
            return False
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        self._items.append(_Pending(item, future, loop))
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

    def _wait_for_room(self, item: Observed) -> bool:
        """``on_full="block"``: wait until the queue has room, at most what is left of the
        answer's handler deadline; False when that ran out, or when the last wait did and the
        writer has taken nothing since."""
        budget = deadline_left(item.answer)
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
        stop = False
        while not stop:
            self._wake.wait(self.interval)
            self._wake.clear()
            while items:
                batch: list[Capture] = []
                markers: list[threading.Event] = []
                while items and len(batch) < BATCH_SIZE:
                    entry = items.popleft()
                    self._taken += 1
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
            self._wake.clear()
            if not items and (self._failure is not None or not self._proven):
                self._probe()
            while items:
                # the group: whatever arrived while the last commit was in progress
                group: list[_Pending] = []
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

    def _commit(self, group: list[_Pending]) -> None:
        """Build the group's records, write them to every sink as one batch, then tell each
        answer path how it went (one wake-up per event loop, not one per answer)."""
        lines: list[tuple[dict[str, Any], str]] = []
        built: list[_Pending] = []
        unbuilt: list[_Pending] = []
        for pending in group:
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
        _acknowledge(unbuilt, False)
        _acknowledge(built, ok)

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
        from handler_kit.ops.audit.process import AuditProcess

        if self.process is None:
            self.process = AuditProcess(
                self.specs, app=self.app, policy=self.policy, durable=self.durable
            )
        return self.process

    def _send(self, batch: list[Capture]) -> None:
        """Hand the batch to the writer process; on its failure, take its sinks over."""
        from handler_kit.ops.audit.process import WriterFailed

        try:
            self._writer_process().send(batch)
            self.written += sum(len(item.invocations) + 1 for item in batch)
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
            while channel.waiting and _running_loop_or_none() is not channel.loop:
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
