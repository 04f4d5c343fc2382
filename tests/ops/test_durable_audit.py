"""The durable audit mode (``HANDLER_KIT_AUDIT_DURABLE``), through real uvicorn: an answer is
sent only once its records are committed, so a ``kill -9`` of the whole server loses no record
of an answer a client received; answers that arrive together share one commit; and a sink that
fails or stalls turns every answer into its failure policy's (deny for a fail-closed gate, a
503 or an MCP tool error otherwise) by the deadline, with ``/readyz`` saying 503 until the sink
commits again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_types.version import LATEST_MODERN_VERSION

from handler_kit import HookApp, PreToolUse, allow
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.ops.audit.trail import AuditTrail
from handler_kit.server import create_asgi_app
from handler_kit.testing import RunningServer, running_server
from tests.support.apps import OPS_APP
from tests.support.http import TOKEN, send_many
from tests.support.payloads import pre_tool_use, read_jsonl
from tests.support.processes import HANDLER_KIT, REPO, clean_env, free_port, serve

# the gate's reason when its decision could not be recorded
UNRECORDED_REASON = "could not have its decision recorded"


def durable_app(timeout: float = 3.0) -> HookApp:
    """A fail-closed gate and a fail-open check, both allowing every call."""
    hooks = HookApp("durable-audit")

    @hooks.pre_tool_use(matcher="gated", fail_closed=True, timeout=timeout)
    async def gate(event: PreToolUse) -> Any:
        return allow("fine")

    @hooks.pre_tool_use(matcher="open", timeout=timeout)
    async def check(event: PreToolUse) -> Any:
        return allow("fine")

    return hooks


def event(tool: str, tool_use_id: str) -> dict[str, Any]:
    return pre_tool_use(tool, tool_use_id, command="ls")


def trail_of(server: RunningServer) -> AuditTrail:
    assert server.asgi is not None and server.asgi.operations is not None
    trail = server.asgi.operations.audit
    assert trail is not None and trail.durable
    return trail


def mcp_call(server: RunningServer, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One ``tools/call`` in the modern protocol (a single POST); its JSON-RPC result."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": LATEST_MODERN_VERSION,
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "MCP-Protocol-Version": LATEST_MODERN_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    with server.http(timeout=30) as client:
        response = client.post(server.mcp_url, content=json.dumps(body), headers=headers)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def decision(response: httpx.Response) -> tuple[str, str]:
    assert response.status_code == 200, response.text
    specific = response.json()["hookSpecificOutput"]
    return specific["permissionDecision"], specific["permissionDecisionReason"]


def wait_ready(client: httpx.Client, status: int, timeout: float = 30.0) -> httpx.Response:
    """Poll ``/readyz`` until it answers ``status`` (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get("/readyz")
        if response.status_code == status or time.monotonic() > deadline:
            assert response.status_code == status, response.text
            return response
        time.sleep(0.05)


# -- kill -9 loses nothing that was answered -------------------------------------------------


def sqlite_answers(db: Path) -> list[dict[str, Any]]:
    """The answer records of a SQLite sink, oldest first (none when nothing was written)."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        try:
            rows = conn.execute("SELECT record FROM audit WHERE kind = 'decision' ORDER BY id")
            return [json.loads(row[0]) for row in rows]
        except sqlite3.OperationalError:  # no table: no record was ever committed
            return []


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (from /proc: the tests run on Linux)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def test_kill_9_right_after_the_last_answer_loses_no_answered_record(tmp_path: Path) -> None:
    db, log = tmp_path / "audit.sqlite3", tmp_path / "audit.jsonl"
    port = free_port()
    env = clean_env(
        HANDLER_KIT_TOKENS=TOKEN,
        HANDLER_KIT_AUDIT=f"sqlite:{db},jsonl:{log}",
        HANDLER_KIT_AUDIT_DURABLE="1",
    )
    # a sync handler (on the handler threads) and an async one
    bodies = [
        event("Bash" if i % 2 else "issue_refund", f"kill-{i}") | {"tool_input": {"amount": 1}}
        for i in range(200)
    ]
    with serve(OPS_APP, port=port, env=env) as server:
        results = asyncio.run(
            send_many(f"http://127.0.0.1:{port}/hooks", bodies, concurrency=24, per_connection=10)
        )
        # every process of the server, at once, the moment the last answer is in (an audit
        # writer process, which runs in its own session, too)
        for pid in [server.proc.pid, *descendants(server.proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=10)
        server.signalled = True
    answered = {
        body["tool_use_id"]
        for body, result in zip(bodies, results, strict=True)
        if isinstance(result, httpx.Response) and result.status_code == 200
    }
    assert len(answered) == len(bodies), [r for r in results if not isinstance(r, httpx.Response)]
    in_sqlite = {record["tool_use_id"] for record in sqlite_answers(db)}
    in_jsonl = {r["tool_use_id"] for r in read_jsonl(log) if r["kind"] == "decision"}
    assert answered - in_sqlite == set()
    assert answered - in_jsonl == set()


# -- group commit ------------------------------------------------------------------------------


class SlowSink:
    """A sink whose every commit takes a while (as an fsync on a busy disk does): answers
    arriving meanwhile must wait for the next commit, together."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.records: list[dict[str, Any]] = []

    def open(self) -> None:
        pass

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        time.sleep(0.05)
        if not records:  # the start-up probe: no commit of answers
            return
        self.batches.append(len(records))
        self.records.extend(record for record, _ in records)

    def close(self) -> None:
        pass


def test_answers_that_arrive_together_share_one_commit() -> None:
    sink = SlowSink()
    operations = OperationsConfig(audit_sinks=[sink], audit_durable=True, metrics=True)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    count = 60
    with running_server(durable_app(), config=config) as server:
        bodies = [event("open", f"group-{i}") for i in range(count)]
        results = asyncio.run(send_many(f"{server.url}/hooks", bodies, concurrency=30))
        for result in results:
            assert isinstance(result, httpx.Response), result
            assert decision(result) == ("allow", "fine")
        trail = trail_of(server)
        with server.http(timeout=10) as client:
            metrics = client.get("/metrics").text
    answers = [r for r in sink.records if r["kind"] == "decision"]
    assert len(answers) == count
    # every answer was committed before it was sent, and in fewer commits than answers
    assert trail.committed_answers == count
    assert trail.commits == len(sink.batches) < count
    assert trail.answers_per_commit > 1
    assert f"handler_kit_audit_commit_answers_count {float(trail.commits)}" in metrics
    assert f"handler_kit_audit_commit_answers_sum {float(count)}" in metrics


# -- a sink that fails or stalls -------------------------------------------------------------


class BrokenSink:
    """A sink that raises while ``broken`` is set: a store that is down."""

    def __init__(self) -> None:
        self.broken = threading.Event()
        self.records: list[dict[str, Any]] = []

    def open(self) -> None:
        pass

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        if self.broken.is_set():
            raise OSError("the audit store is down")
        self.records.extend(record for record, _ in records)

    def close(self) -> None:
        pass


def test_a_failing_sink_gets_the_failure_policy_and_readyz_follows_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="handler_kit.audit")
    sink = BrokenSink()
    operations = OperationsConfig(audit_sinks=[sink], audit_durable=True, metrics=True)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    with running_server(durable_app(), config=config) as server, server.http(timeout=30) as client:
        assert decision(client.post("/hooks/gate", json=event("gated", "ok-1"))) == (
            "allow",
            "fine",
        )
        assert client.get("/readyz").json() == {"status": "ready"}

        sink.broken.set()
        # the commit fails: no need to wait for the deadline
        verdict, reason = decision(client.post("/hooks/gate", json=event("gated", "down-1")))
        assert verdict == "deny" and UNRECORDED_REASON in reason
        refused = client.post("/hooks/check", json=event("open", "down-2"))
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"] == "audit_unavailable"
        # the same over MCP: the gate's deny, the check's tool error
        gated = mcp_call(server, "gate", event("gated", "down-3"))
        assert gated["isError"] is False
        assert json.loads(gated["content"][0]["text"])["hookSpecificOutput"][
            "permissionDecision"
        ] == ("deny")
        opened = mcp_call(server, "check", event("open", "down-4"))
        assert opened["isError"] is True
        assert "could not be recorded" in opened["content"][0]["text"]
        down = client.get("/readyz")
        assert down.status_code == 503
        assert down.json()["reason"] == "audit_unavailable"
        # the sink's error is in the log, not on this unauthenticated route
        assert "the server log says why" in down.json()["message"]
        # /healthz is liveness: the process answers
        assert client.get("/healthz").status_code == 200
        metrics = client.get("/metrics").text
        assert "handler_kit_audit_unrecorded_total 4.0" in metrics
        # five answers were sent (one recorded, four replaced): each counted once, as sent
        sent = [
            line for line in metrics.splitlines() if line.startswith("handler_kit_answers_total{")
        ]
        assert sum(float(line.rsplit(" ", 1)[1]) for line in sent) == 5.0, sent
        assert (
            sum(float(line.rsplit(" ", 1)[1]) for line in sent if 'decision="allow"' in line) == 1.0
        ), sent

        # back up: a probe finds it with no traffic at all, and answers are given again
        sink.broken.clear()
        assert wait_ready(client, 200).json() == {"status": "ready"}
        assert decision(client.post("/hooks/gate", json=event("gated", "ok-2"))) == (
            "allow",
            "fine",
        )
    replaced = [m for m in caplog.messages if "was not sent, its failure policy" in m]
    assert len(replaced) == 1, caplog.messages  # once per interval, not once per answer
    answered = {r["tool_use_id"] for r in sink.records if r["kind"] == "decision"}
    assert {"ok-1", "ok-2"} <= answered


