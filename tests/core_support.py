"""Shared helpers of the core test files (events, outputs, webhook, serve...): the payload
corpus, free ports, and ``handler-kit serve`` subprocesses that are always cleaned up.

Plain functions, not fixtures, so nothing here leaks into other test files.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
# The captured Claude Code / Codex payloads live next to the repository: <repo>/../shared.
PAYLOADS = REPO.parent / "shared" / "hook-payloads"
HANDLER_KIT = Path(sys.executable).parent / "handler-kit"


def input_files() -> list[Path]:
    """Every hook input of the corpus (``<Event>/*.json``), outputs excluded."""
    if not PAYLOADS.is_dir():
        return []
    return sorted(
        path
        for path in PAYLOADS.glob("*/*.json")
        if path.parent.name != "outputs" and path.is_file()
    )


def output_files() -> list[Path]:
    """Every hook output of the corpus (``outputs/*.json``)."""
    folder = PAYLOADS / "outputs"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


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


class Process:
    """A subprocess whose combined output goes to a file, readable while it runs."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path = REPO) -> None:
        self._log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 (closed in stop())
        # its own process group, so stop() reaches uvicorn's worker processes too
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

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

    def stop(self) -> None:
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
        proc.stop()


def serve_argv(target: str, port: int, *options: str) -> list[str]:
    return [str(HANDLER_KIT), "serve", target, "--host", "127.0.0.1", "--port", str(port), *options]


REFUND_EVENT = {
    "session_id": "s1",
    "hook_event_name": "PreToolUse",
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "4821", "amount": 640},
    "tool_use_id": "toolu_1",
}
REFUND_DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Refunds over $500 need a human approver.",
    }
}


def error_body(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert ``response`` is the JSON error ``code`` with ``status``; return its body."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) <= {"error", "message", "details"}, body
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert "Traceback" not in response.text
    return body
