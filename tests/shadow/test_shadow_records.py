"""The candidate's decisions are records of their own in the audit trail, ``kind: "shadow"``,
each linked to the decision it shadowed by that decision's id and written after it, in the
JSON-lines and SQLite sinks alike."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.shadow.support import send_all, served, traffic, wait_for_metric


def _check(records: list[dict[str, Any]], shadowed: int) -> None:
    decisions = {r["event_id"]: n for n, r in enumerate(records) if r["kind"] == "decision"}
    shadows = [(n, r) for n, r in enumerate(records) if r["kind"] == "shadow"]
    assert len(decisions) == shadowed
    assert len(shadows) == shadowed
    agrees = []
    for position, record in shadows:
        assert record["schema_version"] == 2
        # linked to a decision, written after it, and its own record
        assert record["decision_id"] in decisions
        assert decisions[record["decision_id"]] < position
        assert record["event_id"] != record["decision_id"]
        assert record["app"] == "stricter"
        decision = records[decisions[record["decision_id"]]]
        assert decision["app"] == "enforced"
        assert record["tool_use_id"] == decision["tool_use_id"]
        assert record["handlers"][0]["name"] == "bash_gate"
        command = decision["input"]["tool_input"]["command"]
        # the stricter candidate disagrees on every rm, agrees on the rest
        assert record["agrees"] is ("rm" not in command), (command, record)
        agrees.append(record["agrees"])
    assert agrees.count(True) == shadowed // 2


@pytest.mark.parametrize("durable", ["0", "1"], ids=["queued", "durable"])
def test_shadow_records_link_to_their_decisions_in_jsonl_and_sqlite(
    tmp_path: Path, durable: str
) -> None:
    """Durable: each decision is committed before its answer is sent, so before the
    candidate gets it; its shadow record is committed in a later commit."""
    jsonl, database = tmp_path / "audit.jsonl", tmp_path / "audit.db"
    requests = traffic(8)
    with served(
        "tests.shadow.apps:stricter",
        HANDLER_KIT_AUDIT=f"jsonl:{jsonl},sqlite:{database}",
        HANDLER_KIT_AUDIT_DURABLE=durable,
    ) as (server, url):
        send_all(url, requests)
        assert wait_for_metric(url, "handler_kit_shadow_answers_total", 8) == 8
        assert server.terminate()  # the audit trail writes what it holds as the server stops
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    _check(lines, len(requests))
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT record FROM audit ORDER BY id").fetchall()
    _check([json.loads(row[0]) for row in rows], len(requests))