def test_a_stalled_sqlite_sink_is_answered_by_the_deadline(tmp_path: Path) -> None:
    """Another connection holds the database's write lock: the commit waits for it, and the
    answers cannot: each gets its failure policy's by its deadline."""
    db = tmp_path / "audit.sqlite3"
    operations = OperationsConfig(audit=[f"sqlite:{db}"], audit_durable=True)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    with (
        running_server(durable_app(timeout=1.0), config=config) as server,
        server.http(timeout=30) as client,
    ):
        assert decision(client.post("/hooks/gate", json=event("gated", "before"))) == (
            "allow",
            "fine",
        )
        locker = sqlite3.connect(db, isolation_level=None)
        try:
            locker.execute("BEGIN EXCLUSIVE")
            started = time.monotonic()
            verdict, reason = decision(client.post("/hooks/gate", json=event("gated", "stalled-1")))
            assert verdict == "deny" and UNRECORDED_REASON in reason
            refused = client.post("/hooks/check", json=event("open", "stalled-2"))
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"] == "audit_unavailable"
            # by the deadline (0.9 s each), not by SQLite's busy timeout (10 s)
            assert time.monotonic() - started < 9
            assert client.get("/readyz").status_code == 503
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        wait_ready(client, 200)
        assert decision(client.post("/hooks/gate", json=event("gated", "after"))) == (
            "allow",
            "fine",
        )
    answers = {record["tool_use_id"]: record["decision"] for record in sqlite_answers(db)}
    assert answers["before"] == "allow" and answers["after"] == "allow"
    # the stalled commit went through once the lock was gone, and the record of what was
    # sent instead came after it: the trail's last word is the answer given
    assert answers["stalled-1"] == "deny"


