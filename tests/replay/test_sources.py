"""The three sources read alike: the refund gate's decisions written through each audit sink
(JSON lines, SQLite, Postgres) replay to the same report; a version-1 answer is read with its
invocation records as its handlers, and reported apart (its input is never whole)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from example_servers.refund_gate import app as old_app
from handler_kit.cli import main
from handler_kit.ops.audit.sqlite import SQLiteSink
from handler_kit.replay import Filters, open_source
from tests.replay.support import CANDIDATE, TRAFFIC, decision_record, write_jsonl
from tests.support.postgres import new_database

TOTALS = (
    "decisions: 12 replayed: 7 unchanged, 1 tightened, 1 loosened, 3 changed; "
    "not replayed: 1 input incomplete"
)


def _records() -> list[dict[str, Any]]:
    """The traffic's decisions, a shadow record, then a version-1 answer and its invocation
    record."""
    records = [decision_record(old_app, event, n) for n, (_, event, _) in enumerate(TRAFFIC)]
    invocation = {
        "schema_version": 1,
        "kind": "invocation",
        "event_id": "evt_v1_invocation",
        "answer_id": "evt_v1_answer",
        "time": "2026-05-09T08:00:00.000Z",
        "ts": 1778313600.0,
        "event": "PreToolUse",
        "handler": "refund_gate",
        "status": "ok",
        "decision": "deny",
        "reason": "Refunds over $500 need a human approver.",
        "output": records[0]["output"],
    }
    answer = {
        **invocation,
        "kind": "answer",
        "event_id": "evt_v1_answer",
        "answer_id": None,
        "handler": None,
        "handlers": ["refund_gate"],
        "input": {"tool_input": TRAFFIC[0][1]["tool_input"]},
    }
    # a shadow candidate's answer to the first decision: not a decision of the log
    shadow = {
        **records[0],
        "kind": "shadow",
        "event_id": "evt_shadow",
        "decision_id": records[0]["event_id"],
        "input": None,
        "agrees": False,
    }
    return [*records, shadow, invocation, answer]


def _lines(records: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    return [(record, json.dumps(record)) for record in records]


def _check(source: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", source, "--app", CANDIDATE])
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[-1] == TOTALS
    # the filters done in SQL read the same: the times, the event
    code = main(
        [
            "replay",
            source,
            "--app",
            CANDIDATE,
            "--since",
            "2026-05-09T07:00:03Z",
            "--until",
            "2026-05-09T07:00:07Z",
            "--event",
            "PreToolUse",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[-1] == (
        "decisions: 3 replayed: 2 unchanged, 1 tightened, 0 loosened, 0 changed"
    )
    opened = open_source(source)
    try:
        decisions = list(opened.decisions(Filters()))
        assert opened.count(Filters()) == 13
    finally:
        opened.close()
    assert [d.event_id for d in decisions] == [
        *(f"evt_{n:032x}" for n in range(len(TRAFFIC))),
        "evt_v1_answer",
    ]
    v1 = decisions[-1]
    assert v1.schema_version == 1
    assert [(h.name, h.decision) for h in v1.handlers] == [("refund_gate", "deny")]
    assert v1.incomplete is not None and "version-1" in v1.incomplete


def test_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _check(str(write_jsonl(tmp_path / "audit.jsonl", _records())), capsys)


def test_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "audit.db"
    sink = SQLiteSink(str(path))
    sink.write(_lines(_records()))
    sink.close()
    _check(f"sqlite:{path}", capsys)


def test_postgres(postgres_server_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from handler_kit.ops.audit.postgres import PostgresSink

    url = new_database(postgres_server_url)
    sink = PostgresSink(url)
    sink.write(_lines(_records()))
    sink.close()
    _check(url, capsys)
    # the password is never shown, even when the database is not there
    missing = url.rsplit("/", 1)[0] + "/no_such_database"
    code = main(["replay", missing, "--app", CANDIDATE])
    err = capsys.readouterr().err
    assert code == 2
    password = url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    assert "cannot read postgresql://postgres:***@" in err
    assert password not in err


def test_a_file_that_is_no_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("hello\n")
    assert main(["replay", str(path), "--app", CANDIDATE]) == 2
    assert f"{path}:1: not a JSON line" in capsys.readouterr().err
    db = tmp_path / "other.db"
    import sqlite3

    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    assert main(["replay", f"sqlite:{db}", "--app", CANDIDATE]) == 2
    assert "no audit table" in capsys.readouterr().err
