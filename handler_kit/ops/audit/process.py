"""The audit writer process: builds, redacts, serializes and writes a server's audit records.

Why a process: building a record (ids, redaction, JSON) costs several times more CPU than
copying an answer's values, and a thread in the server would take that CPU, and the GIL, from
the event loop. One writer process per server worker does it on another core; the server
only writes :class:`~handler_kit.ops.audit.records.Capture` batches down a pipe
(:class:`AuditProcess`).

Protocol: frames (4-byte big-endian length + the message, :func:`encode_frame`) on the child's
stdin: ``("config", {...})`` first, then ``("batch", [Capture, ...])``, ``("flush",)``,
``("stop",)``. The child answers ``("flushed",)`` and ``("closed",)`` on a separate pipe (its
stdout stays the server's, for a ``stdout`` sink).

In the durable audit mode (``"durable"`` in the config) a batch is ``("batch", [Capture, ...],
last)``: the server sends the answers of one turn of its event loop in one or more frames as
they come (so the child builds their records while the server still answers the rest), the
turn's last frame with ``last`` True. The child builds each frame's records as it arrives; a
thread of its own (:class:`_Committer`) commits each turn's records to every sink as one write
(one transaction, one fsync), joined with every turn that ended while the last commit was in
progress (the group commit), and answers ``("committed", why, unbuilt)``: ``why`` None when
every sink committed the group, else why one did not; ``unbuilt``, a list per frame of the
group, the positions of the answers whose records could not be built (never committed).
``("probe",)`` (sinks that are down) writes an empty batch to each sink and answers ``("probed",
why)``, and ``("flush",)`` is answered once everything before it is committed: in order with the
commits. The server acknowledges an answer only after its frame's ``committed``.

End of input (the server died) counts as ``stop``: what was received is written. The child
ignores SIGINT/SIGTERM and runs in its own session: a Ctrl+C or a SIGTERM for the server must
not stop it before the server has handed over its last records.

It never outlives its server, whatever its sinks do (a ``jsonl:`` FIFO nobody reads blocks
``open()`` and ``write()`` for good, as can a hung database): a thread of the child watches
its parent, and once the server is gone gives the main thread :data:`ORPHAN_GRACE` seconds to
write what it received, then ends the process. The server, on its side, kills the writer's
process group when it does not answer ``stop`` in time (:meth:`AuditProcess.close`).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import marshal
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from handler_kit.ops.audit.records import write_all

if TYPE_CHECKING:
    from handler_kit.ops.audit.records import RecordPolicy

logger = logging.getLogger("handler_kit.audit")

LENGTH = struct.Struct(">I")
# a frame's length and its first byte, packed in one call
_HEAD = struct.Struct(">Ic")
# Durable mode: seconds a thread of the writer process holds the GIL while the other waits.
COMMITTER_SWITCH_INTERVAL = 0.0005
# Seconds the writer process has left to write what it received once its server is gone, and
# how often it looks whether the server is still there.
ORPHAN_GRACE = 3.0
PARENT_CHECK_INTERVAL = 0.25


class WriterFailed(Exception):
    """The writer process is gone or does not answer."""


# A frame's first byte says how its message is written: in marshal's format when it holds only
# values marshal writes (strings, bytes, numbers, None, booleans, tuples, lists and dicts of
# them, of exactly those types: a captured answer is), which costs a fraction of pickle's
# per object; otherwise (a handler's output holding another type) pickled. marshal writes any
# other object with the buffer interface (a bytearray, a memoryview) as bytes: a record holds
# such a value as it would hold its bytes. Both ends are this module, in processes of the same
# server: never a stored or foreign format.
_MARSHAL = b"m"
_PICKLE = b"p"


def encode_frame(message: Any) -> bytes:
    """One frame: 4-byte big-endian length, then the message (see :func:`decode`)."""
    try:
        data = marshal.dumps(message)
        kind = _MARSHAL
    except ValueError:  # a value of a type marshal does not write
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        kind = _PICKLE
    # one concatenation: the frame is copied once
    return _HEAD.pack(len(data) + 1, kind) + data


def decode(data: bytes | bytearray | memoryview) -> Any:
    """The message of a frame's payload (what follows its length); ``ValueError`` for bytes
    that are not one."""
    view = memoryview(data)
    kind = view[:1].tobytes()
    if kind == _MARSHAL:
        return marshal.loads(view[1:])
    if kind == _PICKLE:
        return pickle.loads(view[1:])
    raise ValueError(f"not a frame of the audit writer: first byte {kind!r}")


def write_frame(fd: int, message: Any) -> None:
    write_all(fd, encode_frame(message))


def take_frames(buffer: bytearray) -> list[Any]:
    """The whole frames at the start of ``buffer`` (bytes read so far from a non-blocking
    pipe), removed from it; a frame not yet whole stays for the next read."""
    messages = []
    start = 0
    end = len(buffer)
    view = memoryview(buffer)
    try:
        while end - start >= LENGTH.size:
            size = LENGTH.unpack_from(view, start)[0]
            if end - start - LENGTH.size < size:
                break
            start += LENGTH.size
            messages.append(decode(view[start : start + size]))
            start += size
    finally:
        view.release()
    del buffer[:start]
    return messages


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> Any | None:
    """The next message, or None at end of input."""
    header = _read_exactly(fd, LENGTH.size)
    if header is None:
        return None
    data = _read_exactly(fd, LENGTH.unpack(header)[0])
    return None if data is None else decode(data)


def writer_config(
    specs: Sequence[str],
    *,
    app: str,
    policy: RecordPolicy,
    durable: bool = False,
    events: Sequence[str] = (),
) -> dict[str, Any]:
    """The first frame's message to the writer process: its sinks, the record policy, and the
    app's events, whose models it builds before the first batch."""
    redactor = policy.redactor
    return {
        "sinks": list(specs),
        "app": app,
        "redact": [".".join(path) for path in redactor.paths],
        "secret_keys": redactor.secret_keys,
        "secret_values": redactor.secret_values,
        "max_chars": redactor.max_chars,
        # over the pipe, never in the environment or the command line
        "secrets": list(redactor.secrets),
        "tool_input": policy.tool_input,
        "text": policy.text,
        "full_input": policy.full_input,
        "app_version": policy.app_version,
        "replica": policy.replica,
        "durable": durable,
        # the app's events, whose models the process builds before the first batch
        "events": list(events),
    }


