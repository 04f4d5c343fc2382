"""Servers for the tests, always stopped: ``handler-kit`` (or any command) as a subprocess in its
own process group, an ASGI app on uvicorn in a thread, and a throw-away ``redis-server``.

A HookApp that does not need a subprocess is served with :func:`handler_kit.testing.running_server`
directly; :func:`serve_asgi` is the same server for ASGI apps that are not a HookApp (the
dispatcher tests' scripted endpoint and MCP server).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from handler_kit.server.dev_tls import ensure_dev_certificate

REPO = Path(__file__).resolve().parents[2]
HANDLER_KIT = Path(sys.executable).parent / "handler-kit"
# uvicorn logs this once per worker when the worker can take connections
STARTED = "Application startup complete."
# uvicorn logs STARTED when the lifespan has started, before a single process listens; this
# line comes once the socket listens (from the supervisor, before its workers start)
LISTENING = "Uvicorn running on"
# Child processes a test runs at once (a batch of command hooks): two per core, so one's
# start-up overlaps another's wait, divided among the run's workers (pytest-xdist). More would
# only wait for each other, and a hook whose start-up is stretched past its deadline (counted
# from its spawn, as the runtime counts it) is answered by its watchdog, not by its handler.
PROCESSES_AT_ONCE = max(
    1, 2 * len(os.sched_getaffinity(0)) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without any handler-kit or example configuration."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("HANDLER_KIT_")
        and key
        not in (
            "REFUND_LIMIT",
            "RETURNS_POLICY",
            "TICKET_PATTERN",
            "HOST",
            "PORT",
            "PROMETHEUS_MULTIPROC_DIR",
        )
    }
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def serve_argv(target: str, port: int, *options: str) -> list[str]:
    return [str(HANDLER_KIT), "serve", target, "--host", "127.0.0.1", "--port", str(port), *options]


# -- subprocesses ---------------------------------------------------------------------------


class Process:
    """A subprocess whose combined output goes to a file, readable while it runs.

    It runs in its own process group, so :meth:`close` reaches uvicorn's worker processes too.
    """

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path = REPO) -> None:
        self.argv = argv
        self._log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 (closed in close())
        self.signalled = False
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        # pread, not seek + read: the children write through this same open file, so moving
        # its offset would make their next write land over what is already there
        fd = self._log.fileno()
        chunks, offset = [], 0
        while chunk := os.pread(fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks).decode("utf-8", "replace")

    def wait_for_output(self, needle: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.output()
            if needle in text:
                return text
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{needle!r} not printed; output so far:\n{self.output()}")

    def wait_healthy(self, url: str, verify: Any = True, timeout: float = 20.0) -> None:
        """Poll ``GET /healthz`` until it answers 200 (bounded; fails with the output)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if httpx.get(f"{url}/healthz", verify=verify, timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"server not healthy within {timeout} s:\n{self.output()}")

    def wait_started(self, workers: int = 1, timeout: float = 30.0) -> None:
        """Until every worker logged its start-up and the socket listens (so each can take
        connections)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited early:\n{self.output()}")
            output = self.output()
            if output.count(STARTED) >= workers and LISTENING in output:
                return
            time.sleep(0.05)
        raise AssertionError(f"server did not start within {timeout} s:\n{self.output()}")

    def signal_term(self) -> None:
        """SIGTERM to the server only (not its group), as a process manager stops it."""
        self.signalled = True
        self.proc.send_signal(signal.SIGTERM)

    def terminate(self, timeout: float = 30.0) -> bool:
        """SIGTERM (unless already sent), then wait: True when the server exited as a graceful
        shutdown does. uvicorn re-raises the signal once it has shut down gracefully, so a
        single process ends "killed by SIGTERM"; the multi-worker supervisor exits 0."""
        if self.proc.poll() is None and not self.signalled:
            self.signal_term()
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(self.proc)
            raise AssertionError(f"no graceful exit within {timeout} s:\n{self.output()}") from None
        if code not in (0, -signal.SIGTERM):
            raise AssertionError(f"exit code {code}:\n{self.output()}")
        return True

    def close(self) -> None:
        """Whatever is left of the process group is stopped, and the log removed."""
        stop_group(self.proc)
        self._log.close()


def stop_group(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM a process started with ``start_new_session=True`` and its group (uvicorn's
    workers), then SIGKILL what is left after 10 s: no test leaves a server behind."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait(timeout=10)


@contextlib.contextmanager
def process(argv: list[str], env: dict[str, str], cwd: Path = REPO) -> Iterator[Process]:
    """Run ``argv`` for the duration of the block; always stopped (terminate, then kill)."""
    proc = Process(argv, env, cwd)
    try:
        yield proc
    finally:
        proc.close()


@contextlib.contextmanager
def serve(
    target: str,
    *,
    port: int,
    env: dict[str, str],
    workers: int = 1,
    options: tuple[str, ...] = (),
) -> Iterator[Process]:
    """``handler-kit serve target --workers N`` on 127.0.0.1:port, run from the repository
    root, until every worker has started; stopped at the end if the test did not stop it."""
    argv = serve_argv(target, port, "--workers", str(workers), "--log-level", "info", *options)
    with process(argv, env) as server:
        server.wait_started(workers)
        yield server


# -- servers in a thread --------------------------------------------------------------------


@dataclass(frozen=True)
class Tls:
    """A throw-away CA and a server certificate for 127.0.0.1 and localhost."""

    ca_file: str
    cert_file: str
    key_file: str


@contextlib.contextmanager
def make_tls() -> Iterator[Tls]:
    """The same development CA the server's ``--dev-tls`` makes, in a temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        cert = ensure_dev_certificate(Path(folder))
        yield Tls(str(cert.ca_file), str(cert.cert_file), str(cert.key_file))


@contextlib.contextmanager
def serve_asgi(app: Any, tls: Tls | None) -> Iterator[int]:
    """Serve an ASGI app with uvicorn on a free 127.0.0.1 port in a background thread, the way
    :func:`handler_kit.testing.running_server` serves a HookApp; yields the port."""
    import uvicorn

    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    ssl = {"ssl_certfile": tls.cert_file, "ssl_keyfile": tls.key_file} if tls else {}
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2, **ssl)
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        for _ in range(1000):
            if server.started:
                break
            if not thread.is_alive():
                raise RuntimeError("test server failed to start")
            threading.Event().wait(0.01)
        else:
            raise RuntimeError("test server did not start within 10 s")
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


# -- redis-server ---------------------------------------------------------------------------


def redis_server_or_skip() -> str:
    """Path of redis-server; skip when it is absent, but fail in CI (CI must install it)."""
    found = shutil.which("redis-server")
    if found:
        return found
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("redis-server is not installed: .ci/run must install it (apt-get)")
    pytest.skip("redis-server is not installed (apt-get install redis-server)")


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throw-away ``redis-server`` on a free 127.0.0.1 port; yields its URL."""
    binary = redis_server_or_skip()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="hk-redis-") as folder:
        argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        argv += ["--appendonly", "no", "--dir", folder]
        with process(argv, os.environ.copy(), Path(folder)) as redis:
            for _ in range(200):
                if redis.proc.poll() is not None:
                    raise AssertionError(f"redis-server exited at start-up:\n{redis.output()}")
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
