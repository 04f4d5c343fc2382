"""The inspector's login and API under attack, over real HTTP on 127.0.0.1: a burst of wrong
tokens is limited per client address and summed up in the log, and odd input (a form with
many fields, a ``since_id`` past SQLite's integers) is a 4xx, never a 500."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from example_servers.refund_gate import app as refund_app
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.inspector.session import COOKIE_NAME
from handler_kit.testing import RunningServer, running_server
from tests.support.http import error_body
from tests.support.logs import wait_for_record

TOKEN = "inspector-limits-token-0123456789"
WRONG = "inspector-limits-wrong-0123456789"
PAGE = "/_inspector"
LIMIT = 5
WINDOW = 3.0  # waited out by the test: short, yet the burst and its checks fit in it
# well within one window, even on a slow machine
BURST = 30


@pytest.fixture
def inspector(tmp_path: Path) -> Iterator[RunningServer]:
    config = ServerConfig(
        tokens=[TOKEN],
        inspector=True,
        operations=OperationsConfig(audit=[f"sqlite:{tmp_path / 'audit.sqlite3'}"]),
        auth_failure_limit=LIMIT,
        auth_failure_window=WINDOW,
    )
    with running_server(refund_app, config=config) as server:
        yield server


def browser(server: RunningServer) -> httpx.Client:
    """A client that, like a browser, sends no bearer header."""
    return httpx.Client(base_url=server.url, timeout=10)


def log_in(client: httpx.Client, token: str) -> httpx.Response:
    return client.post(f"{PAGE}/login", data={"token": token, "next": PAGE})


def logged_by_handler_kit(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("handler_kit") and r.levelno >= logging.WARNING
    ]


def test_a_burst_of_bad_logins_gets_429s_and_a_few_log_lines(inspector, caplog) -> None:
    caplog.set_level(logging.INFO)
    with browser(inspector) as client:
        responses = [log_in(client, WRONG) for _ in range(BURST)]
        statuses = [r.status_code for r in responses]
        assert statuses[:LIMIT] == [401] * LIMIT
        assert statuses[LIMIT:] == [429] * (BURST - LIMIT)
        assert "That token was not accepted." in responses[0].text
        body = error_body(responses[-1], 429, "too_many_requests")
        retry = int(responses[-1].headers["retry-after"])
        assert 1 <= retry <= WINDOW and f"{retry} s" in body["message"]
        # over the limit the login is refused whatever the token, until the window ends
        assert log_in(client, TOKEN).status_code == 429
        # the JSON API with a wrong bearer header shares the count
        api = client.get(f"{PAGE}/api/records", headers={"Authorization": f"Bearer {WRONG}"})
        error_body(api, 429, "too_many_requests")
        # the window ends as the server's timer sums up its failures (the timer was armed
        # by the window's first failure)
        wait_for_record(caplog, "more refused")
        response = log_in(client, TOKEN)
        assert response.status_code == 303, response.text
        assert COOKIE_NAME in response.headers["set-cookie"]
        assert client.get(f"{PAGE}/api/records").status_code == 200
    lines = logged_by_handler_kit(caplog)
    assert 1 <= len(lines) <= 4, lines
    assert "authentication failed from 127.0.0.1" in lines[0]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert WRONG not in logged and TOKEN not in logged


def test_a_login_form_with_many_fields_is_the_login_page_with_an_error(inspector) -> None:
    fields = {f"extra{n}": "x" for n in range(40)}
    with browser(inspector) as client:
        response = client.post(f"{PAGE}/login", data={"token": TOKEN, **fields})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert "That form was not a login." in response.text
    assert "Traceback" not in response.text
    # a form with a field or two more than the login's still logs in
    with browser(inspector) as client:
        response = client.post(f"{PAGE}/login", data={"token": TOKEN, "next": PAGE, "x": "1"})
    assert response.status_code == 303


@pytest.mark.parametrize("since_id", [str(2**63), str(2**64), "9" * 40, "-1"])
def test_a_since_id_sqlite_cannot_hold_is_a_400(inspector, since_id: str) -> None:
    with inspector.http(timeout=10) as http:
        response = http.get(f"{PAGE}/api/records", params={"since_id": since_id})
        error_body(response, 400, "bad_request")
        # the server is fine afterwards, and the largest id is accepted
        fine = http.get(f"{PAGE}/api/records", params={"since_id": str(2**63 - 1)})
    assert fine.status_code == 200
    assert fine.json() == {"records": [], "last_id": 2**63 - 1}
