"""The decision audit trail: records for every transport, redaction, statuses, the SQLite query
API, flushing, and the done-when load test (2,000 requests over 20 connections across two
workers, then SIGTERM: exactly 2,000 answer records, no duplicates, no failed request)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from handler_kit import HookApp, PreToolUse, Stop, UserPromptSubmit
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.ops.audit.sqlite import AuditStore
from handler_kit.ops.audit.trail import (
    REDACTED,
    AuditTrail,
    Observed,
    RecordPolicy,
    Redactor,
    build_records,
    idempotency_key,
    new_event_id,
    parse_traceparent,
)
from handler_kit.ops.operations import Operations
from handler_kit.testing import HookClient
from tests.support.apps import OPS_APP
from tests.support.apps.ops import build as build_ops_app
from tests.support.http import TOKEN, post_many
from tests.support.payloads import pre_tool_use, read_jsonl
from tests.support.processes import HANDLER_KIT, REPO, clean_env, free_port, serve


def _with_operations(
    hooks: HookApp, settings: OperationsConfig | None
) -> tuple[HookApp, Operations]:
    """``hooks`` with the operations ``settings`` turns on around it, and those operations."""
    operations = Operations.build(hooks, settings or OperationsConfig())
    return operations.apply(hooks), operations


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _config(tmp_path: Path, **options: Any) -> ServerConfig:
    ops = OperationsConfig(
        audit=[f"jsonl:{tmp_path / 'audit.jsonl'}", f"sqlite:{tmp_path / 'audit.db'}"],
        **options,
    )
    return ServerConfig(tokens=[TOKEN], operations=ops)


def _answers(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == "decision"]


def test_every_transport_writes_one_decision_record(tmp_path: Path, ops_app: HookApp) -> None:
    hooks = ops_app
    with HookClient.for_app(hooks, _config(tmp_path)) as client:
        client.send(
            pre_tool_use("issue_refund", "tu-web", amount=640),
            headers={"traceparent": TRACEPARENT},
        )
        mcp = client._http.post(
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {
                    "name": "refund_gate",
                    "arguments": {"tool_name": "issue_refund", "tool_input": {"amount": 10}},
                },
            },
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert mcp.status_code == 200, mcp.text
        # the server composed its own app: the user's one answers unobserved
        event = PreToolUse(hook_event_name="PreToolUse", tool_name="issue_refund", tool_input={})
        asyncio.run(hooks.answer(event))
    assert hooks.observers == () and hooks.wrappers == ()
    records = read_jsonl(tmp_path / "audit.jsonl")
    by_transport = {r["transport"]: r for r in _answers(records)}
    assert set(by_transport) == {"webhook", "mcp"}

    web = by_transport["webhook"]
    assert web["schema_version"] == 2
    assert web["event"] == "PreToolUse" and web["tool_name"] == "issue_refund"
    assert web["decision"] == "deny" and web["status"] == "ok"
    assert web["reason"] == "Refunds over $500 need a human approver."
    assert web["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert web["span_id"] == "00f067aa0ba902b7"  # the caller's span
    assert web["principal"] == "token#0"
    assert web["idempotency_key"].startswith("tool_use_id=tu-web:PreToolUse:*:")
    assert web["input"] == {"tool_input": {"amount": 640}}
    assert web["input_complete"] is False
    # the digest of the body as it was sent
    sent = json.dumps(pre_tool_use("issue_refund", "tu-web", amount=640)).encode()
    assert web["input_digest"] == hashlib.sha256(sent).hexdigest()[:16]
    (inv,) = web["handlers"]
    assert inv["name"] == "refund_gate" and inv["decision"] == "deny"
    assert inv["idempotency_key"].startswith("tool_use_id=tu-web:PreToolUse:refund_gate:")
    assert inv["latency_ms"] >= 0 and inv["replayed"] is False

    assert by_transport["mcp"]["decision"] is None  # amount 10: no opinion
    ids = [r["event_id"] for r in records]
    assert len(ids) == len(set(ids)) == 2
    assert {r["schema_version"] for r in records} == {2}
    # the SQLite sink holds the same records
    store = AuditStore(str(tmp_path / "audit.db"))
    assert {r["event_id"] for r in store.recent(100)} == set(ids)


def test_command_hook_writes_synchronously(tmp_path: Path) -> None:
    sink = tmp_path / "command.jsonl"
    done = subprocess.run(
        [str(HANDLER_KIT), "command", "example_servers.refund_gate:app"],
        input=json.dumps(pre_tool_use("issue_refund", "tu-cmd", amount=900)),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=clean_env(HANDLER_KIT_AUDIT=f"jsonl:{sink}", TRACEPARENT=TRACEPARENT),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    records = read_jsonl(sink)
    assert [r["kind"] for r in records] == ["decision"]
    assert {r["transport"] for r in records} == {"command"}
    assert records[0]["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert [h["name"] for h in records[0]["handlers"]] == ["refund_gate"]


def test_command_hook_imports_no_audit_code_when_not_configured() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(HANDLER_KIT), "command", OPS_APP],
        input=json.dumps(pre_tool_use("whoami", "tu-1")),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=clean_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "handler_kit.core.app" in imported
    for module in (
        "handler_kit.ops.operations",
        "handler_kit.ops.audit.trail",
        "sqlite3",
        "opentelemetry",
    ):
        assert module not in imported


def test_stdout_sink_is_refused_for_command_hooks(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(HANDLER_KIT), "command", "example_servers.refund_gate:app"],
        input=json.dumps(pre_tool_use("issue_refund", "tu-cmd", amount=1)),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=clean_env(HANDLER_KIT_AUDIT="stdout"),
        timeout=60,
    )
    assert done.stdout == ""  # the answer channel stays clean
    assert done.returncode == 1 and "stdout" in done.stderr


def test_redaction_and_recorded_input_fields(tmp_path: Path, ops_app: HookApp) -> None:
    hooks = ops_app
    sink = _MemorySink()
    ops = OperationsConfig(
        audit_sinks=[sink], audit_redact=["tool_input.customer.email", "tool_input.items.*.sku"]
    )
    hooks, ops = _with_operations(hooks, ops)
    event = PreToolUse.model_validate(
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_use_id": "tu-r",
            "session_id": "s-1",
            "transcript_path": "/home/alice/.claude/t.jsonl",
            "cwd": "/home/alice/project",
            "user_email": "alice@example.com",
            "prompt": "my password is hunter2",
            "tool_input": {
                "command": "curl -H 'Authorization: Bearer abcdefghijklmnopqrstu' https://x",
                "url": "https://bob:s3cr3t@db.example.com/x",
                "api_key": "sk-live-1234567890abcdefghij",
                "nested": {"GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
                "customer": {"email": "carol@example.com", "name": "Carol"},
                "items": [{"sku": "A-1", "qty": 2}],
                "note": "x" * 5000,
            },
        }
    )
    asyncio.run(hooks.answer(event, transport="direct"))
    ops.close_sync()
    answer = sink.records[-1]
    text = json.dumps(sink.records)
    for secret in (
        "abcdefghijklmnopqrstu",
        "s3cr3t",
        "sk-live",
        "ghp_",
        "carol@example.com",
        "A-1",
        "hunter2",
        "alice",
        "transcript",
    ):
        assert secret not in text, secret
    tool_input = answer["input"]["tool_input"]
    assert tool_input["api_key"] == REDACTED
    assert tool_input["nested"]["GITHUB_TOKEN"] == REDACTED
    assert tool_input["customer"] == {"email": REDACTED, "name": "Carol"}
    assert tool_input["items"] == [{"sku": REDACTED, "qty": 2}]
    assert tool_input["command"] == f"curl -H 'Authorization: {REDACTED}' https://x"
    assert tool_input["url"] == f"https://{REDACTED}@db.example.com/x"
    assert tool_input["note"].endswith("...[truncated 3000 chars]")
    assert set(answer["input"]) == {"tool_input"}  # no prompt without text=True
    # the rewritten input in the output is redacted by the same rules
    updated = answer["output"]["hookSpecificOutput"]["updatedInput"]
    assert updated["api_key"] == REDACTED and updated["customer"]["email"] == REDACTED
    assert updated["timeout"] == 30


def test_text_fields_only_when_asked(ops_app: HookApp) -> None:
    event = UserPromptSubmit(hook_event_name="UserPromptSubmit", prompt="refund order #12")
    hooks = ops_app
    answer = asyncio.run(hooks.answer(event))
    item = Observed(answer, "direct", None, None, 1_700_000_000_000_000_000, 1)
    plain = build_records(item, "a", RecordPolicy())[-1]
    with_text = build_records(item, "a", RecordPolicy(text=True))[-1]
    assert "prompt" not in plain["input"]
    assert with_text["input"]["prompt"] == "refund order #12"
    assert plain["time"] == "2023-11-14T22:13:20.000Z"


def test_statuses_are_recorded(ops_app: HookApp) -> None:
    hooks = ops_app
    sink = _MemorySink()
    hooks, ops = _with_operations(hooks, OperationsConfig(audit_sinks=[sink]))
    for tool in ("explode", "sleepy"):
        event = PreToolUse(hook_event_name="PreToolUse", tool_name=tool, tool_input={})
        asyncio.run(hooks.answer(event))
    stop = Stop(hook_event_name="Stop", stop_hook_active=True, last_assistant_message="hi")
    asyncio.run(hooks.answer(stop))
    ops.close_sync()
    invocations = {h["name"]: h for r in sink.records for h in r["handlers"]}
    assert invocations["explode"]["status"] == "error"
    assert invocations["explode"]["error"] == "RuntimeError: boom"
    assert invocations["sleepy"]["status"] == "fail_closed"
    assert invocations["sleepy"]["decision"] == "deny"  # the safe decision it failed to
    assert invocations["sleepy"]["error"] == "handler did not answer in time"
    assert invocations["cite"]["status"] == "loop_guarded"
    answers = {r["handlers"][0]["name"]: r for r in sink.records if r["kind"] == "decision"}
    assert answers["explode"]["failed"] is True and answers["explode"]["status"] == "error"
    assert answers["sleepy"]["status"] == "fail_closed" and answers["sleepy"]["decision"] == "deny"
    assert answers["cite"]["decision"] is None


def test_sqlite_query_api(tmp_path: Path, ops_app: HookApp) -> None:
    hooks = ops_app
    path = tmp_path / "audit.db"
    hooks, ops = _with_operations(hooks, OperationsConfig(audit=[f"sqlite:{path}"]))
    for i, amount in enumerate((10, 900, 20, 700)):
        event = pre_tool_use("issue_refund", f"tu-{i}", amount=amount)
        asyncio.run(hooks.answer(PreToolUse.model_validate(event)))
    ops.close_sync()
    store = AuditStore(str(path))
    assert len(store.recent(100)) == 4
    denied = store.recent(10, kind="decision", decision="deny")
    assert [r["tool_use_id"] for r in denied] == ["tu-3", "tu-1"]  # newest first
    assert [r["tool_use_id"] for r in store.recent(10, kind="decision", decision="none")] == [
        "tu-2",
        "tu-0",
    ]
    assert store.recent(10, event="Stop") == []
    newest = store.recent(1)[0]
    assert store.recent(10, since_id=newest["id"]) == []
    after = store.recent(10, since_id=newest["id"] - 2)
    assert [r["id"] for r in after] == [newest["id"], newest["id"] - 1]
    full = store.get(denied[0]["event_id"])
    assert full is not None and full["kind"] == "decision"
    assert [h["name"] for h in full["handlers"]] == ["refund_gate"]
    assert store.get("evt_missing") is None
    assert store.count(kind="decision") == 4
    with pytest.raises(ValueError):
        store.recent(5, password="x")


def _observed(n: int = 0) -> Observed:
    event = PreToolUse.model_validate(pre_tool_use("issue_refund", f"tu-{n}", amount=900))
    answer = asyncio.run(build_ops_app().answer(event))
    return Observed(answer, "direct", None, None, 1_700_000_000_000_000_000 + n, 1)


def test_flush_and_close_write_everything_queued() -> None:
    """Answers queued faster than the sink writes are all there after close()."""
    gate = threading.Event()
    sink = _MemorySink(gate=gate)
    trail = AuditTrail("a", RecordPolicy(), sinks=[sink], queue_size=100_000)
    item = _observed()
    for _ in range(3000):
        trail.submit(item)
    assert len(sink.records) < 3000  # the writer is held at its first batch
    gate.set()
    trail.close()
    assert len(sink.records) == 3000
    assert [r["kind"] for r in sink.records[:2]] == ["decision", "decision"]
    assert sink.closed


def test_full_queue_drops_and_counts_when_told_to() -> None:
    gate = threading.Event()
    sink = _MemorySink(gate=gate)
    trail = AuditTrail("a", RecordPolicy(), sinks=[sink], queue_size=10, on_full="drop")
    item = _observed()
    for _ in range(100):
        trail.submit(item)
    gate.set()
    trail.close()
    assert trail.dropped > 0
    assert len(sink.records) + trail.dropped == 100


def test_writer_process_flush_close_and_fallback(tmp_path: Path) -> None:
    """Records are written by a writer process; flush() waits for it; if it dies, the
    server's writer thread takes over and nothing submitted afterwards is lost."""
    path = tmp_path / "audit.jsonl"
    policy = RecordPolicy(redactor=Redactor(["tool_input.amount"]))
    trail = AuditTrail("a", policy, specs=[f"jsonl:{path}"])
    for n in range(10):
        trail.submit(_observed(n))
    assert trail.flush()
    assert trail.process is not None and trail.process.proc.poll() is None
    assert len(read_jsonl(path)) == 10
    trail.process.proc.kill()
    trail.process.proc.wait(10)
    for n in range(10, 20):
        trail.submit(_observed(n))
    trail.close()
    records = read_jsonl(path)
    assert len(records) == 20
    answers = [r for r in records if r["kind"] == "decision"]
    assert [r["tool_use_id"] for r in answers] == [f"tu-{n}" for n in range(20)]
    assert {r["input"]["tool_input"]["amount"] for r in answers} == {REDACTED}  # both writers


