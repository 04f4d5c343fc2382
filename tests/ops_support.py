"""Helpers of the operations tests: ``handler-kit serve`` subprocesses (always stopped), a
real ``redis-server`` on a free loopback port, load over many connections.

Plain functions and context managers, not fixtures, so nothing leaks into other test files.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from core_support import clean_env, free_port

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
HANDLER_KIT = Path(sys.executable).parent / "handler-kit"
TOKEN = "ops-test-token-0123456789abcdef"
OLD_TOKEN = "ops-old-token-fedcba9876543210"
STARTED = "Application startup complete."
# Loading the CA bundle once, not once per client.
_SSL_CONTEXT = ssl.create_default_context()


class Server:
    """A ``handler-kit serve`` (or other) subprocess whose output goes to a file."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.argv = argv
        self.log = Path(tempfile.mkstemp(prefix="hk-serve-", suffix=".log")[1])
        self._log_fh = self.log.open("wb")
        self.signalled = False
        # its own process group: close() reaches uvicorn's worker processes too
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdout=self._log_fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_started(self, workers: int = 1, timeout: float = 30.0) -> None:
        """Until every worker logged its start-up (so each can take connections)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited early:\n{self.output()}")
            if self.output().count(STARTED) >= workers:
                return
            time.sleep(0.05)
        raise AssertionError(f"server did not start within {timeout} s:\n{self.output()}")

    def terminate(self, timeout: float = 30.0) -> bool:
        """SIGTERM (unless already sent), then wait: True when the server exited as a graceful
        shutdown does. uvicorn re-raises the signal once it has shut down gracefully, so a
        single process ends "killed by SIGTERM"; the multi-worker supervisor exits 0."""
        if self.proc.poll() is None and not self.signalled:
            self.signal_term()
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill_group()
            raise AssertionError(f"no graceful exit within {timeout} s:\n{self.output()}") from None
        if code not in (0, -signal.SIGTERM):
            raise AssertionError(f"exit code {code}:\n{self.output()}")
        return True

    def signal_term(self) -> None:
        self.signalled = True
        self.proc.send_signal(signal.SIGTERM)

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)

    def close(self) -> None:
        """Whatever is left of the server (workers included) is killed."""
        self._kill_group()
        self._log_fh.close()
        self.log.unlink(missing_ok=True)


@contextlib.contextmanager
def serve(
    target: str,
    *,
    port: int,
    workers: int = 1,
    env: dict[str, str] | None = None,
    cwd: Path = REPO,
    options: tuple[str, ...] = (),
) -> Iterator[Server]:
    """``handler-kit serve target --workers N`` on 127.0.0.1:port, started; killed at the end
    if the test did not stop it."""
    argv = [
        str(HANDLER_KIT),
        "serve",
        target,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--log-level",
        "info",
        *options,
    ]
    server = Server(argv, env if env is not None else clean_env(HANDLER_KIT_TOKENS=TOKEN), cwd)
    try:
        server.wait_started(workers)
        yield server
    finally:
        server.close()


def pre_tool_use(tool_name: str, tool_use_id: str, **tool_input: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "sess-ops",
        "tool_name": tool_name,
        "tool_use_id": tool_use_id,
        "tool_input": tool_input,
    }


async def send_many(
    url: str,
    bodies: list[dict[str, Any]],
    *,
    concurrency: int,
    fresh_connections: bool = False,
    per_connection: int | None = None,
    headers: dict[str, str] | None = None,
) -> list[httpx.Response | BaseException]:
    """POST each body to ``url`` over ``concurrency`` connections (bounded), in order of the
    list; failures are returned, not raised. ``fresh_connections``: a new connection per
    request; ``per_connection=N``: a new connection after N requests. Both let the kernel
    spread connections over the workers (a worker's accept loop may take a whole burst of
    new connections, so a fixed set of 20 can all land on one worker).

    One client per connection: httpcore's shared pool scans every connection for every
    request, which made the client, not the server, the bottleneck of these tests.
    """
    base_headers = {"Authorization": f"Bearer {TOKEN}", **(headers or {})}
    limits = httpx.Limits(
        max_connections=1, max_keepalive_connections=0 if fresh_connections else 1
    )
    results: list[httpx.Response | BaseException] = [None] * len(bodies)  # type: ignore[list-item]
    payloads = [json.dumps(body) for body in bodies]
    next_index = 0

    def new_client() -> httpx.AsyncClient:
        return httpx.AsyncClient(
            limits=limits, timeout=30.0, headers=base_headers, verify=_SSL_CONTEXT
        )

    async def worker() -> None:
        nonlocal next_index
        client = new_client()
        sent = 0
        try:
            while next_index < len(payloads):
                index = next_index
                next_index += 1
                if per_connection and sent == per_connection:
                    await client.aclose()
                    client, sent = new_client(), 0
                sent += 1
                try:
                    results[index] = await client.post(url, content=payloads[index])
                except Exception as exc:  # counted as a failed request by the caller
                    results[index] = exc
        finally:
            await client.aclose()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return results


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a JSON-lines file that may be being written (a last line without
    its newline is not there yet)."""
    if not path.exists():
        return []
    complete = path.read_text(encoding="utf-8").split("\n")[:-1]
    return [json.loads(line) for line in complete if line]


# -- redis-server ---------------------------------------------------------------------------


def redis_server_or_skip() -> str:
    """Path of redis-server; skip when it is absent, but fail in CI (CI must install it)."""
    found = shutil.which("redis-server")
    if found:
        return found
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("redis-server is not installed: .ci/run must install it (apt-get)")
    pytest.skip("redis-server is not installed (apt-get install redis-server)")
    raise AssertionError  # unreachable


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throw-away ``redis-server`` on a free 127.0.0.1 port; yields its URL."""
    binary = redis_server_or_skip()
    port = free_port()
    folder = tempfile.mkdtemp(prefix="hk-redis-")
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            folder,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        for _ in range(200):
            if proc.poll() is not None:
                raise AssertionError("redis-server exited at start-up")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock,
            ):
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    break
            time.sleep(0.025)
        else:
            raise AssertionError("redis-server did not answer PING within 5 s")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
