"""Attacks on the inspector's filters over a Postgres audit trail (a real PostgreSQL): SQL in
a filter is a value, a NUL in one is compared as the trail writes it (as U+FFFD) instead of
failing the query, and the page never shows the database password."""

from __future__ import annotations

import time
from typing import Any

import httpx

from example_servers import refund_gate
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.testing import running_server
from tests.inspector.support import TOKEN
from tests.support.postgres import new_database

AUTH = {"Authorization": f"Bearer {TOKEN}"}
RECORDS = "/_inspector/api/records"


def records(client: httpx.Client, **params: str) -> list[dict[str, Any]]:
    response = client.get(RECORDS, params=params, headers=AUTH)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["records"]
    return found


def test_filters_are_values_and_a_nul_finds_what_was_written(postgres_server_url: str) -> None:
    db = new_database(postgres_server_url)
    password = db.split("://", 1)[1].split("@", 1)[0].partition(":")[2]
    assert password
    config = ServerConfig(tokens=[TOKEN], inspector=True, operations=OperationsConfig(audit=[db]))
    with running_server(refund_gate.app, config=config) as server, server.http() as client:
        body = {
            "hook_event_name": "PreToolUse",
            "session_id": "s-1",
            "tool_name": "odd\x00tool",
            "tool_use_id": "t-1",
            "tool_input": {},
        }
        assert client.post("/hooks", json=body).status_code == 200
        deadline = time.monotonic() + 30
        while not records(client, kind="answer") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(records(client, kind="answer")) == 1

        assert [r["tool_name"] for r in records(client, event="PreToolUse")] == ["odd\ufffdtool"]
        # a value Postgres cannot be sent: no such record, not a failed query
        assert records(client, event="PreToolUse\x00") == []
        found = client.get("/_inspector/api/record", params={"event_id": "x\x00"}, headers=AUTH)
        assert found.status_code == 404, found.text
        for injected in ("x' OR '1'='1", "deny'; DROP TABLE handler_kit_audit; --"):
            assert records(client, decision=injected) == []
        assert len(records(client, kind="answer")) == 1

        page = client.get("/_inspector", headers=AUTH)
        assert page.status_code == 200
        assert password not in page.text
