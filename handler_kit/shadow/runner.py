"""The shadow runner: a candidate app answers every event again, after the real answer is sent.

What the candidate may never do is change or delay an answer, so it shares nothing with the
answer path but a bounded queue:

- the server's observer only takes note of the answer (references: no copying, no I/O); the
  server's outer layer hands the note to the runner once the route has sent its answer
  (:meth:`Shadow.begin` and :meth:`Shadow.flush` around the route), with a ``put_nowait`` on a
  bounded queue. A full queue sheds the note and counts it: at saturation the candidate falls
  behind, the server does not.
- the candidate runs on threads of its own, each with its own event loop (the server's loop
  never runs candidate code), and its sync handlers on the candidate app's own handler threads.
  A candidate that raises answers by its failure policy, as it would if enforced; one that
  hangs is cut off by its handlers' deadlines and by :attr:`Shadow.timeout` (waiting in the
  queue included); one that blocks its thread outright holds that thread only, and the queue
  sheds what comes after.
- the candidate answers a copy of the event, so nothing it does reaches the enforced answer's
  record, which may still be being written.

Handlers marked ``idempotent=True`` have side effects (a ticket filed, an approval sent): a
candidate answer that would run one is not run (counted as ``skipped``), since a shadow must not
act. Python runs one thread at a time: a candidate that spins the CPU without releasing it
takes interpreter time from the server like any thread of the process (docs say so).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from handler_kit.core.names import Status
from handler_kit.core.vocabulary import UNREADABLE_MESSAGE, Answer, Handler
from handler_kit.shadow.compare import answers_agree, handler_agreements

if TYPE_CHECKING:
    from handler_kit.core.app import HookApp
    from handler_kit.core.events import HookEvent
    from handler_kit.ops.metrics import Metrics

__all__ = ["Shadow", "ShadowResult", "ShadowStats"]

logger = logging.getLogger("handler_kit.shadow")

# The key under which the audit trail's observer leaves the decision id in the context every
# observer of the answer is handed.
DECISION_ID = "handler_kit.decision_id"

# How long a graceful shutdown gives the shadow threads to finish what is queued.
CLOSE_WAIT = 2.0


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
    """One candidate answer compared with the enforced one (what a record of it is made from)."""

    __slots__ = ("agrees", "answer", "decision_id", "end_ns", "handlers", "principal", "transport")

    def __init__(
        self,
        answer: Answer,
        agrees: bool,
        handlers: list[tuple[str, bool]],
        decision_id: str | None,
        transport: str,
        principal: str | None,
    ) -> None:
        self.answer = answer
        self.agrees = agrees
        self.handlers = handlers
        self.decision_id = decision_id
        self.transport = transport
        self.principal = principal
        self.end_ns = time.time_ns()


class ShadowStats:
    """Counts since start: what the candidate answered and what it did not."""

    __slots__ = ("agreed", "disagreed", "errors", "expired", "shed", "skipped", "timed_out")

    def __init__(self) -> None:
        self.agreed = 0
        self.disagreed = 0
        self.shed = 0  # the queue was full
        self.expired = 0  # waited in the queue past the deadline
        self.timed_out = 0  # ran past the deadline
        self.skipped = 0  # would have run a handler with side effects
        self.errors = 0  # the runner itself failed (a bug): logged

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class Shadow:
    """Runs ``candidate`` on every answer the server's app gives, off the answer path.

    ``record``: called on a shadow thread with each :class:`ShadowResult` (the audit trail's
    shadow record); ``metrics``: the server's, counting agreements per handler and shed work.
    """

    def __init__(
        self,
        candidate: HookApp,
        *,
        threads: int = 1,
        queue_size: int = 1000,
        timeout: float = 5.0,
        metrics: Metrics | None = None,
        record: Callable[[ShadowResult], None] | None = None,
    ) -> None:
        # the candidate is served as the server serves its app: a KeyboardInterrupt a handler
        # raises is its failure, not the end of a shadow thread
        self.candidate = candidate.extended(interrupt_fails=True)
        self.name = candidate.name
        self.threads = threads
        self.timeout = timeout
        self.metrics = metrics
        self.record = record
        self.stats = ShadowStats()
        self._queue: queue.Queue[_Job | None] = queue.Queue(queue_size)
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
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
        if not self._workers:
            if self._closed:
                return
            self.start()
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            self.stats.shed += 1
            if self.metrics is not None:
                self.metrics.shadow_shed("queue_full")

    # -- the shadow threads -----------------------------------------------------------------

    def start(self) -> None:
        """Start the shadow threads (idempotent; the first submission starts them too)."""
        with self._lock:
            if self._workers or self._closed:
                return
            for number in range(self.threads):
                thread = threading.Thread(
                    target=self._work, name=f"handler-kit-shadow-{number}", daemon=True
                )
                thread.start()
                self._workers.append(thread)

    def close(self, wait: float = CLOSE_WAIT) -> None:
        """Stop taking answers; give the threads ``wait`` seconds to finish what is queued. A
        thread a candidate holds is left behind (a daemon: it does not keep the process)."""
        with self._lock:
            self._closed = True
            workers = list(self._workers)
        end = time.monotonic() + wait
        for _ in workers:
            with contextlib.suppress(queue.Full):
                self._queue.put(None, timeout=max(end - time.monotonic(), 0.0))
        for thread in workers:
            thread.join(max(end - time.monotonic(), 0.0))

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """The server's lifespan context: threads started with it, stopped at shutdown."""
        self.start()
        try:
            yield
        finally:
            await asyncio.to_thread(self.close)

    def _work(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            while True:
                job = self._queue.get()
                if job is None:
                    return
                try:
                    loop.run_until_complete(self._answer(job))
                except Exception:
                    with self._lock:
                        self.stats.errors += 1
                    logger.exception("the shadow runner failed on an answer")
        finally:
            loop.close()

    async def _answer(self, job: _Job) -> None:
        left = self.timeout - (time.monotonic() - job.at)
        if left <= 0:
            self._count("expired")
            if self.metrics is not None:
                self.metrics.shadow_shed("expired")
            return
        enforced = job.answer
        event: HookEvent = enforced.event.model_copy(deep=True)
        handlers = self._handlers(job.route, event)
        name = event.hook_event_name
        if any(handler.idempotent for handler in handlers):
            self._count("skipped")
            if self.metrics is not None:
                self.metrics.shadow_answer(name, "skipped", ())
            return
        try:
            async with asyncio.timeout(left):
                answer = await self.candidate.answer(event, handlers, transport="shadow")
        except TimeoutError:
            self._count("timed_out")
            if self.metrics is not None:
                self.metrics.shadow_answer(name, "timeout", ())
            return
        agrees = answers_agree(enforced, answer)
        per_handler = handler_agreements(name, enforced.invocations, answer.invocations)
        self._count("agreed" if agrees else "disagreed")
        if self.metrics is not None:
            self.metrics.shadow_answer(name, "agree" if agrees else "disagree", per_handler)
        if self.record is not None:
            self.record(
                ShadowResult(
                    answer, agrees, per_handler, job.decision_id, job.transport, job.principal
                )
            )

    def _handlers(self, route: str | None, event: HookEvent) -> Sequence[Handler]:
        """The candidate's handlers for the request: its handler of the route's name (paired
        by name, as the route would be served by the candidate), or every matching one."""
        if route is None:
            return self.candidate.matching(event)
        handler = self.candidate.by_name.get(route)
        if (
            handler is None
            or handler.event != event.hook_event_name
            or not handler.matches(event.matcher_value())
        ):
            return []
        return [handler]

    def _count(self, what: str) -> None:
        with self._lock:
            setattr(self.stats, what, getattr(self.stats, what) + 1)


def _unreadable(answer: Answer) -> bool:
    return all(
        inv.error is not None and inv.error.startswith(UNREADABLE_MESSAGE)
        for inv in answer.invocations
    )
