"""Deterministic cost of one webhook request: N requests through the real ASGI app in-process.

``python -m bench.inproc handler_kit 20000`` builds the app the way ``handler-kit serve``
does (``app_from_env`` with ``HANDLER_KIT_APP`` and ``HANDLER_KIT_TOKENS``), runs its lifespan,
then sends N ``POST /hooks/refund_gate`` requests straight to the ASGI callable with a scope,
``receive`` and ``send`` shaped like uvicorn's (no sockets, no HTTP parser); ``baseline`` does
the same for ``bench/servers/baseline.py``. Nothing else runs in the process, so the work done
per request is the same on every run, whatever the machine's load: that is what to compare
while optimising (req/s on a shared box moves by 2x between minutes).

Two ways to read it:

* ``--profile``: cProfile of the N requests (call counts are exact, times are indicative);
* under ``valgrind --tool=callgrind``: instructions. Run it twice, with N and with 0 requests,
  and divide the difference by N (``bench/README.md`` has the commands); this is what
  ``--instructions`` automates.
* ``--opcodes``: Python bytecodes executed per request, by module, between the same markers
  (``sys.settrace`` opcode events; exact and the same on every run). The server's CPU time per
  request follows them more closely than it follows instructions: an instruction of the
  interpreter's own loop costs more time than one of a C parser's (``bench/README.md``,
  "Where the wall time goes").

``--connections K`` (with or without ``--protocol``) loads K in-memory keep-alive connections
the way wrk does: each connection has its own transport and protocol instance, as uvicorn
makes per socket; all send at once and each sends its next request when its answer is
complete, so up to K requests are in flight (``--collections`` prints the garbage collector's
runs between the markers). Without it, one connection and one request at a time, as every
figure before it: the two drivers' own costs differ (``bench/README.md``).

``--mcp`` sends the same event as the MCP ``tools/call`` a real mcp 2.3 client sends
(``POST /mcp`` with ``bench.payload.MCP_HEADERS`` and ``MCP_BODY``) to the same app instead.

``--audit SINK`` turns the audit trail on (``jsonl``, ``sqlite``, ``durable``) so the cost of
recording an answer is counted too (the writer thread is in-process and counted with it).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import os
import tempfile
from typing import Any

from bench.callgrind import counted
from bench.payload import EVENT_BODY, MCP_BODY, MCP_HEADERS, TOKEN

APP = "example_servers.refund_gate:app"
PATH = "/hooks/refund_gate"
_ROUTE = PATH  # the handler's own route; ``--path=/hooks`` sends the same request to the other
MCP_PATH = "/mcp"
COLLECTIONS = False  # --collections: count the collector's runs between the markers


def _target(mcp: bool) -> tuple[str, list[tuple[bytes, bytes]], bytes]:
    """Path, headers (as uvicorn lists them, lower-case, in the client's order) and body.

    The webhook's are made again for every request, as they always were here (the figures
    in bench/README.md include that); the MCP ones are made once and copied."""
    if not mcp:
        return _make_target(False)
    found = _TARGETS.get(mcp)
    if found is None:
        found = _TARGETS[mcp] = _make_target(mcp)
    return found


def _make_target(mcp: bool) -> tuple[str, list[tuple[bytes, bytes]], bytes]:
    if mcp:
        headers = [
            (b"host", b"127.0.0.1:8000"),
            *((k.lower().encode(), v.encode()) for k, v in MCP_HEADERS.items()),
            (b"content-length", str(len(MCP_BODY)).encode()),
        ]
        return MCP_PATH, headers, MCP_BODY
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"authorization", f"Bearer {TOKEN}".encode()),
        (b"content-type", b"application/json"),
        (b"x-runbear-hook-event", b"PreToolUse"),
        (b"content-length", str(len(EVENT_BODY)).encode()),
    ]
    return PATH, headers, EVENT_BODY


_TARGETS: dict[bool, tuple[str, list[tuple[bytes, bytes]], bytes]] = {}


def _scope(mcp: bool = False) -> dict[str, Any]:
    path, headers, _ = _target(mcp)
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        # a new list per request, as uvicorn makes one
        "headers": list(headers) if mcp else headers,
        "state": {},
    }


def _build(side: str, audit: str | None, folder: str) -> Any:
    if side == "baseline":
        from bench.servers.baseline import app

        return app
    os.environ["HANDLER_KIT_APP"] = APP
    os.environ["HANDLER_KIT_TOKENS"] = TOKEN
    if audit is not None:
        if audit == "durable":
            os.environ["HANDLER_KIT_AUDIT"] = f"sqlite:{folder}/audit.db"
            os.environ["HANDLER_KIT_AUDIT_DURABLE"] = "1"
        elif audit == "sqlite":
            os.environ["HANDLER_KIT_AUDIT"] = f"sqlite:{folder}/audit.db"
        else:
            os.environ["HANDLER_KIT_AUDIT"] = f"jsonl:{folder}/audit.jsonl"
    from handler_kit.server.app import app_from_env

    return app_from_env()


async def _drive(app: Any, requests: int, warmup: int, mcp: bool = False) -> list[bytes]:
    body_message = {"type": "http.request", "body": _target(mcp)[2], "more_body": False}
    sent: list[bytes] = []

    async def receive() -> dict[str, Any]:
        return body_message

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message["body"])

    for _ in range(warmup):
        await app(_scope(mcp), receive, send)
    del sent[:]
    # markers for callgrind (--zero-before=getppid --dump-before=getpgrp): the measured part
    os.getppid()
    for _ in range(requests):
        # a new scope per request, as uvicorn makes one
        await app(_scope(mcp), receive, send)
    os.getpgrp()
    return sent


async def _timed(app: Any, requests: int, warmup: int, mcp: bool = False) -> list[bytes]:
    import time

    best = float("inf")
    sent: list[bytes] = []
    for _ in range(7):
        began = time.perf_counter()
        sent = await _drive(app, requests, warmup, mcp)
        best = min(best, time.perf_counter() - began)
    print(f"best of 7: {best / requests * 1e6:.2f} us per request")
    return sent


async def _run(
    app: Any,
    side: str,
    requests: int,
    warmup: int,
    profile: bool,
    timed: bool = False,
    protocol: bool = False,
    mcp: bool = False,
    connections: int | None = None,
) -> list[bytes]:
    lifespan = getattr(app, "lifespan", None)
    if connections is not None:
        if side == "baseline" or lifespan is None:
            return await _drive_connections(side, app, requests, warmup, mcp, connections)
        async with lifespan():
            return await _drive_connections(side, app, requests, warmup, mcp, connections)
    if protocol:
        if side == "baseline" or lifespan is None:
            return await _drive_protocol(side, app, requests, warmup, mcp)
        async with lifespan():
            return await _drive_protocol(side, app, requests, warmup, mcp)
    if side == "baseline" or lifespan is None:
        if timed:
            return await _timed(app, requests, warmup, mcp)
        return await _drive(app, requests, warmup, mcp)
    async with lifespan():
        if timed:
            return await _timed(app, requests, warmup, mcp)
        if not profile:
            return await _drive(app, requests, warmup, mcp)
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        await _drive(app, 0, warmup, mcp)
        profiler.enable()
        sent = await _drive(app, requests, 0, mcp)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(40)
        return sent


def run(
    side: str,
    requests: int,
    *,
    warmup: int,
    audit: str | None,
    profile: bool,
    timed: bool = False,
    protocol: bool = False,
    mcp: bool = False,
    connections: int | None = None,
) -> None:
    if mcp and side == "baseline":
        raise SystemExit("--mcp: the baseline has no MCP endpoint (plain SDK: bench/servers)")
    gc.collect()
    with tempfile.TemporaryDirectory() as folder:
        app = _build(side, audit, folder)
        try:
            import uvloop

            runner = uvloop.run
        except ImportError:
            runner = asyncio.run
        sent = runner(_run(app, side, requests, warmup, profile, timed, protocol, mcp, connections))
    if requests and (
        len(sent) != requests or b"deny" not in sent[-1] or b'"isError":true' in sent[-1]
    ):
        raise SystemExit(f"{side}: unexpected answers: {len(sent)} {sent[-1:]!r}")


class _Transport:
    """The socket's side of a connection, in memory: what the protocol writes is counted."""

    def __init__(self, done: Any, port: int = 50000) -> None:
        self.done = done
        self.closing = False
        self.responses = 0
        self.peername = ("127.0.0.1", port)

    def write(self, data: bytes) -> None:
        if b'"isError":true' in data:
            raise SystemExit(f"unexpected answer: {data!r}")
        if b"deny" in data or data.startswith(b"HTTP/1.1 4") or data.startswith(b"HTTP/1.1 5"):
            self.responses += 1
            self.done()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": self.peername, "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def set_protocol(self, protocol: Any) -> None:
        pass


