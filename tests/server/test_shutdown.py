"""Graceful shutdown: on SIGTERM the server stops accepting, lets in-flight requests finish,
and flushes the audit trail before it exits.

No timing assumptions: the slow handler of ``tests.support.apps.ops`` answers only once the
test creates its release file, so a request stays in flight exactly as long as the test needs.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.apps import OPS_APP
from tests.support.http import TOKEN, send_many
from tests.support.payloads import pre_tool_use, read_jsonl
from tests.support.processes import Process, clean_env, free_port, serve


def _wait_for(predicate: Any, what: str, server: Process, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}:\n{server.output()}")


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return False
    except OSError:
        return True


def _env(tmp_path: Path) -> dict[str, str]:
    return clean_env(
        HANDLER_KIT_TOKENS=TOKEN,
        HANDLER_KIT_AUDIT=f"jsonl:{tmp_path / 'audit.jsonl'}",
        OPS_STARTED=str(tmp_path / "started"),
        OPS_RELEASE=str(tmp_path / "release"),
    )


def _in_flight(port: int, count: int) -> tuple[threading.Thread, list[Any]]:
    """Send ``count`` slow requests from a thread (each on its own connection)."""
    results: list[Any] = []
    bodies = [pre_tool_use("slow_tool", f"tu-slow-{i}") for i in range(count)]

    def run() -> None:
        url = f"http://127.0.0.1:{port}/hooks"
        results.extend(
            asyncio.run(send_many(url, bodies, concurrency=count, fresh_connections=True))
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, results


def test_sigterm_finishes_in_flight_requests_and_flushes_the_audit(tmp_path: Path) -> None:
    port = free_port()
    with serve(OPS_APP, port=port, env=_env(tmp_path)) as server:
        # some answered requests, whose records are queued when the signal arrives
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            for i in range(20):
                done = http.post(
                    f"http://127.0.0.1:{port}/hooks", json=pre_tool_use("whoami", f"tu-{i}")
                )
                assert done.status_code == 200
        thread, results = _in_flight(port, 3)
        _wait_for(lambda: _lines(tmp_path / "started") == 3, "3 requests in flight", server)
        server.signal_term()
        _wait_for(lambda: "Waiting for connections to close" in server.output(), "drain", server)
        _wait_for(lambda: _refused(port), "the listening socket to close", server)
        assert thread.is_alive(), "the in-flight requests are still being answered"
        (tmp_path / "release").touch()
        thread.join(30)
        assert server.terminate()
    assert [r.status_code for r in results] == [200, 200, 200]
    for response in results:
        output = json.loads(response.content)["hookSpecificOutput"]
        assert output["permissionDecisionReason"] == "slow but done"
    answers = [r for r in read_jsonl(tmp_path / "audit.jsonl") if r["kind"] == "decision"]
    assert len(answers) == 23  # every answer, the in-flight ones included
    assert len({r["event_id"] for r in answers}) == 23


def test_sigterm_with_two_workers_loses_nothing(tmp_path: Path) -> None:
    port = free_port()
    with serve(OPS_APP, port=port, workers=2, env=_env(tmp_path)) as server:
        thread, results = _in_flight(port, 6)
        _wait_for(lambda: _lines(tmp_path / "started") == 6, "6 requests in flight", server)
        server.signal_term()
        _wait_for(
            lambda: server.output().count("Waiting for connections to close") >= 1,
            "a worker to drain",
            server,
        )
        (tmp_path / "release").touch()
        thread.join(30)
        assert server.terminate()
    assert [getattr(r, "status_code", r) for r in results] == [200] * 6
    answers = [r for r in read_jsonl(tmp_path / "audit.jsonl") if r["kind"] == "decision"]
    assert len(answers) == 6
