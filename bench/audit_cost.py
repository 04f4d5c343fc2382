"""Deterministic cost of recording one answer in the audit trail (jsonl), in process.

``python -m bench.audit_cost server|writer N`` runs N batches of 64 distinct refund-gate
answers (each its own tool_use_id, session, order and amount: a realistic batch, since pickle
memoizes a repeated object and the redactor caches repeated strings) through one side of the
audit pipeline:

* ``server``: what the server's writer thread does per batch: capture each observed answer and
  encode the batch frame it writes down the pipe;
* ``writer``: what the audit writer process does per frame: decode, build the records,
  serialize them and write the JSON lines to a file (``O_APPEND``, one write per batch).

``--instructions`` runs it under ``valgrind --tool=callgrind`` between the same markers as
``bench/inproc.py`` and prints instructions per answer; ``--time`` prints the best of 7 timed
loops (CPU time, indicative only on a shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench.callgrind import counted
from bench.payload import EVENT

BATCH = 64


def observed(count: int) -> list[Any]:
    """``count`` distinct answers of the refund gate, observed as the webhook observes them."""
    os.environ.setdefault("HANDLER_KIT_APP", "example_servers.refund_gate:app")
    from example_servers.refund_gate import app
    from handler_kit.core.events import PreToolUse
    from handler_kit.ops.audit.trail import Observed

    async def answers() -> list[tuple[Any, bytes]]:
        out = []
        for i in range(count):
            # the body as the webhook received it: what the record digests
            body = json.dumps(
                {
                    **EVENT,
                    "session_id": f"sess-{i % 7}",
                    "tool_use_id": f"toolu_{i:08d}",
                    "tool_input": {"order_id": str(4821 + i), "amount": 300 + (i * 37) % 700},
                }
            ).encode()
            event = PreToolUse.model_validate_json(body)
            out.append((await app.answer(event), body))
        return out

    # the fields a version before them has not: the body, and that the event is its validation
    slots = set(getattr(Observed, "__slots__", ()))
    return [
        Observed(
            answer=answer,
            transport="webhook",
            principal="token#1",
            traceparent=None,
            end_ns=time.time_ns() + i * 1_000_000,
            pid=os.getpid(),
            **{
                name: value
                for name, value in (("body", body), ("event_from_body", True))
                if name in slots
            },
        )
        for i, (answer, body) in enumerate(asyncio.run(answers()))
    ]


def policy() -> Any:
    from handler_kit.ops.audit.records import RecordPolicy

    return RecordPolicy(replica="bench:1")


class _Pipe:
    """Stands in for the writer process: keeps the frame ``AuditProcess.send`` writes."""

    frame = b""

    def _send(self, message: Any) -> None:
        from handler_kit.ops.audit.process import encode_frame

        self.frame = encode_frame(message)


def server_side(batches: list[list[Any]]) -> list[bytes]:
    """What the writer thread does per batch: capture, then ``AuditProcess.send``."""
    from handler_kit.ops.audit.process import AuditProcess
    from handler_kit.ops.audit.trail import capture

    pipe = _Pipe()
    frames = []
    for batch in batches:
        AuditProcess.send(pipe, [capture(item) for item in batch])  # type: ignore[arg-type]
        frames.append(pipe.frame)
    return frames


def writer_side(frames: list[bytes], folder: str) -> None:
    import pickle

    from handler_kit.ops.audit import records as R

    sink = R.JsonLinesSink(os.path.join(folder, "audit.jsonl"))
    sink.open()
    settings = policy()
    # the writer process's own loop (process.main), or the one of a version before it
    record_lines = getattr(R, "record_lines", None)
    # what the sink reads of the records (process.main does the same)
    record_keys = R.record_keys_of([sink]) if hasattr(R, "record_keys_of") else None
    # the frame's format as the writer process reads it, or pickle (a version before it)
    from handler_kit.ops.audit import process

    decode = getattr(process, "decode", pickle.loads)
    for frame in frames:
        message = decode(frame[4:])
        lines = []
        for item in message[1]:
            if record_keys is not None:
                lines.extend(record_lines(item, "refund_gate", settings, record_keys=record_keys))
            elif record_lines is not None:
                lines.extend(record_lines(item, "refund_gate", settings))
            else:
                lines.extend(R.serialize(R.records(item, "refund_gate", settings)))
        sink.write(lines)
    sink.close()


def batches_of(count: int) -> list[list[Any]]:
    items = observed(BATCH * count)
    return [items[i * BATCH : (i + 1) * BATCH] for i in range(count)]


def frames_file(path: str, count: int) -> None:
    """``count`` frames of 64 distinct answers each, as the server sends them, saved to
    ``path``."""
    import pickle

    frames = server_side(batches_of(count))
    with open(path, "wb") as out:
        pickle.dump(frames, out)


def run(side: str, count: int, timed: bool) -> None:
    import pickle

    with tempfile.TemporaryDirectory() as folder:
        if side == "server":
            batches = batches_of(count)
        else:
            # made in another process: the writer process imports nothing of the server, and
            # its heap (what the garbage collector walks) is as small as here
            path = os.path.join(folder, "frames.pickle")
            subprocess.run(
                [sys.executable, "-m", "bench.audit_cost", "frames", str(count), f"--out={path}"],
                check=True,
            )
            from handler_kit.ops.audit import process  # noqa: F401  (what the writer imports)

            with open(path, "rb") as saved:
                frames = pickle.load(saved)

        def once() -> None:
            if side == "server":
                server_side(batches)
            else:
                writer_side(frames, folder)

        once()  # warm-up: imports (each run has its own redactor: no string seen before)
        if timed:
            best = float("inf")
            for _ in range(7):
                began = time.process_time()
                once()
                best = min(best, time.process_time() - began)
            print(f"{side}: best of 7: {best / (count * BATCH) * 1e6:.2f} us CPU per answer")
            return
        os.getppid()
        once()
        os.getpgrp()


def instructions(side: str, count: int) -> float:
    return counted(["bench.audit_cost", side, str(count)]) / (count * BATCH)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.audit_cost")
    parser.add_argument("side", choices=("server", "writer", "frames"))
    parser.add_argument("batches", type=int)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--time", action="store_true", help="best of 7 (indicative only)")
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side == "frames":
        frames_file(args.out, args.batches)
        return
    if args.instructions:
        per = instructions(args.side, args.batches)
        print(f"{args.side}: {per:,.0f} instructions per answer")
        return
    run(args.side, args.batches, args.time)


if __name__ == "__main__":
    main()
