"""Durable commit: an answer is sent only once its records are committed.

The acknowledgements of the durable audit trail (:class:`~handler_kit.ops.audit.trail.AuditTrail`
with ``durable=True``): :class:`Pending` (an answer waiting for its commit, for the writer
thread) and :class:`Channel` (the event loop itself talking to the writer process). Each
answer's acknowledgement is the future it was given (:attr:`Observed.ack
<handler_kit.ops.audit.capture.Observed.ack>`), settled with the outcome of its commit.
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from handler_kit.ops.audit.capture import capture

# imported once, here: an import statement of a module, run again per frame, costs a failed
# ``__path__`` lookup with its formatted exception each time
from handler_kit.ops.audit.process import LENGTH, AuditProcess, decode, encode_frame
from handler_kit.ops.audit.records import write_all

if TYPE_CHECKING:
    import asyncio

    from handler_kit.ops.audit.capture import Ack, Observed
    from handler_kit.ops.audit.records import Capture
    from handler_kit.ops.audit.trail import AuditTrail

logger = logging.getLogger("handler_kit.audit")

# Seconds between two probes of sinks that are down, so a server with no traffic (a load
# balancer stops sending it any while it is not ready) finds them back up.
PROBE_INTERVAL = 0.5

# Durable mode: answers of one event-loop turn that go to the writer process at once, so it
# builds their records while the loop answers the rest of the turn; each next frame of the
# turn is twice as large (a busy turn costs a few frames, not one per few answers).
FIRST_FRAME = 4
# how early the event loop may run a timer (it runs those due within its clock's resolution)
_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution


def acknowledge(group: list[Pending], ok: bool) -> None:
    """Resolve the futures of ``group`` on their event loops (from the writer thread)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[bool]]] = {}
    for pending in group:
        by_loop.setdefault(pending.loop, []).append(pending.future)
    for loop, futures in by_loop.items():
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody waits there
            loop.call_soon_threadsafe(_settle, futures, ok)


@dataclass(slots=True)
class Pending:
    """Durable mode: an answer waiting for its commit, and how to tell its answer path."""

    item: Observed | Capture
    future: asyncio.Future[bool]
    loop: asyncio.AbstractEventLoop


def running_loop() -> asyncio.AbstractEventLoop:
    import asyncio

    return asyncio.get_running_loop()


def running_loop_or_none() -> asyncio.AbstractEventLoop | None:
    try:
        return running_loop()
    except RuntimeError:
        return None


def _settle(futures: list[asyncio.Future[bool]], ok: bool) -> None:
    """On the event loop: tell each waiting answer path how its commit went."""
    for future in futures:
        if not future.done():  # a path that stopped waiting (deadline, disconnect) cancelled it
            future.set_result(ok)


class Channel:
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
        self.trail = trail
        self.loop = loop
        self.process = AuditProcess(
            trail.specs, app=trail.app, policy=trail.policy, durable=True, events=trail.events
        )
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

    def submit(self, item: Observed | Capture) -> Ack:
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
        batch.append(captured)  # a plain tuple already
        self.futures.append(future)
        self.counts.append(1)  # one record per answer
        self.waiting += 1
        if len(batch) >= self.frame_size:
            self.frame_size *= 2
            self._send(False)
        return future

    def _send(self, last: bool = True) -> None:
        """Hand the answers captured since the last frame to the process; ``last``: the
        turn's answers end here (what the process commits as a group)."""
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
            message = decode(inbox[LENGTH.size : LENGTH.size + size])
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
                write_all(self.fd, bytes(self.out))
                self.out.clear()
        self.process.close()