def test_stdout_sink_from_the_writer_process() -> None:
    """The writer process writes a ``stdout`` sink to the server's own stdout."""
    script = (
        "import asyncio\n"
        "from handler_kit import HookApp, deny\n"
        "from handler_kit.config import OperationsConfig\n"
        "from handler_kit.ops.operations import Operations\n"
        "from handler_kit.core.events import PreToolUse\n"
        "hooks = HookApp('stdout-test')\n"
        "@hooks.pre_tool_use()\n"
        "def gate(event): return deny('no')\n"
        "ops = Operations.build(hooks, OperationsConfig(audit=['stdout']))\n"
        "hooks = ops.apply(hooks)\n"
        "event = PreToolUse(hook_event_name='PreToolUse', tool_name='x', tool_use_id='t1')\n"
        "asyncio.run(hooks.answer(event))\n"
        "ops.close_sync()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=clean_env()
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["kind"] for r in records] == ["decision"]
    assert records[0]["decision"] == "deny" and records[0]["tool_use_id"] == "t1"


def test_ids_and_keys() -> None:
    ids = {new_event_id() for _ in range(10_000)}
    assert len(ids) == 10_000 and all(i.startswith("evt_") and len(i) == 36 for i in ids)
    assert sorted([new_event_id(), new_event_id()]) is not None
    # the time's 48 bits of milliseconds first, in hex, then 80 random bits
    ns = 1_700_000_000_123_456_789
    assert re.fullmatch(r"evt_018bcfe5687b[0-9a-f]{20}", new_event_id(ns))
    assert f"{1_700_000_000_123:012x}" == "018bcfe5687b"
    assert parse_traceparent(TRACEPARENT) == (
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "00f067aa0ba902b7",
    )
    assert parse_traceparent("00-" + "0" * 32 + "-00f067aa0ba902b7-01") is None
    assert parse_traceparent("garbage") is None
    body = '{"hook_event_name":"PreToolUse","tool_use_id":"t1","tool_input":{"a":1,"b":2}}'
    a = PreToolUse.model_validate_json(body)
    b = PreToolUse.model_validate_json(body.replace('"t1",', '"t1","turn_id":null,'))
    c = PreToolUse(hook_event_name="PreToolUse", tool_use_id="t1", tool_input={"a": 2})
    assert idempotency_key(a, "h") == idempotency_key(b, "h")  # the same input (nulls dropped)
    assert idempotency_key(a, "h") != idempotency_key(c, "h")  # same id, other input
    assert idempotency_key(a, "h") != idempotency_key(a, "g")
    session_only = UserPromptSubmit(hook_event_name="UserPromptSubmit", session_id="s9")
    assert idempotency_key(session_only, "h").startswith("session_id=s9:UserPromptSubmit:h:")


