"""The inspector reading a Postgres audit trail: two servers (two replicas) write one database,
and the inspector of either lists both servers' records, filtered in SQL; the page names the
database without its password."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from example_servers import refund_gate
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.inspector.core import Inspector
from handler_kit.ops.audit.postgres import PostgresSink, PostgresStore
from handler_kit.ops.audit.records import serialize
from handler_kit.testing import RunningServer, running_server
from tests.inspector.support import TOKEN
from tests.support.http import error_body
from tests.support.postgres import new_database
from tests.support.processes import serve_asgi

PAGE = "/_inspector"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def db(postgres_server_url: str) -> str:
    return new_database(postgres_server_url)


@contextlib.contextmanager
def replica(db: str, name: str) -> Iterator[RunningServer]:
    """The refund gate served with the inspector on and the Postgres audit trail, as the
    replica ``name``."""
    config = ServerConfig(
        tokens=[TOKEN],
        inspector=True,
        operations=OperationsConfig(audit=[db], replica=name, app_version="2.0"),
    )
    with running_server(refund_gate.app, config=config) as server:
        yield server


def refund(server: RunningServer, tool_use_id: str, amount: int) -> None:
    body = {
        "hook_event_name": "PreToolUse",
        "session_id": "s-1",
        "tool_name": "issue_refund",
        "tool_use_id": tool_use_id,
        "tool_input": {"amount": amount},
    }
    response = server.http().post("/hooks/refund_gate", json=body)
    assert response.status_code == 200, response.text


def records(server: RunningServer, **params: Any) -> dict[str, Any]:
    response = httpx.get(f"{server.url}{PAGE}/api/records", params=params, headers=AUTH)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def wait_for(server: RunningServer, count: int, **params: Any) -> list[dict[str, Any]]:
    """The API's records once ``count`` match (the trail writes a moment after answering)."""
    deadline = time.monotonic() + 30
    while True:
        found = records(server, **params)["records"]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_either_replicas_inspector_shows_both_replicas_records(db: str) -> None:
    with replica(db, "replica-a") as a, replica(db, "replica-b") as b:
        for i in range(3):
            refund(a, f"a-{i}", 900)  # deny
            refund(b, f"b-{i}", 20)  # no opinion
        for server in (a, b):
            answers = wait_for(server, 6, kind="decision")
            assert {r["replica"] for r in answers} == {"replica-a", "replica-b"}
            assert len(answers) == 6
            denied = records(server, decision="deny")["records"]
            assert {r["replica"] for r in denied} == {"replica-a"} and len(denied) == 3
            undecided = records(server, kind="decision", decision="none")["records"]
            assert {r["replica"] for r in undecided} == {"replica-b"} and len(undecided) == 3

        # one record whole, written by the other replica, with its handler call
        first = next(r for r in wait_for(a, 6) if r["replica"] == "replica-b")
        detail = httpx.get(
            f"{a.url}{PAGE}/api/record", params={"event_id": first["event_id"]}, headers=AUTH
        ).json()
        assert detail["replica"] == "replica-b" and detail["app_version"] == "2.0"
        assert [h["name"] for h in detail["handlers"]] == ["refund_gate"]
        assert detail["shadows"] == []

        # polling: only what was written after the last id seen
        last = records(a)["last_id"]
        refund(b, "b-late", 900)
        late = wait_for(a, 1, since_id=last)
        assert {r["replica"] for r in late} == {"replica-b"}
        assert all(r["id"] > last for r in late)

        page = httpx.get(f"{a.url}{PAGE}", headers=AUTH)
        assert page.status_code == 200
        password = db.split("@", 1)[0].rsplit(":", 1)[1]
        assert "postgresql://postgres:***@" in page.text and password not in page.text


def test_filters_are_done_before_the_limit(db: str) -> None:
    """A filter finds its one record under hundreds of newer ones: it is applied in the
    query, not to the newest page afterwards."""
    sink = PostgresSink(db)
    old = {"event_id": "evt_old", "kind": "answer", "ts": 1.0, "decision": "deny"}
    newer = [
        {"event_id": f"evt_{i:04d}", "kind": "answer", "ts": 2.0 + i, "decision": "allow"}
        for i in range(300)
    ]
    sink.write(serialize([old]))
    sink.write(serialize(newer))
    sink.close()
    with replica(db, "replica-a") as a:
        newest = records(a, limit=200)["records"]
        assert len(newest) == 200 and {r["decision"] for r in newest} == {"allow"}
        denied = records(a, decision="deny")["records"]
        assert [r["event_id"] for r in denied] == ["evt_old"]
        assert records(a, kind="invocation")["records"] == []
        assert records(a, decision="none")["records"] == []


def test_a_database_it_cannot_reach_is_a_503_not_a_traceback(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The inspector over a store whose database refuses it (a wrong password): the API
    answers a JSON 503, the page a 503, and the log names the database without a password."""
    password = db.split("@", 1)[0].rsplit(":", 1)[1]
    wrong = db.replace(password, "not-" + password[::-1])
    store = PostgresStore(wrong, timeout=1)
    inspector = Inspector(store, auth=None, close_store=store.aclose)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with inspector.lifespan():
            yield

    app = Starlette(routes=inspector.routes, lifespan=lifespan)
    with caplog.at_level(logging.WARNING), serve_asgi(app, None) as port:
        base = f"http://127.0.0.1:{port}{PAGE}"
        api = httpx.get(f"{base}/api/records", timeout=30)
        error_body(api, 503, "unavailable")
        assert httpx.get(f"{base}/api/record?event_id=evt_1", timeout=30).status_code == 503
        assert httpx.get(base, timeout=30).status_code == 503
    assert "PostgresStore('postgresql://postgres:***@" in caplog.text
    assert password not in caplog.text and "not-" not in caplog.text
