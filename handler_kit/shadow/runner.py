"""The shadow runner: a candidate app answers every event again, after the real answer is sent.

What the candidate may never do is change or delay an answer, so it shares nothing with the
answer path but a bounded hand-over:

- the server's observer only takes note of the answer (references: no copying, no I/O); the
  server's outer layer hands the note over once the route has sent its answer
  (:meth:`Shadow.begin` and :meth:`Shadow.flush` around the route): one append to a deque.
  Past ``queue_size`` answers handed over and not yet answered, more are shed and counted: at
  saturation the candidate falls behind, the server does not.
- the candidate runs in a process of its own (:mod:`handler_kit.shadow.process`), not on a
  thread of the server: Python runs one thread of a process at a time, and a candidate thread
  holding the interpreter (or descheduled while it holds it, on a busy machine) makes the
  server's event loop wait, which the shadow benchmark showed as a many-fold p99. For the
  same reason no thread of the server talks to it: the event loop writes a batch (every
  10 ms at most) down a non-blocking pipe, reads the results as they come, and counts and
  records them, each a slice per turn of the loop.
- a candidate that raises answers by its failure policy, as it would if enforced; one that
  hangs is cut off by its handlers' deadlines and by ``timeout`` (the wait included); one that
  blocks its process outright holds that process only, and answers past the bound are shed. A
  process that ends (a crash, out of memory) loses what it had (counted as ``lost``) and a new
  one takes the next answers.

Handlers marked ``idempotent=True`` have side effects (a ticket filed, an approval sent): a
candidate answer that would run one is not made (counted as ``skipped``): a shadow must not act.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import logging
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from handler_kit.core.names import Status
from handler_kit.core.vocabulary import UNREADABLE_MESSAGE, Answer
from handler_kit.ops.audit.capture import DECISION_ID
from handler_kit.ops.audit.process import encode_frame, take_frames
from handler_kit.shadow.process import handler_view

if TYPE_CHECKING:
    from handler_kit.ops.audit.trail import AuditTrail
    from handler_kit.ops.metrics import Metrics

__all__ = ["Shadow", "ShadowResult", "ShadowStats", "audit_record"]

logger = logging.getLogger("handler_kit.shadow")

# How long a graceful shutdown gives the candidate to answer what it has.
CLOSE_WAIT = 2.0
# An answer handed over waits this long for more to go with it; a turn of the loop sends, or
# counts and records, up to BATCH at once.
BATCH_WAIT = 0.01
BATCH = 32
# How long after its candidate process ended a new one is started.
RESPAWN_WAIT = 1.0


class _Pending:
    """The answer a request's route made, noted by the observer, submitted after the send."""

    __slots__ = ("job", "open", "route")

    def __init__(self, route: str | None) -> None:
        self.route = route
        self.job: _Job | None = None
        self.open = True


# The request being answered (set by the server's outer layer around a route): an observer
# running in that request's task, or in a task it started, finds it here.
_PENDING: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar(
    "handler_kit.shadow.pending", default=None
)


class _Job:
    __slots__ = ("answer", "at", "body", "decision_id", "principal", "route", "transport")

    def __init__(
        self,
        answer: Answer,
        route: str | None,
        transport: str,
        context: dict[str, Any],
    ) -> None:
        self.answer = answer
        self.route = route
        self.decision_id: str | None = context.get(DECISION_ID)
        self.transport = transport
        self.principal: str | None = context.get("principal")
        # the webhook's input as received: the candidate reads the event from it again
        self.body: bytes | None = context.get("body") if transport == "webhook" else None
        self.at = time.monotonic()


class ShadowResult:
    """One candidate answer compared with the enforced one: what its record is made from."""

    __slots__ = (
        "agrees",
        "app",
        "end_ns",
        "event",
        "event_name",
        "failed",
        "handlers",
        "invocations",
        "job",
        "output",
    )

    def __init__(
        self,
        job: _Job,
        app: str,
        event_name: str,
        agrees: bool,
        handlers: list[tuple[str, bool]],
        output: dict[str, Any],
        failed: bool,
        invocations: tuple[tuple[Any, ...], ...],
        end_ns: int,
    ) -> None:
        self.job = job
        self.app = app
        self.event = job.answer.event
        self.event_name = event_name
        self.agrees = agrees
        self.handlers = handlers
        self.output = output
        self.failed = failed
        # each candidate handler's (name, status, decision, reason, error, latency_ms, output,
        # replayed), as the audit trail records a decision's handlers
        self.invocations = invocations
        self.end_ns = end_ns

    @property
    def decision_id(self) -> str | None:
        return self.job.decision_id


