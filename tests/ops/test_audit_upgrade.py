"""Audit stores of schema version 1 upgraded to version 2: from a version-1 fixture (the DDL
and rows handler-kit wrote before, tests/data/audit_v1), on first open; the upgrade only adds,
so a version-1 writer (a replica not yet upgraded) keeps inserting during a rolling upgrade,
and the readers show its rows as decisions, their invocation rows as their handlers."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from handler_kit import HookApp, PreToolUse, deny
from handler_kit.config import OperationsConfig
from handler_kit.ops.audit.reading import decisions
from handler_kit.ops.audit.sqlite import AuditStore, SQLiteSink
from handler_kit.ops.idempotency import MemoryStore
from handler_kit.ops.operations import Operations
from tests.support.payloads import read_jsonl

DATA = Path(__file__).resolve().parents[1] / "data" / "audit_v1"
V1 = json.loads((DATA / "v1_writers.json").read_text())
MERGED = "evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa"
CLOSED = "evt_0196b3f0a1c3bbbbbbbbbbbbbbbbbbbb"


def _v1_store(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript((DATA / "sqlite_v1.sql").read_text())
    conn.close()


def _app(runs: list[str]) -> HookApp:
    app = HookApp("upgrade")

    @app.pre_tool_use(name="gate", idempotent=True)
    def gate(event: PreToolUse) -> Any:
        runs.append(str(event.tool_use_id))
        return deny("needs a human")

    return app


def _v1_insert(path: Path, event_id: str, answer_id: str | None, kind: str, **fields: Any) -> None:
    """A row as a version-1 writer inserts it (its own statement and columns)."""
    record = {
        "schema_version": 1,
        "kind": kind,
        "event_id": event_id,
        "answer_id": answer_id,
        "ts": 1_778_312_200.0,
        "time": "2026-05-09T07:36:40.000Z",
        "app": "old-replica",
        "event": "PreToolUse",
        "tool_name": "Bash",
        "status": "ok",
        "decision": "deny",
        "reason": "old says no",
        "latency_ms": 2.0,
        **fields,
    }
    conn = sqlite3.connect(path)
    conn.execute(
        V1["sqlite_insert"], [record.get(c) for c in V1["sqlite_columns"]] + [json.dumps(record)]
    )
    conn.commit()
    conn.close()


def test_a_version_1_store_is_upgraded_and_read_as_decisions(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    _v1_store(path)
    store = AuditStore(str(path))
    try:
        newest = store.recent(10)
        assert [r["event_id"] for r in newest] == [CLOSED, MERGED]
        merged = newest[1]
        assert merged["schema_version"] == 1 and merged["decision"] == "deny"
        assert merged["input_complete"] is False
        assert [(h["name"], h["decision"], h["reason"]) for h in merged["handlers"]] == [
            ("first", "allow", "first is fine"),
            ("second", "deny", "second says no"),
        ]
        assert merged["handlers"][0]["idempotency_key"] == (
            "tool_use_id=toolu_2:PreToolUse:first:613281796bd78b77"
        )
        closed = store.get(CLOSED)
        assert closed is not None and closed["handlers"][0]["status"] == "fail_closed"
        assert closed["handlers"][0]["error"] == "RuntimeError: the approvals service is down"
        assert store.count() == 2
        assert [r["event_id"] for r in store.recent(10, handler="second")] == [MERGED]
    finally:
        store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    columns = {row[1] for row in conn.execute("PRAGMA table_info(audit)")}
    assert {"decision_id", "agrees", "schema_version"} <= columns
    assert conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0] == 5  # nothing rewritten
    conn.close()


def test_a_version_1_writer_keeps_writing_during_a_rolling_upgrade(tmp_path: Path) -> None:
    """The version-2 sink upgrades the file and writes its decisions; a version-1 replica's
    rows, inserted with its own statement afterwards, are read back as decisions beside
    them, newest first."""
    path = tmp_path / "audit.db"
    _v1_store(path)
    runs: list[str] = []
    operations = Operations.build(_app(runs), OperationsConfig(audit_sinks=[SQLiteSink(str(path))]))
    served = operations.apply(_app(runs))
    event = PreToolUse(hook_event_name="PreToolUse", tool_name="Bash", tool_use_id="tu-new")
    asyncio.run(served.answer(event))
    operations.close_sync()
    _v1_insert(path, "evt_old_inv", "evt_old_answer", "invocation", handler="legacy")
    _v1_insert(path, "evt_old_answer", None, "answer", handlers=["legacy"])
    store = AuditStore(str(path))
    try:
        newest = store.recent(10)
        assert [(r["event_id"], r["kind"]) for r in newest[:2]] == [
            ("evt_old_answer", "answer"),
            (newest[1]["event_id"], "decision"),
        ]
        assert [h["name"] for h in newest[0]["handlers"]] == ["legacy"]
        assert newest[0]["handlers"][0]["reason"] == "old says no"
        assert [h["name"] for h in newest[1]["handlers"]] == ["gate"]
        assert [r["event_id"] for r in newest[2:]] == [CLOSED, MERGED]
        assert store.count() == 4
    finally:
        store.close()


def test_a_retry_across_the_upgrade_does_not_run_the_handler_again(tmp_path: Path) -> None:
    """The idempotency key a version-1 record holds is the key the idempotency store uses
    after the upgrade: a call answered before it is replayed after it, not run again."""
    store = MemoryStore(ttl=600)
    runs: list[str] = []
    log = tmp_path / "audit.jsonl"
    settings = OperationsConfig(
        audit=[f"jsonl:{log}"], audit_process=False, idempotency_store=store
    )
    event = PreToolUse(
        hook_event_name="PreToolUse",
        session_id="sess-1",
        cwd="/tmp/not-recorded",
        transcript_path="/tmp/not-recorded.jsonl",
        tool_name="Edit",
        tool_use_id="toolu_2",
        tool_input={"file": "a"},
    )
    for _ in range(2):  # before the upgrade, after it: one store, one key
        operations = Operations.build(_app(runs), settings)
        served = operations.apply(_app(runs))
        asyncio.run(served.answer(event))
        operations.close_sync()
    assert runs == ["toolu_2"]
    first, second = read_jsonl(log)
    assert [h["replayed"] for h in (first["handlers"][0], second["handlers"][0])] == [False, True]
    # the digest of the key: the very one the version-1 fixture recorded for this input
    assert (
        "tool_use_id=toolu_2:PreToolUse:first:613281796bd78b77"
        in (DATA / "sqlite_v1.sql").read_text()
    )
    assert second["handlers"][0]["idempotency_key"] == (
        "tool_use_id=toolu_2:PreToolUse:gate:613281796bd78b77"
    )


def test_json_lines_of_both_versions_read_as_decisions() -> None:
    v1 = [
        {"kind": "invocation", "event_id": "e1", "answer_id": "a1", "handler": "h", "status": "ok"},
        {"kind": "answer", "event_id": "a1", "handlers": ["h"], "decision": "deny"},
    ]
    v2 = {"kind": "decision", "event_id": "d2", "handlers": [{"name": "g"}], "schema_version": 2}
    shadow = {"kind": "shadow", "event_id": "s2", "decision_id": "d2", "agrees": False}
    read = list(decisions([*v1, v2, shadow]))
    assert [r["event_id"] for r in read] == ["a1", "d2", "s2"]
    assert read[0]["handlers"][0]["name"] == "h" and read[0]["input_complete"] is False


# -- PostgreSQL ------------------------------------------------------------------------------


def _pg_v1(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in (DATA / "postgres_v1.sql").read_text().split(";\n"):
            body = "\n".join(
                line for line in statement.splitlines() if not line.startswith("--")
            ).strip()
            if body:
                conn.execute(body)  # type: ignore[call-overload]


def test_a_version_1_postgres_store_is_upgraded_and_a_v1_replica_keeps_writing(
    postgres_server_url: str,
) -> None:
    """The version-2 sink upgrades a version-1 database on first open (under the advisory
    lock), and writes its decisions; a version-1 replica's batch, inserted with its own
    statement afterwards, and the fixture's rows are read back as decisions beside them."""
    import psycopg

    from handler_kit.ops.audit.postgres import (
        DB_SCHEMA_VERSION,
        TABLE,
        VERSIONS_TABLE,
        PostgresSink,
        PostgresStore,
    )
    from tests.support.postgres import new_database

    url = new_database(postgres_server_url)
    _pg_v1(url)
    runs: list[str] = []
    operations = Operations.build(_app(runs), OperationsConfig(audit_sinks=[PostgresSink(url)]))
    served = operations.apply(_app(runs))
    event = PreToolUse(hook_event_name="PreToolUse", tool_name="Bash", tool_use_id="tu-new")
    asyncio.run(served.answer(event))
    operations.close_sync()
    with psycopg.connect(url, autocommit=True) as conn:
        (version,) = conn.execute(
            f"SELECT version FROM {VERSIONS_TABLE} WHERE component = 'audit'"
        ).fetchone() or (None,)
        assert version == DB_SCHEMA_VERSION == 2
        # a version-1 replica's batch: its own statement, its own columns
        rows = []
        for event_id, answer_id, kind, extra in (
            ("evt_old_inv", "evt_old_answer", "invocation", {"handler": "legacy"}),
            ("evt_old_answer", None, "answer", {"handlers": ["legacy"]}),
        ):
            record = {
                "schema_version": 1,
                "kind": kind,
                "event_id": event_id,
                "answer_id": answer_id,
                "app": "old-replica",
                "decision": "deny",
                "reason": "old says no",
                "status": "ok",
                **extra,
            }
            rows.append(record)
        arrays = [[r.get(c) for r in rows] for c in V1["postgres_columns"]]
        import datetime as dt

        arrays.append([dt.datetime.now(dt.UTC)] * len(rows))
        arrays.append([json.dumps(r) for r in rows])
        conn.execute(V1["postgres_insert"], arrays)
        (count,) = conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone() or (0,)
        assert count == 8  # the fixture's 5 rows, one decision, the old replica's 2

    async def read() -> tuple[list[dict[str, Any]], dict[str, Any] | None, int]:
        store = PostgresStore(url)
        try:
            return await store.recent(10), await store.get(MERGED), await store.count()
        finally:
            await store.aclose()

    newest, merged, count = asyncio.run(read())
    assert [r["kind"] for r in newest] == ["answer", "decision", "answer", "answer"]
    assert [h["name"] for h in newest[0]["handlers"]] == ["legacy"]
    assert [h["name"] for h in newest[1]["handlers"]] == ["gate"]
    assert [r["event_id"] for r in newest[2:]] == [CLOSED, MERGED]
    assert merged is not None
    assert [(h["name"], h["decision"]) for h in merged["handlers"]] == [
        ("first", "allow"),
        ("second", "deny"),
    ]
    assert count == 4