def test_redactor_paths_and_defaults() -> None:
    redactor = Redactor(["tool_input.*.secretless", "prompt"])
    assert redactor.value({"a": {"secretless": 1}}, ("tool_input",)) == {
        "a": {"secretless": REDACTED}
    }
    assert redactor.value("hello", ("prompt",)) == REDACTED
    assert redactor.value({"password": 1, "Cookie": "x", "author": "ok"}, ("tool_input",)) == {
        "password": REDACTED,
        "Cookie": REDACTED,
        "author": "ok",
    }
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----"
    assert redactor.text(f"key: {key} end") == f"key: {REDACTED} end"
    assert Redactor(secret_keys=False).value({"token": "t"}, ()) == {"token": "t"}


def test_two_workers_2000_requests_then_sigterm(tmp_path: Path) -> None:
    """Done when: 2,000 requests over 20 concurrent connections across ``--workers 2``, then
    SIGTERM: exactly 2,000 answer records, none duplicated, 0 failed requests."""
    db = tmp_path / "audit.db"
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_AUDIT=f"sqlite:{db}")
    bodies = [
        pre_tool_use("issue_refund", f"tu-{i}", amount=(900 if i % 3 == 0 else 20))
        for i in range(2000)
    ]
    with serve("example_servers.refund_gate:app", port=port, workers=2, env=env) as server:
        path = "/hooks/refund_gate"
        results = asyncio.run(post_many(port, path, bodies, concurrency=20, per_connection=25))
        assert server.terminate()
    failed = [r for r in results if not isinstance(r, httpx.Response) or r.status_code != 200]
    assert failed == []
    decisions = [
        json.loads(r.content).get("hookSpecificOutput", {}).get("permissionDecision")
        for r in results
        if isinstance(r, httpx.Response)
    ]
    assert decisions.count("deny") == 667

    store = AuditStore(str(db))
    answers = store.recent(1000, kind="decision")  # capped page: count with SQL instead
    assert answers
    import sqlite3

    conn = sqlite3.connect(db)
    total, distinct = conn.execute(
        "SELECT COUNT(*), COUNT(DISTINCT event_id) FROM audit WHERE kind = 'decision'"
    ).fetchone()
    assert (total, distinct) == (2000, 2000)
    assert conn.execute("SELECT COUNT(DISTINCT event_id) FROM audit").fetchone()[0] == 2000
    tool_use_ids = conn.execute(
        "SELECT COUNT(DISTINCT tool_use_id) FROM audit WHERE kind = 'decision'"
    ).fetchone()[0]
    assert tool_use_ids == 2000  # every request once
    denied = conn.execute(
        "SELECT COUNT(*) FROM audit WHERE kind = 'decision' AND decision = 'deny'"
    ).fetchone()[0]
    assert denied == 667
    pids = {json.loads(row[0])["pid"] for row in conn.execute("SELECT record FROM audit")}
    assert len(pids) == 2, "both workers answered"
    conn.close()