def writer_processes() -> set[int]:
    """The audit writer processes below this one (the in-process servers' workers)."""
    found = set()
    for pid in descendants(os.getpid()):
        with contextlib.suppress(OSError):
            if b"handler_kit.ops.audit.process" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
    return found


def test_the_writer_process_commits_and_its_death_is_taken_over(tmp_path: Path) -> None:
    """A file sink in durable mode is committed by the audit writer process (the server's
    event loop only hands it the answers), and an answer leaves after that commit. When the
    process dies, no answer leaves unrecorded: those waiting get the failure policy's, and the
    server commits the sink itself from then on."""
    db = tmp_path / "audit.sqlite3"
    operations = OperationsConfig(audit=[f"sqlite:{db}"], audit_durable=True)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    before = writer_processes()
    with (
        running_server(durable_app(), config=config) as server,
        server.http(timeout=30) as client,
    ):
        assert decision(client.post("/hooks/gate", json=event("gated", "first"))) == (
            "allow",
            "fine",
        )
        assert "first" in {record["tool_use_id"] for record in sqlite_answers(db)}
        writers = writer_processes() - before
        assert len(writers) == 1, writers
        os.kill(writers.pop(), signal.SIGKILL)
        given: dict[str, str] = {}
        deadline = time.monotonic() + 30
        while "allow" not in given.values() and time.monotonic() < deadline:
            tool_use_id = f"after-{len(given)}"
            given[tool_use_id] = decision(
                client.post("/hooks/gate", json=event("gated", tool_use_id))
            )[0]
        wait_ready(client, 200)
        assert decision(client.post("/hooks/gate", json=event("gated", "last"))) == (
            "allow",
            "fine",
        )
    recorded = {record["tool_use_id"] for record in sqlite_answers(db)}
    allowed = {tool_use_id for tool_use_id, verdict in given.items() if verdict == "allow"}
    assert allowed and allowed <= recorded
    assert "last" in recorded


# -- start-up and the command hook -------------------------------------------------------------


def test_durable_refuses_a_sink_that_cannot_be_durable() -> None:
    operations = OperationsConfig(audit=["stderr"], audit_durable=True)
    with pytest.raises(ValueError, match="cannot be durable"):
        create_asgi_app(durable_app(), ServerConfig(tokens=[TOKEN], operations=operations))


def command(tmp_path: Path, audit: str, body: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    app = tmp_path / "durable_hook.py"
    app.write_text(
        "from handler_kit import HookApp, allow\n"
        "hooks = HookApp('durable-hook')\n"
        "@hooks.pre_tool_use(fail_closed=True)\n"
        "async def gate(event):\n"
        "    return allow('fine')\n"
    )
    env = clean_env(
        HANDLER_KIT_AUDIT=audit,
        HANDLER_KIT_AUDIT_DURABLE="1",
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]),
    )
    return subprocess.run(
        [str(HANDLER_KIT), "command", "durable_hook:hooks"],
        input=json.dumps(body),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def test_a_command_hook_that_cannot_commit_its_record_fails_closed(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    done = command(tmp_path, f"jsonl:{log}", event("Bash", "cmd-1"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert [r["tool_use_id"] for r in read_jsonl(log) if r["kind"] == "decision"] == ["cmd-1"]
    # a path that cannot be written (a directory): no record, so no allow
    folder = tmp_path / "a-directory"
    folder.mkdir()
    done = command(tmp_path, f"jsonl:{folder}", event("Bash", "cmd-2"))
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny", done
    assert UNRECORDED_REASON in output["permissionDecisionReason"]
