"""``python -m bench.inproc --connections K``: K in-memory keep-alive connections loaded the way
wrk loads a server, so that up to K requests are in flight at once."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from bench import inproc
from bench.servers.baseline import app as baseline
from tests.support.processes import REPO

INPROC = [sys.executable, "-m", "bench.inproc"]


@pytest.mark.parametrize("connections", [1, 3, 8])
def test_each_connection_sends_its_next_request_once_answered(connections: int) -> None:
    # per request, as the app starts it: how many requests are received and not yet answered
    # (uvicorn's tasks, one per request)
    in_flight: list[int] = []

    async def noted(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        in_flight.append(len(driven.protocols[0].server_state.tasks))
        await baseline(scope, receive, send)

    async def load() -> None:
        nonlocal driven
        driven = inproc._Connections("baseline", noted, connections, inproc._request_bytes())
        await driven.load(connections)  # a warm-up: one request each
        await driven.load(4 * connections)

    driven: inproc._Connections
    asyncio.run(load())
    # every request answered (a deny each: the transport counts them), five per connection
    assert [protocol.transport.responses for protocol in driven.protocols] == [5] * connections
    # all sent at once, each connection's next once its answer is complete: whenever a
    # request starts, every connection has one in flight
    assert in_flight == [connections] * (5 * connections)


def test_handler_kit_is_loaded_over_many_connections() -> None:
    done = subprocess.run(
        [*INPROC, "handler_kit", "64", "--warmup=16", "--connections=16", "--collections"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("collections per 1,000 requests: gen0 "), done.stdout


def test_a_refused_connection_fails_the_run() -> None:
    async def refuse(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [(b"content-length", b"0"), (b"connection", b"close")],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    async def load() -> None:
        await inproc._Connections("baseline", refuse, 2, inproc._request_bytes()).load(4)

    with pytest.raises(SystemExit, match="connection 0 was closed"):
        asyncio.run(load())
