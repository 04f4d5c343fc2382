"""Subprocess plumbing: free ports, CPU pinning, servers that are always cleaned up."""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """preexec_fn: ``sig`` for this child when its parent dies (the bench process killed by a
    timeout, say)."""
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, sig)  # PR_SET_PDEATHSIG


class Pinning:
    """Server on one core, load generator on another, when the box has two and taskset exists."""

    def __init__(self, enabled: bool) -> None:
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        self.enabled = bool(enabled and len(cpus) >= 2 and shutil.which("taskset"))
        self.server_cpu = str(cpus[0]) if self.enabled else None
        self.loadgen_cpu = str(cpus[1]) if self.enabled else None

    def server(self, argv: list[str]) -> list[str]:
        return ["taskset", "-c", self.server_cpu, *argv] if self.enabled else argv

    def loadgen(self, argv: list[str]) -> list[str]:
        return ["taskset", "-c", self.loadgen_cpu, *argv] if self.enabled else argv

    def describe(self) -> str:
        if not self.enabled:
            return "off"
        return f"server cpu {self.server_cpu}, load generator cpu {self.loadgen_cpu}"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def handler_kit_argv() -> list[str]:
    """``handler-kit`` as installed next to this interpreter, else ``python -m handler_kit``."""
    script = Path(sys.executable).with_name("handler-kit")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "handler_kit"]


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()  # fields from 3 (state) on; comm may hold spaces


def _processes() -> dict[int, tuple[int, int]]:
    """Every process's (parent pid, utime + stime ticks), from Linux's /proc (empty without)."""
    found: dict[int, tuple[int, int]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                fields = _stat(int(entry.name))
                if fields:
                    found[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return found


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    return [child for child, (parent, _) in _processes().items() if parent == pid]


def tree_cpu_seconds(root: int) -> float | None:
    """utime + stime of ``root`` and every live descendant, or None without /proc."""
    processes = _processes()
    if root not in processes:
        return None
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += processes[pid][1] if pid in processes else 0
        todo.extend(child for child, (parent, _) in processes.items() if parent == pid)
    return total / _TICKS


class ServerError(RuntimeError):
    pass


class Server:
    """One server subprocess on 127.0.0.1; ``stop()`` is safe to call more than once."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        port: int,
        *,
        health: str,
        env: dict[str, str] | None = None,
        log_dir: Path,
    ) -> None:
        self.name = name
        self.argv = argv
        self.port = port
        self.health = health  # "tcp" or an HTTP path answered 200 when ready
        self.env = child_env(env)
        self.log_path = log_dir / f"{name}.log.tmp"
        self.proc: subprocess.Popen | None = None
        self._terminated = False

    def start(self, timeout: float = 30.0) -> None:
        self.spawn()
        self.wait_ready(timeout)

    def spawn(self) -> None:
        """Start the process without waiting for it: servers spawned together start up on
        every core at once (``wait_ready`` then waits for each)."""
        self._terminated = False
        log = self.log_path.open("wb")
        try:
            self.proc = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        finally:
            log.close()

    def wait_ready(self, timeout: float = 30.0) -> None:
        assert self.proc is not None, "spawn() first"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(
                    f"{self.name} exited with {self.proc.returncode}: {self.log_tail()}"
                )
            if self._ready():
                return
            time.sleep(0.05)
        raise ServerError(f"{self.name} not ready after {timeout:.0f}s: {self.log_tail()}")

    def _ready(self) -> bool:
        try:
            if self.health == "tcp":
                with socket.create_connection((HOST, self.port), timeout=0.5):
                    return True
            conn = http.client.HTTPConnection(HOST, self.port, timeout=1.0)
            try:
                conn.request("GET", self.health)
                return conn.getresponse().status == 200
            finally:
                conn.close()
        except OSError:
            return False

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of the server and its live descendants (Linux /proc)."""
        if self.proc is None:
            return None
        return tree_cpu_seconds(self.proc.pid)

    def log_tail(self, chars: int = 1500) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-chars:].strip()
        return ""

    def terminate(self) -> None:
        """Ask the server to stop (SIGTERM) without waiting for it: servers asked together
        shut down together; ``stop()`` then waits."""
        if self.proc is not None and self.proc.poll() is None and not self._terminated:
            self.proc.terminate()
            self._terminated = True

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        if not self._terminated:
            proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def post(port: int, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def get(port: int, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()
