"""The audit writer process ends with its server, whatever its sink does: a real ``handler-kit
serve`` with ``HANDLER_KIT_AUDIT=jsonl:`` on a FIFO nobody reads (the writer blocks in
``open()`` for good), stopped by SIGTERM (a graceful shutdown) or SIGKILL; the writer, which
runs in a session of its own and ignores SIGTERM, is gone within a few seconds of the server."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from handler_kit.ops.audit.process import ORPHAN_GRACE, PARENT_CHECK_INTERVAL
from tests.support.apps import OPS_APP
from tests.support.http import TOKEN
from tests.support.payloads import pre_tool_use
from tests.support.processes import clean_env, free_port, serve

WRITER = "handler_kit.ops.audit.process"


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process (from /proc: the tests run on Linux)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        fields = stat.rsplit(")", 1)[1].split()
        table[int(entry.name)] = (int(fields[1]), fields[0])
    return table


def command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def writer_below(root: int, timeout: float = 20.0) -> int:
    """The audit writer process started by the server ``root`` (or one of its workers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        table = process_table()
        below, todo = [], [root]
        while todo:
            parent = todo.pop()
            for pid, (ppid, _) in table.items():
                if ppid == parent:
                    below.append(pid)
                    todo.append(pid)
        writers = [pid for pid in below if WRITER in command_line(pid)]
        if writers:
            assert len(writers) == 1, writers
            return writers[0]
        time.sleep(0.05)
    raise AssertionError(f"no audit writer process below {root}")


def running(pid: int) -> bool:
    """True while ``pid`` runs (a zombie has ended: whoever adopted it reaps it)."""
    state = process_table().get(pid)
    return state is not None and state[1] != "Z"


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_the_writer_process_ends_with_its_server_whatever_its_sink_does(
    tmp_path: Path, stop: signal.Signals
) -> None:
    fifo = tmp_path / "audit.fifo"
    os.mkfifo(fifo)
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_AUDIT=f"jsonl:{fifo}")
    writer = None
    try:
        with serve(OPS_APP, port=port, env=env) as server:
            # an answer: its records start the writer process, which blocks opening the FIFO
            response = httpx.post(
                f"http://127.0.0.1:{port}/hooks",
                json=pre_tool_use("Bash", "tu-fifo", command="ls"),
                headers={"Authorization": f"Bearer {TOKEN}"},
                timeout=10,
            )
            assert response.status_code == 200, response.text
            writer = writer_below(server.proc.pid)
            time.sleep(0.5)
            assert running(writer)  # stuck in open(): nobody reads the FIFO

            server.signalled = True
            server.proc.send_signal(stop)
            server.proc.wait(timeout=60)
            # SIGTERM: the server's shutdown waited for the writer a bounded time, then
            # killed it; SIGKILL: the writer saw its server go, and ended itself
            gone_by = time.monotonic() + ORPHAN_GRACE + PARENT_CHECK_INTERVAL + 5
            while running(writer) and time.monotonic() < gone_by:
                time.sleep(0.05)
            assert not running(writer), f"the writer outlived its server:\n{server.output()}"
    finally:
        if writer is not None and running(writer):  # the old code's orphan: not left behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(writer, signal.SIGKILL)