def _request_bytes(mcp: bool = False) -> bytes:
    if mcp:
        lines = "".join(f"{k}: {v}\r\n" for k, v in MCP_HEADERS.items())
        head = (
            f"POST {MCP_PATH} HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nConnection: keep-alive\r\n"
            f"{lines}Content-Length: {len(MCP_BODY)}\r\n\r\n"
        )
        return head.encode() + MCP_BODY
    head = (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nX-Runbear-Hook-Event: PreToolUse\r\n"
        f"Content-Length: {len(EVENT_BODY)}\r\n\r\n"
    )
    return head.encode() + EVENT_BODY


def _protocol_factory(side: str, app: Any) -> Any:
    """A new connection's protocol, as each server makes one per socket: the stock one and
    options for the baseline, handler-kit's subclass with ``handler-kit serve``'s options."""
    import uvicorn
    from uvicorn.server import ServerState

    loop = asyncio.get_running_loop()
    if side == "baseline":
        config = uvicorn.Config(app, http="httptools", access_log=False, lifespan="off")
    else:
        from handler_kit.config import ServeConfig
        from handler_kit.server._protocols import protocol_class

        serve = ServeConfig.from_env()
        config = uvicorn.Config(
            app,
            access_log=False,
            lifespan="off",
            proxy_headers=False,
            server_header=False,
            limit_concurrency=serve.max_connections,
            timeout_keep_alive=serve.keep_alive_timeout,
            http=protocol_class(
                keep_alive=serve.keep_alive_timeout,
                head_timeout=serve.header_timeout,
                max_head_bytes=serve.max_header_bytes,
                max_unanswered=serve.unanswered_per_address(),
            ),
        )
    config.load()
    # one server state for all of a worker's connections (its connection and task sets)
    state = ServerState()

    def connection() -> Any:
        return config.http_protocol_class(  # type: ignore[call-arg]
            config=config, server_state=state, app_state={}, _loop=loop
        )

    return connection