class ShadowStats:
    """Counts since start: what the candidate answered and what it did not."""

    __slots__ = ("agreed", "disagreed", "expired", "lost", "shed", "skipped", "timed_out")

    def __init__(self) -> None:
        self.agreed = 0
        self.disagreed = 0
        self.shed = 0  # past the bound: not handed over
        self.expired = 0  # waited past the deadline
        self.timed_out = 0  # ran past the deadline
        self.skipped = 0  # would have run a handler with side effects
        self.lost = 0  # its process ended before it answered

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class Shadow:
    """Runs the candidate app ``spec`` (MODULE:ATTR) on every answer the server's app gives,
    in a process of its own.

    ``record``: called on the server's event loop with each :class:`ShadowResult` (the audit
    trail's shadow record, which never waits); ``metrics``: the server's, counting agreements
    per handler and shed work. ``queue_size`` bounds the answers handed over and not yet
    answered by the candidate. Everything but the candidate runs on the event loop that
    first hands an answer over (or runs :meth:`lifespan`): the server's.
    """

    def __init__(
        self,
        spec: str,
        *,
        name: str,
        queue_size: int = 1000,
        timeout: float = 5.0,
        metrics: Metrics | None = None,
        record: Callable[[ShadowResult], None] | None = None,
    ) -> None:
        self.spec = spec
        self.name = name
        self.queue_size = queue_size
        self.timeout = timeout
        self.metrics = metrics
        self.record = record
        self.stats = ShadowStats()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._candidate: _Candidate | None = None
        # handed over by the answer path, not yet sent
        self._waiting: collections.deque[_Job] = collections.deque()
        # sent to the candidate and not answered yet, by sequence number
        self._sent: dict[int, _Job] = {}
        # answered by the candidate, not yet counted and recorded
        self._done: collections.deque[tuple[_Job, tuple[Any, ...]]] = collections.deque()
        self._seq = 0
        self._sending: asyncio.Handle | None = None
        self._recording: asyncio.Handle | None = None
        self._respawn: asyncio.TimerHandle | None = None
        self._closed = False

    # -- the answer path: take note, then hand over --------------------------------------------

    def observe(self, answer: Answer, transport: str, context: dict[str, Any]) -> None:
        """The observer: notes the answer for the request's :meth:`flush`, or submits it at
        once when no request is open around it (an MCP session's own task)."""
        invocations = answer.invocations
        if invocations and invocations[0].status is not Status.OK and _unreadable(answer):
            return  # the input could not be read: the candidate has no event to answer
        pending = _PENDING.get()
        route = context.get("tool") if transport == "mcp" else None
        if pending is not None and pending.open:
            if route is None:
                route = pending.route
            pending.job = _Job(answer, route, transport, context)
            return
        self._submit(_Job(answer, route, transport, context))

    def begin(self, route: str | None) -> contextvars.Token[_Pending | None]:
        """Open a request: ``route`` names the one handler it runs (``POST /hooks/{name}``),
        or None for every matching one. :meth:`flush` closes it once its answer is sent."""
        return _PENDING.set(_Pending(route))

    def flush(self, token: contextvars.Token[_Pending | None]) -> None:
        """Close the request :meth:`begin` opened; its answer, if it made one, goes to the
        candidate now (the answer has been sent)."""
        pending = _PENDING.get()
        _PENDING.reset(token)
        if pending is None:
            return
        pending.open = False
        if pending.job is not None:
            self._submit(pending.job)

    def _submit(self, job: _Job) -> None:
        if self._closed:
            return
        if self._loop is None:
            self.start()
        if len(self._waiting) + len(self._sent) + len(self._done) >= self.queue_size:
            self.stats.shed += 1
            if self.metrics is not None:
                self.metrics.shadow_shed("queue_full")
            return
        self._waiting.append(job)
        if self._sending is None and self._loop is not None:
            # what arrives meanwhile goes with it: one write per batch
            self._sending = self._loop.call_later(BATCH_WAIT, self._send)

    # -- the candidate's process, driven by the event loop ----------------------------------

    def start(self) -> None:
        """Start the candidate's process (idempotent; the first submission starts it too).
        Called on the server's event loop, which then does all the talking: no thread of the
        server's process takes the interpreter from it."""
        if self._loop is not None or self._closed:
            return
        self._loop = asyncio.get_running_loop()
        self._spawn()

    def _spawn(self) -> None:
        self._respawn = None
        if self._closed:
            return
        assert self._loop is not None
        try:
            self._candidate = _Candidate(self._loop, self.spec, self._answered, self._ended)
        except OSError:
            logger.exception("the shadow candidate's process (%s) could not start", self.spec)
            self._candidate = None
            self._respawn = self._loop.call_later(RESPAWN_WAIT, self._spawn)

    def _send(self) -> None:
        """One batch of what the answer path handed over, to the candidate; the rest in a
        later turn of the loop, so that a request arriving meanwhile waits for one batch at
        most."""
        self._sending = None
        batch: list[tuple[Any, ...]] = []
        while self._waiting and len(batch) < BATCH:
            job = self._waiting.popleft()
            self._seq += 1
            try:
                batch.append(self._plain(self._seq, job))
            except Exception:  # an output the comparison cannot render: not sent
                logger.exception("a shadow answer could not be handed over")
                continue
            self._sent[self._seq] = job
        if self._waiting and self._loop is not None:
            self._sending = self._loop.call_soon(self._send)
        if not batch:
            return
        candidate = self._candidate
        if candidate is None or not candidate.send(batch):
            self._lost([job[0] for job in batch])

    def _plain(self, seq: int, job: _Job) -> tuple[Any, ...]:
        answer = job.answer
        name = answer.event.hook_event_name
        views = [handler_view(inv, name) for inv in answer.invocations]
        deadline = job.at + self.timeout
        # the body is sent as received when there is one: pickling it is a copy, pickling the
        # event a walk of every field, on the server's loop
        event = answer.event if job.body is None else (type(answer.event), job.body)
        return (seq, event, job.route, answer.output, answer.failed, views, deadline)

    def _lost(self, seqs: list[int]) -> None:
        """Sent to a candidate process that ended: counted as shed (``lost``)."""
        for seq in seqs:
            self._sent.pop(seq, None)
        self.stats.lost += len(seqs)
        if self.metrics is not None:
            for _ in seqs:
                self.metrics.shadow_shed("lost")

    def _answered(self, results: list[tuple[Any, ...]]) -> None:
        """A frame of the candidate's results: counted and recorded a slice per turn of the
        loop, as the batches were sent."""
        for result in results:
            job = self._sent.pop(result[0], None)
            if job is not None:
                self._done.append((job, result))
        if self._recording is None and self._done and self._loop is not None:
            self._recording = self._loop.call_soon(self._record_some)

    def _record_some(self) -> None:
        self._recording = None
        for _ in range(min(len(self._done), BATCH)):
            job, result = self._done.popleft()
            self._result(job, result)
        if self._done and self._loop is not None:
            self._recording = self._loop.call_soon(self._record_some)

    def _ended(self, candidate: _Candidate) -> None:
        """The candidate's process ended (it crashed, ran out of memory, or was closed): what
        it had is lost, and unless the server is closing a new one takes the next answers, a
        little later (a candidate that dies as it starts must not make a busy loop)."""
        if candidate is not self._candidate:
            return
        self._candidate = None
        if self._sent:
            self._lost(list(self._sent))
        if self._closed or self._loop is None:
            return
        self._respawn = self._loop.call_later(RESPAWN_WAIT, self._replace, candidate)

    def _replace(self, ended: _Candidate) -> None:
        # said now, not when its output ended: by now the process has been reaped
        logger.error(
            "the shadow candidate's process (%s) ended with status %s; a new one takes "
            "the next answers",
            self.spec,
            ended.reap(),
        )
        self._spawn()

    async def close(self, wait: float = CLOSE_WAIT) -> None:
        """Stop taking answers; give the candidate ``wait`` seconds to answer what was handed
        over, then end its process (a candidate that holds it is killed)."""
        self._closed = True
        for handle in (self._sending, self._respawn):
            if handle is not None:
                handle.cancel()
        self._sending = self._respawn = None
        candidate = self._candidate
        if candidate is None:
            self._waiting.clear()
            return
        while self._waiting:
            self._send()
        if self._sending is not None:
            self._sending.cancel()
            self._sending = None
        await candidate.finish(wait)
        if self._sent:
            self._lost(list(self._sent))
        while self._done:
            self._record_some()

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """The server's lifespan context: the process started with it, ended at shutdown."""
        self.start()
        try:
            yield
        finally:
            await self.close()

    def _result(self, job: _Job, result: tuple[Any, ...]) -> None:
        _, kind, agrees, per_handler, output, failed, values, end_ns = result
        event_name = job.answer.event.hook_event_name
        counter = _COUNTERS[kind]
        setattr(self.stats, counter, getattr(self.stats, counter) + 1)
        metrics = self.metrics
        if kind == "expired":
            if metrics is not None:
                metrics.shadow_shed("expired")
            return
        if metrics is not None:
            metrics.shadow_answer(event_name, kind, per_handler)
        if kind in ("agree", "disagree") and self.record is not None:
            try:
                self.record(
                    ShadowResult(
                        job,
                        self.name,
                        event_name,
                        agrees,
                        per_handler,
                        output,
                        failed,
                        values,
                        end_ns,
                    )
                )
            except Exception:
                logger.exception("the shadow answer could not be recorded")


