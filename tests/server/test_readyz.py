"""``/readyz``, readiness beside ``/healthz`` (liveness): 200 ``{"status": "ready"}`` while the
server should get traffic, a 503 with a JSON body once it is shutting down (and, with the
durable audit trail, while its sinks are down: tests/ops/test_durable_audit.py). No token,
like ``/healthz``."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from handler_kit import HookApp, PreToolUse
from handler_kit.config import Extension, OperationsConfig, ServerConfig
from handler_kit.ops.audit.records import JsonLinesSink
from handler_kit.server import create_asgi_app
from handler_kit.testing import running_server
from tests.support.http import TOKEN, error_body


def small_app() -> HookApp:
    hooks = HookApp("readyz")

    @hooks.pre_tool_use()
    async def nothing(event: PreToolUse) -> None:
        return None

    return hooks


def test_readyz_answers_ready_without_a_token() -> None:
    with (
        running_server(small_app(), config=ServerConfig(tokens=[TOKEN])) as server,
        httpx.Client(base_url=server.url, timeout=10) as anonymous,
    ):
        ready = anonymous.get("/readyz")
        assert ready.status_code == 200
        assert ready.headers["content-type"] == "application/json"
        assert ready.json() == {"status": "ready"}
        assert anonymous.head("/readyz").status_code == 200
        error_body(anonymous.post("/readyz"), 405, "method_not_allowed")
        # every other route still wants the token
        assert anonymous.post("/hooks", json={}).status_code == 401


def test_readyz_says_503_once_the_server_is_shutting_down() -> None:
    """uvicorn stops accepting connections when it is told to stop, so the window is seen
    here from inside: the app's lifespan is shutting down (an extension still closing) and a
    request comes in, as it would through a server that keeps its connections open."""
    closing = asyncio.Event()
    release = asyncio.Event()

    @contextlib.asynccontextmanager
    async def slow_to_close() -> AsyncIterator[None]:
        yield
        closing.set()
        await release.wait()

    config = ServerConfig(tokens=[TOKEN], extensions=(Extension(lifespan=slow_to_close),))
    asgi = create_asgi_app(small_app(), config)

    async def scenario() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=asgi)
        started, stop = asyncio.Event(), asyncio.Event()

        async def serve() -> None:  # the lifespan as a server runs it, in one task
            async with asgi.lifespan():
                started.set()
                await stop.wait()

        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            server = asyncio.create_task(serve())
            await asyncio.wait_for(started.wait(), 10)
            before = await client.get("/readyz")
            stop.set()
            await asyncio.wait_for(closing.wait(), 10)
            during = await client.get("/readyz")
            release.set()
            await asyncio.wait_for(server, 10)
            return before, during

    before, during = asyncio.run(scenario())
    assert before.status_code == 200 and before.json() == {"status": "ready"}
    assert during.status_code == 503
    assert during.headers["content-type"] == "application/json"
    body = during.json()
    assert body["status"] == "not_ready" and body["reason"] == "draining"
    assert isinstance(body["message"], str) and body["message"]


# -- the durable audit trail: not ready before its sinks have committed -----------------------


class UnwritableSink:
    """A sink that cannot take a single record (a full disk, a read-only volume)."""

    def __init__(self) -> None:
        self.writes: list[int] = []

    def open(self) -> None:
        pass

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        self.writes.append(len(records))
        raise OSError(30, "Read-only file system")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_durable_readyz_is_503_from_the_start_when_the_sink_cannot_commit(
    tmp_path: Path, writer: str
) -> None:
    """No answer is needed to find the sink down: the server probes it (an empty commit) as it
    starts, and says 503 until a commit succeeds."""
    sink = UnwritableSink()
    if writer == "process":  # a jsonl "file" that is a folder: no open() for writing
        (tmp_path / "audit.jsonl").mkdir()
        operations = OperationsConfig(
            audit=[f"jsonl:{tmp_path / 'audit.jsonl'}"], audit_durable=True
        )
    else:
        operations = OperationsConfig(audit_sinks=[sink], audit_durable=True)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    with (
        running_server(small_app(), config=config) as server,
        httpx.Client(base_url=server.url, timeout=10) as anonymous,
    ):
        for _ in range(3):
            down = anonymous.get("/readyz")
            assert down.status_code == 503, down.text
            assert down.json() == {
                "status": "not_ready",
                "reason": "audit_unavailable",
                "message": "the audit sinks are down; the server log says why",
            }
            time.sleep(0.2)
    if writer == "thread":
        assert sink.writes and set(sink.writes) == {0}  # probed, and nothing else


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_durable_readyz_is_200_from_the_start_when_the_sink_commits(
    tmp_path: Path, writer: str
) -> None:
    jsonl = tmp_path / "audit.jsonl"
    if writer == "process":
        operations = OperationsConfig(audit=[f"jsonl:{jsonl}"], audit_durable=True)
    else:
        sink = JsonLinesSink(str(jsonl), durable=True)
        operations = OperationsConfig(audit_sinks=[sink], audit_durable=True)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    with (
        running_server(small_app(), config=config) as server,
        httpx.Client(base_url=server.url, timeout=10) as anonymous,
    ):
        # the start-up waited for the probe: ready at once, and the probe made the file
        assert anonymous.get("/readyz").json() == {"status": "ready"}
        assert jsonl.exists()
