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
  server's event loop wait, which the shadow benchmark showed as a many-fold p99. A sender
  thread wakes once per batch (every 10 ms at most) to pickle it down a pipe; a reader thread
  counts and records the results.
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
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from handler_kit.core.names import Status
from handler_kit.core.vocabulary import UNREADABLE_MESSAGE, Answer
from handler_kit.ops.audit.capture import DECISION_ID
from handler_kit.ops.audit.process import read_frame, write_frame
from handler_kit.shadow.process import handler_view

if TYPE_CHECKING:
    from handler_kit.ops.audit.trail import AuditTrail
    from handler_kit.ops.metrics import Metrics

__all__ = ["Shadow", "ShadowResult", "ShadowStats", "audit_record"]

logger = logging.getLogger("handler_kit.shadow")

# How long a graceful shutdown gives the candidate to answer what it has.
CLOSE_WAIT = 2.0
# The sender, woken by an answer, waits this long for more, and sends up to BATCH at once.
BATCH_WAIT = 0.01
BATCH = 256
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
    __slots__ = ("answer", "at", "decision_id", "principal", "route", "transport")

    def __init__(
        self,
        answer: Answer,
        route: str | None,
        decision_id: str | None,
        transport: str,
        principal: str | None,
    ) -> None:
        self.answer = answer
        self.route = route
        self.decision_id = decision_id
        self.transport = transport
        self.principal = principal
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

    ``record``: called on a shadow thread with each :class:`ShadowResult` (the audit trail's
    shadow record); ``metrics``: the server's, counting agreements per handler and shed work.
    ``queue_size`` bounds the answers handed over and not yet answered by the candidate.
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
        # handed over by the answer path, not yet sent (appended on the server's loop, taken
        # by the sender thread: a deque needs no lock for that)
        self._waiting: collections.deque[_Job] = collections.deque()
        # sent to the candidate and not answered yet, by sequence number
        self._sent: dict[int, _Job] = {}
        self._seq = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sender: threading.Thread | None = None
        self._reader: threading.Thread | None = None
        self._closed = False

    # -- the answer path (the server's event loop): take note, then hand over ----------------

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
            pending.job = _Job(
                answer, route, context.get(DECISION_ID), transport, context.get("principal")
            )
            return
        self._submit(
            _Job(answer, route, context.get(DECISION_ID), transport, context.get("principal"))
        )

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
        if self._sender is None:
            self.start()
        if len(self._waiting) + len(self._sent) >= self.queue_size:
            self.stats.shed += 1
            if self.metrics is not None:
                self.metrics.shadow_shed("queue_full")
            return
        self._waiting.append(job)
        if len(self._waiting) == 1:
            self._wake.set()

    # -- the shadow threads and process -------------------------------------------------------

    def start(self) -> None:
        """Start the candidate's process and the two threads that talk to it (idempotent;
        the first submission starts them too)."""
        with self._lock:
            if self._sender is not None or self._closed:
                return
            self._spawn()
            self._sender = threading.Thread(
                target=self._send, name="handler-kit-shadow-sender", daemon=True
            )
            self._sender.start()

    def _spawn(self) -> None:
        """A candidate process, and the thread reading its results."""
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "handler_kit.shadow", self.spec],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self._reader = threading.Thread(
            target=self._read, args=(self._proc,), name="handler-kit-shadow-reader", daemon=True
        )
        self._reader.start()

    def close(self, wait: float = CLOSE_WAIT) -> None:
        """Stop taking answers; give the candidate ``wait`` seconds to answer what it has,
        then end its process (a candidate that holds it is killed)."""
        with self._lock:
            self._closed = True
        self._wake.set()
        end = time.monotonic() + wait
        if self._sender is not None:
            self._sender.join(max(end - time.monotonic(), 0.0))
        proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()  # end of input: it exits once it has answered
        try:
            proc.wait(max(end - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._reader is not None:
            self._reader.join(1.0)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """The server's lifespan context: the process started with it, ended at shutdown."""
        self.start()
        try:
            yield
        finally:
            await asyncio.to_thread(self.close)

    def _send(self) -> None:
        """The sender thread: batches of what the answer path handed over, to the candidate."""
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closed and not self._waiting:
                return
            # what arrives meanwhile goes with it: one wake-up and one write per batch
            time.sleep(BATCH_WAIT)
            while self._waiting:
                batch: list[tuple[Any, ...]] = []
                while self._waiting and len(batch) < BATCH:
                    job = self._waiting.popleft()
                    self._seq += 1
                    try:
                        batch.append(self._plain(self._seq, job))
                    except Exception:  # an output the comparison cannot render: not sent
                        logger.exception("a shadow answer could not be handed over")
                        continue
                    with self._lock:
                        self._sent[self._seq] = job
                if batch and not self._write(batch):
                    return

    def _plain(self, seq: int, job: _Job) -> tuple[Any, ...]:
        answer = job.answer
        name = answer.event.hook_event_name
        views = [handler_view(inv, name) for inv in answer.invocations]
        deadline = job.at + self.timeout
        return (seq, answer.event, job.route, answer.output, answer.failed, views, deadline)

    def _write(self, batch: list[tuple[Any, ...]]) -> bool:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.poll() is not None:
            self._lost([job[0] for job in batch])
            return not self._closed
        try:
            write_frame(proc.stdin.fileno(), batch)
        except OSError:
            self._lost([job[0] for job in batch])
        return True

    def _lost(self, seqs: list[int]) -> None:
        """Sent to a candidate process that ended: counted as shed (``lost``)."""
        with self._lock:
            for seq in seqs:
                self._sent.pop(seq, None)
            self.stats.lost += len(seqs)
        if self.metrics is not None:
            for _ in seqs:
                self.metrics.shadow_shed("lost")

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        """The reader thread: the candidate's results, counted and recorded. When the process
        ends (the candidate crashed it, or ran out of memory), what it had is lost (counted),
        and a new one takes the next answers."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while True:
            try:
                results = read_frame(fd)
            except (OSError, EOFError, ValueError):
                results = None
            if results is None:
                break
            for result in results:
                with self._lock:
                    job = self._sent.pop(result[0], None)
                if job is not None:
                    self._result(job, result)
        code = proc.wait()
        with self._lock:
            lost = list(self._sent)
            closed = self._closed
        if lost:
            self._lost(lost)
        if not closed:
            logger.error(
                "the shadow candidate's process (%s) ended with status %s; a new one takes "
                "the next answers",
                self.spec,
                code,
            )
            # not at once: a candidate that dies as it starts must not make a busy loop
            time.sleep(RESPAWN_WAIT)
            with self._lock:
                if not self._closed:
                    self._spawn()

    def _result(self, job: _Job, result: tuple[Any, ...]) -> None:
        _, kind, agrees, per_handler, output, failed, values, end_ns = result
        event_name = job.answer.event.hook_event_name
        counter = _COUNTERS[kind]
        with self._lock:
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