class _Candidate:
    """One candidate process and its two pipes, read and written without blocking by the
    event loop (``add_reader``/``add_writer``): the loop writes a batch's frame as far as the
    pipe takes it and the rest when it can, and reads results as they come."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        spec: str,
        answered: Callable[[list[tuple[Any, ...]]], None],
        ended: Callable[[_Candidate], None],
    ) -> None:
        self._loop = loop
        self._answered = answered
        self._ended_callback = ended
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "handler_kit.shadow", spec],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdout.fileno()
        self._out: int | None = self.proc.stdin.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._unsent = bytearray()  # frames the pipe did not take yet
        self._received = bytearray()  # bytes of a frame not yet whole
        self._writing = False
        self.ended = asyncio.Event()
        loop.add_reader(self._in, self._readable)

    def send(self, batch: list[tuple[Any, ...]]) -> bool:
        """Hand ``batch`` to the process: False when it has ended or stopped reading."""
        if self._out is None or self.ended.is_set():
            return False
        self._unsent += encode_frame(batch)
        self._write()
        return True

    def _write(self) -> None:
        fd = self._out
        if fd is None:
            return
        try:
            written = os.write(fd, self._unsent)
        except BlockingIOError:
            written = 0
        except OSError:
            # the process ended: its output's end counts what it had as lost
            self._unsent.clear()
            self._stop_writing()
            return
        del self._unsent[:written]
        if self._unsent and not self._writing:
            self._loop.add_writer(fd, self._write)
            self._writing = True
        elif not self._unsent:
            self._stop_writing()

    def _stop_writing(self) -> None:
        if self._writing and self._out is not None:
            self._loop.remove_writer(self._out)
        self._writing = False

    def _readable(self) -> None:
        try:
            data = os.read(self._in, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._end()
            return
        self._received += data
        try:
            frames = take_frames(self._received)
        except Exception:  # not our frames: the candidate wrote to the pipe itself
            logger.exception("the shadow candidate's output could not be read")
            self.proc.kill()
            self._end()
            return
        for results in frames:
            self._answered(results)

    def _end(self) -> None:
        if self.ended.is_set():
            return
        self._loop.remove_reader(self._in)
        self._stop_writing()
        self._close_input()
        with contextlib.suppress(OSError):
            self.proc.stdout.close()  # type: ignore[union-attr]
        self.ended.set()
        self._ended_callback(self)

    def _close_input(self) -> None:
        if self._out is None:
            return
        self._stop_writing()
        self._out = None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]

    def reap(self) -> int:
        """The process's exit status; one whose output ended and that still runs is killed
        (it closed its output, so it can answer nothing more)."""
        if self.proc.poll() is None:
            self.proc.kill()
        return self.proc.wait()

    async def finish(self, wait: float) -> None:
        """End of input once what was sent is written: the process answers what it has and
        exits. Past ``wait`` seconds it is killed."""
        end = self._loop.time() + wait
        while self._unsent and not self.ended.is_set() and self._loop.time() < end:
            await asyncio.sleep(0.01)
        self._close_input()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ended.wait(), max(end - self._loop.time(), 0.0))
        if self.proc.poll() is None:
            self.proc.kill()
        await asyncio.to_thread(self.proc.wait)
        self._end()


_COUNTERS = {
    "agree": "agreed",
    "disagree": "disagreed",
    "timeout": "timed_out",
    "skipped": "skipped",
    "expired": "expired",
}


def audit_record(audit: AuditTrail) -> Callable[[ShadowResult], None]:
    """What records a candidate's answer in ``audit``: a ``kind: "shadow"`` record linked to
    the decision it shadowed (an answer the trail gave no id has none to link to)."""

    def record(result: ShadowResult) -> None:
        job = result.job
        if job.decision_id is None:
            return
        audit.record_shadow(
            job.decision_id,
            result.app,
            result.event_name,
            result.output,
            result.failed,
            result.invocations,
            result.end_ns,
            agrees=result.agrees,
            event=result.event,
            transport=job.transport,
            principal=job.principal,
        )

    return record


def _unreadable(answer: Answer) -> bool:
    return all(
        inv.error is not None and inv.error.startswith(UNREADABLE_MESSAGE)
        for inv in answer.invocations
    )