async def _drive_protocol(
    side: str, app: Any, requests: int, warmup: int, mcp: bool = False
) -> list[bytes]:
    """Requests as bytes into uvicorn's protocol (the one each server runs: the stock one for
    the baseline, handler-kit's subclass with ``handler-kit serve``'s options), one
    keep-alive connection, one request at a time: HTTP parsing, the ASGI cycle, the app."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] | None = None

    def done() -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    transport = _Transport(done)
    protocol = _protocol_factory(side, app)()
    protocol.connection_made(transport)
    data = _request_bytes(mcp)

    async def one() -> None:
        nonlocal waiter
        waiter = loop.create_future()
        protocol.data_received(data)
        await waiter
        # the cycle's end (on_response_complete) runs after the last write
        await asyncio.sleep(0)

    for _ in range(warmup):
        await one()
    os.getppid()
    for _ in range(requests):
        await one()
    os.getpgrp()
    return [b"deny"] * requests


class _Connections:
    """``connections`` keep-alive connections loaded the way wrk loads a server: each sends
    its next request once its answer is complete, so up to ``connections`` requests are in
    flight. The next request arrives in a later pass of the event loop (``call_soon``), as a
    socket's bytes do: the loop's pass over its ready callbacks serves the answers of every
    connection whose request came in the pass before."""

    def __init__(self, side: str, app: Any, connections: int, data: bytes) -> None:
        self.loop = asyncio.get_running_loop()
        self.data = data
        self.to_send = 0
        self.to_answer = 0
        self.finished: asyncio.Future[None] | None = None
        new = _protocol_factory(side, app)
        self.protocols = []
        for number in range(connections):
            # a port of its own each, as a client's sockets have
            transport = _Transport(functools.partial(self._answered, number), 50000 + number)
            protocol = new()
            protocol.connection_made(transport)
            self.protocols.append(protocol)

    async def load(self, requests: int) -> None:
        """Send ``requests`` requests over the connections and wait for every answer."""
        self.to_send, self.to_answer = requests, requests
        self.finished = self.loop.create_future()
        for protocol in self.protocols[:requests]:
            self.to_send -= 1
            protocol.data_received(self.data)
        if requests:
            await self.finished
        # the last cycles' end (on_response_complete, the tasks' done callbacks)
        await asyncio.sleep(0)

    def _answered(self, number: int) -> None:
        self.to_answer -= 1
        if self.to_send:
            self.to_send -= 1
            self.loop.call_soon(self._send, number)
        elif not self.to_answer and self.finished is not None:
            self.finished.set_result(None)

    def _send(self, number: int) -> None:
        protocol = self.protocols[number]
        if protocol.transport.is_closing():  # refused (a 4xx or 5xx answer), or closed
            if self.finished is not None and not self.finished.done():
                self.finished.set_exception(SystemExit(f"connection {number} was closed"))
            return
        protocol.data_received(self.data)


class _Collections:
    """The cyclic collector's runs by generation between the markers (``--collections``):
    printed per 1,000 requests, with the objects each generation held when it ran."""

    def __init__(self) -> None:
        self.runs = [0, 0, 0]
        self.walked = [0, 0, 0]
        gc.callbacks.append(self._count)

    def _count(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            generation = info["generation"]
            self.runs[generation] += 1
            # what this collection walks: its generation and the younger ones
            self.walked[generation] += sum(len(gc.get_objects(g)) for g in range(generation + 1))

    def stop(self, requests: int) -> None:
        gc.callbacks.remove(self._count)
        per = 1000 / max(requests, 1)
        each = [walked / max(runs, 1) for walked, runs in zip(self.walked, self.runs, strict=True)]
        runs = ", ".join(
            f"gen{g} {self.runs[g] * per:.1f} ({each[g]:,.0f} objects)" for g in range(3)
        )
        print(f"collections per 1,000 requests: {runs}; {len(gc.get_objects(2)):,} in gen2")


async def _drive_connections(
    side: str, app: Any, requests: int, warmup: int, mcp: bool, connections: int
) -> list[bytes]:
    """:func:`_drive_protocol` over ``connections`` connections at once (:class:`_Connections`)."""
    load = _Connections(side, app, connections, _request_bytes(mcp))
    await load.load(warmup)
    counts = _Collections() if COLLECTIONS else None
    os.getppid()
    await load.load(requests)
    os.getpgrp()
    if counts is not None:
        counts.stop(requests)
    if any(protocol.transport.is_closing() for protocol in load.protocols):
        raise SystemExit(f"{side}: a connection was closed")
    return [b"deny"] * requests


def opcodes(
    side: str,
    requests: int,
    protocol: bool,
    mcp: bool,
    audit: str | None,
    connections: int | None = None,
) -> None:
    """Print the Python opcodes per request, in all and by module (the most first); the
    harness's own (this module's in-memory socket) are left out. Those of the thread that
    serves (the event loop's): with ``audit``, the trail's writer thread is not counted."""
    import collections
    import sys

    counts: collections.Counter[str] = collections.Counter()

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == __file__:
            return None  # the harness (its in-memory socket), not the server
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[frame.f_code.co_filename] += 1
        return tracer

    # the markers of the measured part switch the tracer on and off
    marks = os.getppid, os.getpgrp
    os.getppid = lambda: sys.settrace(tracer)  # type: ignore[assignment,misc,func-returns-value]
    os.getpgrp = lambda: sys.settrace(None)  # type: ignore[assignment,misc,func-returns-value]
    try:
        run(
            side,
            requests,
            warmup=200,
            audit=audit,
            profile=False,
            protocol=protocol,
            mcp=mcp,
            connections=connections,
        )
    finally:
        os.getppid, os.getpgrp = marks
    print(f"{side} {PATH}: {sum(counts.values()) / requests:,.0f} opcodes per request")
    for filename, count in counts.most_common(20):
        where = filename.split("site-packages/")[-1].removeprefix(os.getcwd() + os.sep)
        print(f"{count / requests:8.1f}  {where}")


def instructions(
    side: str,
    requests: int,
    audit: str | None,
    warmup: int,
    protocol: bool = False,
    mcp: bool = False,
    connections: int | None = None,
) -> float:
    """Instructions per request under callgrind, counted between the two markers only."""
    argv = ["bench.inproc", side, str(requests), f"--warmup={warmup}"]
    if connections is not None:
        argv.append(f"--connections={connections}")
    if audit:
        argv.append(f"--audit={audit}")
    if protocol:
        argv.append("--protocol")
    if mcp:
        argv.append("--mcp")
    if PATH != _ROUTE:
        argv.append(f"--path={PATH}")
    return counted(argv) / requests


def main(argv: list[str] | None = None) -> None:
    global PATH, COLLECTIONS
    parser = argparse.ArgumentParser(prog="python -m bench.inproc")
    parser.add_argument("side", choices=("handler_kit", "baseline"))
    parser.add_argument("requests", type=int)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--audit", choices=("jsonl", "sqlite", "durable"))
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument(
        "--opcodes", action="store_true", help="Python opcodes per request, by module"
    )
    parser.add_argument(
        "--time", action="store_true", help="best of 7 timed loops (indicative only)"
    )
    parser.add_argument(
        "--protocol",
        action="store_true",
        help="send request bytes through uvicorn's HTTP protocol (as each server runs it)",
    )
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="send the MCP tools/call a real client sends (POST /mcp) instead of the webhook's",
    )
    parser.add_argument(
        "--connections",
        type=int,
        metavar="K",
        help="K keep-alive connections at once, each sending its next request when its answer "
        "is complete (as wrk does): up to K requests in flight (implies --protocol)",
    )
    parser.add_argument(
        "--collections",
        action="store_true",
        help="with --connections: print the garbage collector's runs per 1,000 requests",
    )
    parser.add_argument(
        "--path",
        default=PATH,
        help="the webhook route to send to: /hooks/refund_gate (default) or /hooks",
    )
    args = parser.parse_args(argv)
    if args.connections is not None and args.connections < 1:
        parser.error("--connections must be at least 1")
    PATH = args.path
    COLLECTIONS = args.collections
    if args.opcodes:
        opcodes(args.side, args.requests, args.protocol, args.mcp, args.audit, args.connections)
        return
    if args.instructions:
        per = instructions(
            args.side,
            args.requests,
            args.audit,
            args.warmup,
            args.protocol,
            args.mcp,
            args.connections,
        )
        where = "protocol+app" if args.protocol else "app"
        if args.connections is not None:
            where = f"protocol+app, {args.connections} connections"
        what = " mcp" if args.mcp else f" {PATH}" if args.side == "handler_kit" else ""
        print(f"{args.side}{what} audit={args.audit} {where}: {per:,.0f} instructions per request")
        return
    run(
        args.side,
        args.requests,
        warmup=args.warmup,
        audit=args.audit,
        profile=args.profile,
        timed=args.time,
        protocol=args.protocol,
        mcp=args.mcp,
        connections=args.connections,
    )


if __name__ == "__main__":
    main()
