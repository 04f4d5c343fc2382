"""``kill -9`` of ``handler-kit serve --workers 2``: the workers do not go on serving without
their supervisor (with the tokens they started with); they shut down and the port is closed."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.apps import OPS_APP
from tests.support.http import TOKEN
from tests.support.processes import clean_env, free_port, serve

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="finds the workers through /proc"
)


def _children(pid: int) -> set[int]:
    """The live processes whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie nobody reaped yet has stopped running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return False
    except OSError:
        return True


def test_workers_end_when_serve_is_killed() -> None:
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN)
    with serve(OPS_APP, port=port, workers=2, env=env) as server:
        url = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
        parent = server.proc.pid
        workers = _children(parent)
        # the two workers (and multiprocessing's resource tracker, which ends with them)
        assert len(workers) >= 2, server.output()

        os.kill(parent, signal.SIGKILL)
        server.proc.wait(timeout=10)

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.1)
        left = sorted(pid for pid in workers if _alive(pid))
        assert not left, f"workers {left} outlived serve:\n{server.output()}"
        assert _refused(port), "the port still accepts connections"
        assert "is gone: worker" in server.output()