class AuditProcess:
    """The server side: starts the writer process and talks to it (from the writer thread)."""

    def __init__(
        self,
        specs: Sequence[str],
        *,
        app: str,
        policy: RecordPolicy,
        timeout: float = 10.0,
        durable: bool = False,
        events: Sequence[str] = (),
    ) -> None:
        from handler_kit.config import environment

        self.timeout = timeout
        # the folder handler_kit is imported from: the writer process must import the same one
        root = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 3))
        env = dict(environment())
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        ack_read, ack_write = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "handler_kit.ops.audit.process",
                    str(ack_write),
                    str(os.getpid()),
                ],
                stdin=subprocess.PIPE,
                pass_fds=(ack_write,),
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(ack_read)
            raise WriterFailed(f"cannot start: {exc}") from exc
        finally:
            os.close(ack_write)
        assert self.proc.stdin is not None
        self.fd = self.proc.stdin.fileno()
        self.acks = ack_read
        self._send(
            ("config", writer_config(specs, app=app, policy=policy, durable=durable, events=events))
        )

    def _send(self, message: Any) -> None:
        # write_frame, not called: this runs once per batch of answers, and each Python call
        # between the batch and os.write counts
        frame = encode_frame(message)
        try:
            write_all(self.fd, frame)
        except OSError as exc:  # BrokenPipeError: the process is gone
            raise WriterFailed(f"exited with {self.proc.poll()}: {exc}") from exc

    def _expect(self, answer: str) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WriterFailed(f"no {answer!r} within {self.timeout} s")
            ready, _, _ = select.select([self.acks], [], [], left)
            if ready:
                message = read_frame(self.acks)
                if message is None:
                    raise WriterFailed(f"exited with {self.proc.poll()} before {answer!r}")
                if message[0] == answer:
                    return

    def send(self, batch: Sequence[tuple[Any, ...]]) -> None:
        """One frame of captured answers, each a plain tuple (a NamedTuple pickles and
        unpickles through a Python call each)."""
        self._send(("batch", batch))

    def flush(self) -> None:
        """Return once everything sent so far is written (or the wait timed out: logged)."""
        try:
            self._send(("flush",))
            self._expect("flushed")
        except WriterFailed as exc:
            logger.error("audit writer process: %s", exc)

    def close(self) -> None:
        """Write everything sent, close the sinks, end the process."""
        try:
            self._send(("stop",))
            self._expect("closed")
        except WriterFailed as exc:
            # stuck in a sink (or gone): what it did not write by now, it will not
            logger.error("audit writer process: %s; ending it", exc)
            self.kill()
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(self.timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        with contextlib.suppress(OSError):
            os.close(self.acks)

    def kill(self) -> None:
        """End the writer process and whatever its sinks started (its process group: it
        leads a session of its own)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                with contextlib.suppress(OSError):
                    self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)


def _watch_parent(parent: int, grace: float, interval: float) -> None:
    """End this process ``grace`` seconds after ``parent`` (the server) is gone.

    End of input tells the main thread the server is gone, but only once it reads: a sink
    blocked in ``open()`` or ``write()`` would hold it, and the process, for good. Polling
    the parent works wherever the process is re-parented when its parent dies (POSIX); a
    parent-death signal would fire when the server *thread* that started the writer ends."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        time.sleep(grace)  # what was received may still be being written
        logger.error("the server is gone and the audit sinks still hold this writer: ending")
        os._exit(3)

    threading.Thread(target=watch, name="audit-parent-watch", daemon=True).start()


def main(argv: list[str]) -> int:
    """The writer process: ``python -m handler_kit.ops.audit.process ACK_FD``."""
    from handler_kit.ops.audit.records import parse_sinks

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    acks = int(argv[0])
    if len(argv) > 1:
        _watch_parent(int(argv[1]), ORPHAN_GRACE, PARENT_CHECK_INTERVAL)
    source = sys.stdin.fileno()
    first = read_frame(source)
    if first is None or first[0] != "config":
        return 2
    config = first[1]
    durable = bool(config.get("durable"))
    sinks = parse_sinks(config["sinks"], durable=durable)
    policy = _policy(config)
    app = config["app"]
    _each(sinks, "open", "could not be opened")
    _build_models(config.get("events", ()))
    # durable: the sinks are written by a thread of their own, which commits while this one
    # reads and builds the next group
    committer = _Committer(sinks, acks) if durable else None
    if committer is not None:
        # the committer takes the GIL back after each row and after the fsync: from a thread
        # building records it would wait up to the switch interval each time (5 ms by default)
        sys.setswitchinterval(COMMITTER_SWITCH_INTERVAL)
    # durable: what was built of the server's loop turn in progress (its last frame ends it)
    group: list[tuple[dict[str, Any], str]] = []
    group_unbuilt: list[list[int]] = []
    frames = _Frames(source)
    while True:
        message = frames.next()
        if committer is not None and (message is None or message[0] != "batch"):
            if group_unbuilt:  # the end of input ended the turn: written all the same
                committer.commit(group, group_unbuilt)
                group, group_unbuilt = [], []
            if message is not None and message[0] in ("flush", "probe"):
                committer.put(message)  # answered in order, after the commits before it
                continue
        if message is None or message[0] == "stop":
            break
        if message[0] == "flush":
            write_frame(acks, ("flushed",))
            continue
        if message[0] == "probe":
            write_frame(acks, ("probed", _commit(sinks, [])))
            continue
        lines, unbuilt = _built(message[1], app, policy)
        if committer is not None:
            group += lines
            group_unbuilt.append(unbuilt)
            # the last frame of the server's turn (a frame without the mark is one turn):
            # its answers are a group; groups handed over while a commit is in progress
            # are committed together
            if len(message) < 3 or message[2]:
                committer.commit(group, group_unbuilt)
                group, group_unbuilt = [], []
            continue
        if lines:
            _each(sinks, "write", f"failed to write {len(lines)} records", lines)
    if committer is not None:
        committer.stop()
    _each(sinks, "close", "failed to close")
    with contextlib.suppress(OSError):
        write_frame(acks, ("closed",))
    return 0


def _each(sinks: Sequence[Any], method: str, failure: str, *args: Any) -> None:
    """Call ``method`` of every sink; a sink that fails is logged and the others go on."""
    for sink in sinks:
        try:
            getattr(sink, method)(*args)
        except Exception:
            logger.exception("audit sink %r %s", sink, failure)


def _policy(config: dict[str, Any]) -> RecordPolicy:
    """The record policy the server sent in its first frame."""
    from handler_kit.ops.audit.records import RecordPolicy, Redactor

    return RecordPolicy(
        redactor=Redactor(
            config["redact"],
            secret_keys=config["secret_keys"],
            secret_values=config["secret_values"],
            max_chars=config["max_chars"],
            secrets=config["secrets"],
        ),
        tool_input=config["tool_input"],
        text=config["text"],
        full_input=config["full_input"],
        app_version=config["app_version"],
        replica=config["replica"],
    )


def _build_models(events: Sequence[str]) -> None:
    """Build the models of the app's events, and their codecs, now. Their schemas are
    deferred, and the record of a webhook's answer validates its body with its event's model
    (the input's text and digest): the first answer of each event would pay for the build (and
    for pydantic's first validator, its plugins looked up), in durable mode inside that answer's
    commit."""
    from handler_kit.core.events import model_for
    from handler_kit.ops.keys import codec

    for name in events:
        codec(model_for(name))


def _built(
    batch: Sequence[Any], app: str, policy: RecordPolicy
) -> tuple[list[tuple[dict[str, Any], str]], list[int]]:
    """The record lines of a batch of captured answers, and the positions in it of those whose
    record could not be built (logged; durable mode answers them as not written)."""
    from handler_kit.ops.audit.records import record_lines

    lines: list[tuple[dict[str, Any], str]] = []
    unbuilt: list[int] = []
    for position, item in enumerate(batch):
        try:
            lines.extend(record_lines(item, app, policy))
        except Exception:
            logger.exception("could not build an audit record")
            unbuilt.append(position)
    return lines, unbuilt


class _Frames:
    """The frames of the server's pipe, read in chunks: the frames that wait in the pipe
    cost one read between them, not two each."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()

    def next(self) -> Any | None:
        """The next message, or None at end of input."""
        buffer = self.buffer
        while True:
            if len(buffer) >= LENGTH.size:
                end = LENGTH.size + LENGTH.unpack_from(buffer)[0]
                if len(buffer) >= end:
                    message = decode(buffer[LENGTH.size : end])
                    del buffer[:end]
                    return message
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            buffer += chunk


class _Committer:
    """Durable mode: the thread that commits the groups the process builds, in order, and
    answers the server for each (``("committed", why, unbuilt)``, ``("probed", why)``,
    ``("flushed",)``).

    While it waits for a commit (the disk's fsync), the process goes on reading and building
    the next groups; when the commit is done, every group handed over meanwhile is committed
    as one (one transaction, one fsync), so groups grow with the load and the CPU work
    overlaps the waits. From its start, only this thread writes to the sinks and the
    acknowledgement pipe.
    """

    def __init__(self, sinks: Sequence[Any], acks: int) -> None:
        self.sinks = sinks
        self.acks = acks
        self.queue: collections.deque[tuple[Any, ...] | None] = collections.deque()
        self.ready = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="audit-commit", daemon=True)
        self.thread.start()

    def put(self, item: tuple[Any, ...] | None) -> None:
        with self.ready:
            self.queue.append(item)
            self.ready.notify()

    def commit(self, lines: list[tuple[dict[str, Any], str]], unbuilt: list[list[int]]) -> None:
        """Commit ``lines``, then answer for the frames they came in (``unbuilt``: one list
        per frame, the positions of its answers whose records could not be built)."""
        self.put(("commit", lines, unbuilt))

    def stop(self) -> None:
        """Commit and answer everything handed over, then end the thread."""
        self.put(None)
        self.thread.join()

    def _take(self) -> tuple[Any, ...] | None:
        """The next item; consecutive groups joined into one commit."""
        queue = self.queue
        with self.ready:
            while not queue:
                self.ready.wait()
            item = queue.popleft()
            if item is None or item[0] != "commit" or not queue:
                return item
            lines, unbuilt = list(item[1]), list(item[2])
            while queue and queue[0] is not None and queue[0][0] == "commit":
                more = queue.popleft()
                assert more is not None
                lines += more[1]
                unbuilt += more[2]
            return ("commit", lines, unbuilt)

    def _run(self) -> None:
        while True:
            item = self._take()
            if item is None:
                return
            if item[0] == "commit":
                answer: tuple[Any, ...] = (
                    "committed",
                    _commit(self.sinks, item[1]) if item[1] else None,
                    item[2],
                )
            elif item[0] == "probe":
                answer = ("probed", _commit(self.sinks, []))
            else:
                answer = ("flushed",)
            # the server gone, nobody waits for the answer; what is handed over is written
            with contextlib.suppress(OSError):
                write_frame(self.acks, answer)


def _commit(sinks: Sequence[Any], lines: list[tuple[dict[str, Any], str]]) -> str | None:
    """Durable mode: write ``lines`` to every sink (each commits them before it returns); why
    one failed, or None. The server logs it (at most every so often: a sink that is down fails
    every commit)."""
    why = None
    for sink in sinks:
        try:
            sink.write(lines)
        except Exception as exc:
            text = " ".join(str(exc).split())
            why = f"{sink!r}: {type(exc).__name__}: {text}" if text else f"{sink!r}: {exc!r}"
    return why


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
