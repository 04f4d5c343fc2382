"""The Postgres audit sink, against a real PostgreSQL: the done-when load test (``--workers 2``,
2,000 requests over 20 connections, SIGTERM: exactly 2,000 answer records), a schema set-up
that is idempotent under concurrent start-ups and versioned, records and redaction identical to
the JSON lines sink's, one committed transaction per ``write`` (all of a batch or none of it),
reconnection, and a database password that is never shown."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from handler_kit import HookApp, PreToolUse
from handler_kit.config import OperationsConfig
from handler_kit.ops.audit.postgres import (
    DB_SCHEMA_VERSION,
    INSTALL_HINT,
    TABLE,
    VERSIONS_TABLE,
    PostgresSink,
    ensure_schema,
    redact_url,
)
from handler_kit.ops.audit.records import REDACTED, parse_sinks, serialize
from handler_kit.ops.operations import Operations
from tests.support.http import TOKEN, post_many
from tests.support.payloads import pre_tool_use, read_jsonl
from tests.support.postgres import new_database
from tests.support.processes import clean_env, free_port, serve


@pytest.fixture
def db(postgres_server_url: str) -> str:
    """A new empty database on the session's PostgreSQL server."""
    return new_database(postgres_server_url)


def _password(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


def _query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]


def _record(event_id: str, **fields: Any) -> tuple[dict[str, Any], str]:
    record = {"event_id": event_id, "kind": "answer", "ts": 1_700_000_000.0, **fields}
    return serialize([record])[0]


def test_two_workers_2000_requests_then_sigterm(db: str) -> None:
    """Done when: ``handler-kit serve --workers 2`` writing to Postgres, 2,000 requests over 20
    concurrent connections, then SIGTERM: exactly 2,000 answer records (and their 2,000
    handler calls), none duplicated, every request answered; both workers wrote under the
    server's one replica name; the password is in no output."""
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_AUDIT=db, HANDLER_KIT_APP_VERSION="9.9")
    bodies = [
        pre_tool_use("issue_refund", f"tu-{i}", amount=(900 if i % 3 == 0 else 20))
        for i in range(2000)
    ]
    with serve("example_servers.refund_gate:app", port=port, workers=2, env=env) as server:
        path = "/hooks/refund_gate"
        results = asyncio.run(post_many(port, path, bodies, concurrency=20, per_connection=25))
        assert server.terminate()
        output = server.output()
    failed = [r for r in results if not isinstance(r, httpx.Response) or r.status_code != 200]
    assert failed == []
    assert _password(db) not in output

    [(answers, distinct, tool_use_ids, denied)] = _query(
        db,
        f"SELECT count(*), count(DISTINCT event_id), count(DISTINCT tool_use_id), "
        f"count(*) FILTER (WHERE decision = 'deny') FROM {TABLE} WHERE kind = 'decision'",
    )
    assert (answers, distinct, tool_use_ids, denied) == (2000, 2000, 2000, 667)
    [(records,)] = _query(db, f"SELECT count(*) FROM {TABLE}")
    assert records == 2000  # one record per decision, its handler call in it
    identity = _query(
        db,
        f"SELECT DISTINCT app, app_version, replica, record->>'replica', "
        f"(record->>'pid')::int FROM {TABLE}",
    )
    assert {row[:4] for row in identity} == {
        ("refund-gate", "9.9", row[2], row[2]) for row in identity
    }
    replicas = {row[2] for row in identity}
    assert len(replicas) == 1, "the workers of one server are one replica"
    assert next(iter(replicas)).startswith(f"{socket.gethostname()}:")
    assert len({row[4] for row in identity}) == 2, "both workers answered"