class _MemorySink:
    def __init__(self, gate: threading.Event | None = None) -> None:
        self.records: list[dict[str, Any]] = []
        self.gate = gate
        self.closed = False

    def open(self) -> None:
        pass

    def write(self, records: Any) -> None:
        if self.gate is not None:
            self.gate.wait(10)
        self.records.extend(record for record, _ in records)

    def close(self) -> None:
        self.closed = True


def test_environment_configuration(ops_app: HookApp) -> None:
    env = {
        "HANDLER_KIT_AUDIT": "stdout, sqlite:/tmp/x.db",
        "HANDLER_KIT_AUDIT_REDACT": "tool_input.card,prompt",
        "HANDLER_KIT_AUDIT_TEXT": "1",
        "HANDLER_KIT_METRICS": "1",
    }
    ops = OperationsConfig.from_env(env)
    assert ops.audit == ("stdout", "sqlite:/tmp/x.db")
    assert ops.audit_redact == ("tool_input.card", "prompt")
    assert ops.audit_text and ops.metrics and not ops.otel
    assert not OperationsConfig.from_env({}).enabled
    assert not ServerConfig.from_env({"HANDLER_KIT_TOKENS": TOKEN}).operations.enabled
    with pytest.raises(ValueError, match="unknown audit sink"):
        _with_operations(ops_app, OperationsConfig(audit=["kafka:x"]))
    with pytest.raises(ValueError, match="does not exist"):
        _with_operations(ops_app, OperationsConfig(audit=["jsonl:/nonexistent/dir/a.jsonl"]))
    assert os.environ.get("HANDLER_KIT_AUDIT") is None