def test_schema_set_up_is_idempotent_concurrent_and_versioned(db: str) -> None:
    """Eight sinks opening at once (N replicas starting together) all succeed, and so does a
    later start: one table, one version row, at the current version."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)
    sinks = [PostgresSink(db) for _ in range(8)]

    def start(sink: PostgresSink) -> None:
        try:
            barrier.wait(10)
            sink.open()
            sink.write([_record(f"evt_{id(sink)}")])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(sink,)) for sink in sinks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    for sink in sinks:
        sink.close()
    assert errors == []
    assert _query(db, f"SELECT component, version FROM {VERSIONS_TABLE}") == [
        ("audit", DB_SCHEMA_VERSION)
    ]
    assert _query(db, f"SELECT count(*) FROM {TABLE}") == [(8,)]

    again = PostgresSink(db)  # a restart: the schema is current, nothing to do
    again.open()
    again.write([_record("evt_again")])
    again.close()
    with psycopg.connect(db, autocommit=True) as conn:
        assert ensure_schema(conn) == DB_SCHEMA_VERSION
    assert _query(db, f"SELECT version FROM {VERSIONS_TABLE}") == [(DB_SCHEMA_VERSION,)]
    assert _query(db, f"SELECT count(*) FROM {TABLE}") == [(9,)]
    indexes = {row[0] for row in _query(db, "SELECT indexname FROM pg_indexes")}
    assert {f"{TABLE}_event", f"{TABLE}_replica", f"{TABLE}_answer"} <= indexes


def test_records_and_redaction_are_the_json_lines_sinks(
    tmp_path: Path, db: str, ops_app: HookApp
) -> None:
    """The same answers through a JSON lines sink and the Postgres sink: every record in
    ``jsonb`` equals its JSON line, secrets redacted alike; a NUL (which PostgreSQL cannot
    store) is written as U+FFFD instead of costing the batch."""
    jsonl = tmp_path / "audit.jsonl"
    settings = OperationsConfig(
        audit=[f"jsonl:{jsonl}", db],
        audit_redact=["tool_input.customer.email"],
        replica="replica-r",
        app_version="1.2.3",
    )
    operations = Operations.build(ops_app, settings)
    hooks = operations.apply(ops_app)
    secret_input = {
        "command": "curl -H 'Authorization: Bearer abcdefghijklmnopqrstu' https://x",
        "url": "https://bob:s3cr3t@db.example.com/x",
        "api_key": "sk-live-1234567890abcdefghij",
        "customer": {"email": "carol@example.com", "name": "Carol"},
        "nul": "a\x00b",
    }
    for index, tool in enumerate(("Bash", "issue_refund", "explode")):
        event = PreToolUse.model_validate(
            pre_tool_use(tool, f"tu-{index}", **secret_input, amount=900)
        )
        asyncio.run(hooks.answer(event, transport="direct"))
    operations.close_sync()

    lines = {r["event_id"]: r for r in read_jsonl(jsonl)}
    rows = {row[0]: row[1] for row in _query(db, f"SELECT event_id, record FROM {TABLE}")}
    assert len(lines) == 3 and set(rows) == set(lines)
    for event_id, record in lines.items():
        expected = json.loads(json.dumps(record).replace("a\\u0000b", "a\\ufffdb"))
        assert rows[event_id] == expected
        assert record["replica"] == "replica-r" and record["app_version"] == "1.2.3"
    [(text,)] = _query(db, f"SELECT string_agg(record::text, ' ') FROM {TABLE}")
    for secret in ("abcdefghijklmnopqrstu", "s3cr3t", "sk-live", "carol@example.com"):
        assert secret not in text
    answer = next(r for r in rows.values() if r["kind"] == "decision" and r["tool_name"] == "Bash")
    assert answer["input"]["tool_input"]["api_key"] == REDACTED
    assert answer["input"]["tool_input"]["customer"] == {"email": REDACTED, "name": "Carol"}
    assert answer["input"]["tool_input"]["nul"] == "a\ufffdb"
    # the filter columns are the record's
    for event_id, kind, decision, replica in _query(
        db, f"SELECT event_id, kind, decision, replica FROM {TABLE}"
    ):
        assert (kind, decision, replica) == (
            lines[event_id]["kind"],
            lines[event_id]["decision"],
            "replica-r",
        )


def test_a_write_is_one_committed_transaction_all_or_nothing(db: str) -> None:
    """``write`` returns once its batch is committed (another session sees it, the sink still
    open); a batch that fails leaves none of its records; an empty batch is a probe; a lost
    connection fails one write and the next one reconnects."""
    sink = PostgresSink(db, durable=True)
    sink.write([])  # opens: schema set up, round trip
    sink.write([_record("evt_1"), _record("evt_2")])
    assert _query(db, f"SELECT event_id FROM {TABLE} ORDER BY id") == [("evt_1",), ("evt_2",)]
    assert sink.conn is not None
    assert sink.conn.execute("SHOW synchronous_commit").fetchone() == ("on",)

    broken = serialize([{"event_id": "evt_bad", "kind": None, "ts": 1.0}])[0]
    with pytest.raises(psycopg.errors.NotNullViolation):
        sink.write([_record("evt_3"), broken])
    assert _query(db, f"SELECT count(*) FROM {TABLE}") == [(2,)]

    # the same batch again (an acknowledgement lost after the commit): no duplicate, no error
    sink.write([_record("evt_2"), _record("evt_4")])
    assert _query(db, f"SELECT event_id FROM {TABLE} ORDER BY id") == [
        ("evt_1",),
        ("evt_2",),
        ("evt_4",),
    ]

    _query(
        db,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE application_name = 'handler-kit audit'",
    )
    with pytest.raises(psycopg.OperationalError):
        sink.write([_record("evt_lost")])
    sink.write([_record("evt_5")])  # reconnected
    assert ("evt_5",) in _query(db, f"SELECT event_id FROM {TABLE}")
    sink.close()

    down = PostgresSink(f"postgresql://u:pw@127.0.0.1:{free_port()}/x", connect_timeout=2)
    with pytest.raises(psycopg.OperationalError):
        down.write([])


def test_the_password_is_never_shown(db: str, caplog: pytest.LogCaptureFixture) -> None:
    """Not in the sink's repr, not in what the trail logs when the database refuses it."""
    password = _password(db)
    assert password not in repr(PostgresSink(db))
    assert redact_url(db).count("***") == 1 and password not in redact_url(db)
    assert password not in redact_url(f"postgresql://h/db?password={password}&sslmode=require")

    wrong = db.replace(password, "wrong-" + password[::-1])
    hooks = HookApp("pw")

    @hooks.pre_tool_use()
    def gate(event: PreToolUse) -> None:
        return None

    settings = OperationsConfig(audit=[wrong], audit_process=False)
    operations = Operations.build(hooks, settings)
    served = operations.apply(hooks)
    with caplog.at_level(logging.DEBUG):
        event = PreToolUse.model_validate(pre_tool_use("Bash", "tu-pw"))
        asyncio.run(served.answer(event, transport="direct"))
        operations.close_sync()
    assert "PostgresSink('postgresql://postgres:***@" in caplog.text
    assert "wrong-" not in caplog.text and password not in caplog.text


def test_a_missing_driver_is_a_one_line_start_up_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ValueError) as caught:
        parse_sinks(["postgresql://user:hunter2hunter2@db.example.com/audit"])
    message = str(caught.value)
    assert "\n" not in message and INSTALL_HINT in message and "hunter2" not in message
    with pytest.raises(ValueError, match="postgresql://"):
        parse_sinks(["postgresql:db.example.com"])
