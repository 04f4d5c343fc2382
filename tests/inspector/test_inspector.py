"""The inspector: opt-in, its own login in front of the server's auth, and the audit trail's
records through its JSON API, over real HTTP(S) on 127.0.0.1.

(The page in a real browser is tested in ``test_browser.py``.)
"""

from __future__ import annotations

import argparse
import json
import re
import ssl
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from handler_kit import HookApp, PreToolUse
from handler_kit.auth import JWTAuth
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.inspector import render
from handler_kit.inspector.session import COOKIE_NAME, SessionSigner, jwt_expiry, session_secret
from handler_kit.testing import RunningServer, running_server
from tests.inspector.support import TOKEN, Inspected
from tests.support.processes import REPO, clean_env, free_port, process, serve_argv

PAGE = "/_inspector"


def fire(server: RunningServer, app: HookApp) -> None:
    """Three answers: a deny, a no-opinion, a Stop block; then wait for the audit writer."""
    with server.client() as client:
        refund = {"hook_event_name": "PreToolUse", "tool_name": "issue_refund"}
        secret_input = {"amount": 640, "order_id": "4821", "api_token": "sk-live-0123456789abcdef"}
        assert client.send({**refund, "tool_input": secret_input}).decision == "deny"
        assert client.send({**refund, "tool_input": {"amount": 40}}).no_opinion
        stop = {"hook_event_name": "Stop", "last_assistant_message": "Done."}
        assert client.send(stop).decision == "block"
    assert server.asgi is not None
    ops = server.asgi.operations
    assert ops is not None and ops.audit is not None
    assert ops.audit.flush()


def browser(server: RunningServer) -> httpx.Client:
    """A client that, like a browser, sends no bearer header: only cookies."""
    verify: Any = ssl.create_default_context(cafile=server.ca_file) if server.ca_file else True
    return httpx.Client(base_url=server.url, verify=verify)


def log_in(client: httpx.Client, token: str = TOKEN, **extra: str) -> httpx.Response:
    return client.post(f"{PAGE}/login", data={"token": token, **extra})


# -- off by default ----------------------------------------------------------------------


def test_off_by_default_and_not_opened_by_the_public_paths(refund_app: HookApp) -> None:
    with running_server(refund_app, tokens=[TOKEN]) as server:
        assert httpx.get(server.url + PAGE).status_code == 401  # the outer layer: no token
        with server.http() as http:
            assert http.get(PAGE).status_code == 404
            assert http.get(f"{PAGE}/login").status_code == 404


def test_env_and_cli_turn_it_on() -> None:
    from handler_kit.cli.serve import add_arguments

    assert ServerConfig.from_env({}).inspector is False
    assert ServerConfig.from_env({"HANDLER_KIT_INSPECTOR": "1"}).inspector is True
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args(["m:app", "--inspector"]).inspector is True
    assert parser.parse_args(["m:app"]).inspector is None


# -- login and sessions ------------------------------------------------------------------


def test_a_browser_is_sent_to_the_login_form(inspected: Inspected) -> None:
    with inspected() as (server, _), browser(server) as client:
        page = client.get(PAGE, params={"event": "Stop"})
        assert page.status_code == 303
        assert page.headers["location"] == f"{PAGE}/login?next=%2F_inspector%3Fevent%3DStop"
        form = client.get(page.headers["location"])
        assert form.status_code == 200
        assert 'type="password"' in form.text and 'value="/_inspector?event=Stop"' in form.text
        api = client.get(f"{PAGE}/api/records")
        assert api.status_code == 401 and api.headers["www-authenticate"].startswith("Bearer")


def test_login_sets_a_signed_httponly_strict_cookie_not_the_token(inspected: Inspected) -> None:
    with inspected() as (server, _), browser(server) as client:
        refused = log_in(client, "not-the-token-but-long-enough")
        assert refused.status_code == 401 and "not accepted" in refused.text
        assert COOKIE_NAME not in client.cookies

        response = log_in(client, next="/_inspector?decision=deny")
        assert response.status_code == 303
        assert response.headers["location"] == "/_inspector?decision=deny"
        cookie = response.headers["set-cookie"]
        assert f"{COOKIE_NAME}=" in cookie
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert "Path=/_inspector" in cookie
        assert "Secure" not in cookie  # plain http here; see the https test
        assert TOKEN not in cookie
        assert client.get(PAGE).status_code == 200
        assert client.get(f"{PAGE}/api/records").status_code == 200


def test_the_cookie_is_secure_over_https(inspected: Inspected) -> None:
    with inspected(tls=True) as (server, _), browser(server) as client:
        response = log_in(client)
        assert response.status_code == 303 and "Secure" in response.headers["set-cookie"]


def test_the_session_cookie_opens_the_inspector_only(inspected: Inspected) -> None:
    with inspected() as (server, _), browser(server) as client:
        log_in(client)
        value = client.cookies[COOKIE_NAME]
        # the outer layer still wants a bearer token everywhere else, cookie or not
        hooks = httpx.post(
            server.url + "/hooks",
            json={"hook_event_name": "Stop"},
            cookies={COOKIE_NAME: value},
        )
        assert hooks.status_code == 401
        metrics_like = httpx.get(server.url + "/mcp", cookies={COOKIE_NAME: value})
        assert metrics_like.status_code == 401


def test_a_bad_bearer_is_refused_even_with_a_good_cookie(inspected: Inspected) -> None:
    with inspected() as (server, _), browser(server) as client:
        log_in(client)
        bad = client.get(f"{PAGE}/api/records", headers={"Authorization": "Bearer wrong-wrong"})
        assert bad.status_code == 401
        good = httpx.get(
            server.url + f"{PAGE}/api/records", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert good.status_code == 200


def test_a_forged_or_tampered_cookie_is_refused(inspected: Inspected) -> None:
    with inspected() as (server, _), browser(server) as client:
        log_in(client)
        value = client.cookies[COOKIE_NAME]
        forged = SessionSigner(b"another-secret-another-secret!!").issue("token#0")
        # a changed signature: its last two characters replaced by two others
        tampered = value[:-2] + ("AA" if value[-2:] != "AA" else "BB")
        assert tampered != value
        for cookie in (forged, tampered, value.replace("v1.", "v2."), "x", ""):
            response = httpx.get(server.url + f"{PAGE}/api/records", cookies={COOKIE_NAME: cookie})
            assert response.status_code == 401, cookie


@pytest.mark.parametrize(
    "target", ["https://evil.example/", "//evil.example/_inspector", "/hooks", "/_inspector\\x"]
)
def test_login_never_redirects_off_the_inspector(target: str, inspected: Inspected) -> None:
    with inspected() as (server, _), browser(server) as client:
        assert log_in(client, next=target).headers["location"] == PAGE


def test_logout_clears_the_cookie(inspected: Inspected) -> None:
    with inspected() as (server, _), browser(server) as client:
        log_in(client)
        response = client.post(f"{PAGE}/logout")
        assert response.status_code == 303
        assert 'hk_inspector=""' in response.headers["set-cookie"]
        assert client.get(f"{PAGE}/api/records").status_code == 401


def test_a_jwt_session_never_outlives_the_jwt(inspected: Inspected) -> None:
    secret = "jwt-secret-for-the-inspector-test-0123456789"
    auth = JWTAuth(algorithms=["HS256"], key=secret)
    token = jwt.encode({"sub": "dana", "exp": int(time.time()) + 120}, secret, algorithm="HS256")
    assert jwt_expiry(token) is not None and jwt_expiry(TOKEN) is None
    with inspected(tokens=[], auth=auth) as (server, _), browser(server) as client:
        response = log_in(client, token)
        assert response.status_code == 303
        max_age = int(response.headers["set-cookie"].split("Max-Age=")[1].split(";")[0])
        assert 0 < max_age <= 120
        assert client.get(f"{PAGE}/api/records").status_code == 200


def test_workers_sharing_the_secret_accept_each_others_sessions() -> None:
    secret = ServerConfig.from_env({"HANDLER_KIT_INSPECTOR_SECRET": "shared-by-every-worker"})
    shared = secret.inspector_secret
    one, two = SessionSigner(session_secret(shared)), SessionSigner(session_secret(shared))
    assert two.principal(one.issue("token#1")) == "token#1"
    lone = SessionSigner(session_secret(None))  # no secret: random, per process
    assert lone.principal(one.issue("token#1")) is None


def test_sessions_expire() -> None:
    signer = SessionSigner(b"0123456789abcdef0123456789abcdef", max_age=60)
    value = signer.issue("token#0", now=1000.0)
    assert signer.principal(value, now=1059.0) == "token#0"
    assert signer.principal(value, now=1060.0) is None
    assert signer.principal(signer.issue("t", now=1000.0, max_age=10**9), now=1061.0) is None


def test_without_auth_there_is_no_login(inspected: Inspected) -> None:
    with inspected(tokens=[], insecure_no_auth=True) as (server, _):
        assert httpx.get(server.url + PAGE).status_code == 200


# -- the records ---------------------------------------------------------------------------


def test_records_filters_and_since_id(inspected: Inspected) -> None:
    with inspected() as (server, app), server.http() as http:
        fire(server, app)
        api = f"{PAGE}/api/records"
        everything = http.get(api).json()
        records = everything["records"]
        assert len(records) == 3  # one row per decision, its handler calls in it
        assert records[0]["event"] == "Stop"  # newest first
        ids = [r["id"] for r in records]
        assert ids == sorted(ids, reverse=True) and everything["last_id"] == ids[0]

        denies = http.get(api, params={"decision": "deny"}).json()
        assert [(r["handlers"], r["reason"]) for r in denies["records"]] == [
            (["refund_gate"], "Refunds over $500 need a human approver.")
        ]
        no_opinion = http.get(api, params={"decision": "none", "event": "PreToolUse"}).json()
        assert len(no_opinion["records"]) == 1  # the $40 call
        stops = http.get(api, params={"event": "Stop", "kind": "decision"}).json()["records"]
        assert [(r["decision"], r["handlers"]) for r in stops] == [("block", ["cite_ticket"])]
        assert http.get(api, params={"status": "timeout"}).json()["records"] == []

        assert http.get(api, params={"kind": "shadow"}).json()["records"] == []
        newer = http.get(api, params={"since_id": ids[2]}).json()
        assert [r["id"] for r in newer["records"]] == ids[:2]
        assert http.get(api, params={"since_id": ids[0]}).json() == {
            "records": [],
            "last_id": ids[0],
        }
        assert http.get(api, params={"since_id": "x"}).status_code == 400


def test_record_detail_is_redacted_by_the_audit_rules(inspected: Inspected) -> None:
    with inspected() as (server, app), server.http() as http:
        fire(server, app)
        answers = http.get(f"{PAGE}/api/records", params={"decision": "deny"}).json()["records"]
        detail = http.get(f"{PAGE}/api/record", params={"event_id": answers[0]["event_id"]})
        record = detail.json()
        assert record["input"]["tool_input"] == {
            "amount": 640,
            "order_id": "4821",
            "api_token": "[REDACTED]",
        }
        assert "sk-live" not in detail.text
        assert record["output"]["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert [h["name"] for h in record["handlers"]] == ["refund_gate"]
        assert record["handlers"][0]["decision"] == "deny" and record["shadows"] == []
        missing = http.get(f"{PAGE}/api/record", params={"event_id": "evt_nope"})
        assert missing.status_code == 404


def test_page_rows_sparklines_and_headers(inspected: Inspected) -> None:
    with inspected() as (server, app), server.http() as http:
        fire(server, app)
        page = http.get(PAGE)
        assert page.status_code == 200
        assert page.text.count("<tr tabindex") == 3
        assert 'data-decision="deny"' in page.text
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["cache-control"] == "no-store"
        assert "<script>" not in page.text and "style=" not in page.text  # CSP-clean
        filtered = http.get(PAGE, params={"decision": "deny"})
        assert filtered.text.count("<tr tabindex") == 1
        assert '<option value="deny" selected>' in filtered.text
        spark = http.get(f"{PAGE}/api/sparklines").json()
        assert sorted(spark["handlers"]) == ["cite_ticket", "refund_gate"]
        assert len(spark["handlers"]["refund_gate"]) == 2
        assert spark["html"].count("<svg") == 2 and "<polyline" in spark["html"]
        js = httpx.get(server.url + f"{PAGE}/static/inspector.js")
        assert js.status_code == 200 and "textContent" in js.text


def test_the_inspector_adds_a_sqlite_sink_when_none_is_configured(
    tmp_path: Path, inspected: Inspected
) -> None:
    config = {"operations": OperationsConfig(), "cache_dir": str(tmp_path / "cache")}
    with inspected(**config) as (server, app), server.http() as http:
        fire(server, app)
        assert len(http.get(f"{PAGE}/api/records").json()["records"]) == 3
        assert "added by the inspector" in http.get(PAGE).text
    assert (tmp_path / "cache" / "handler-kit" / "inspector" / f"{app.name}.sqlite3").is_file()


def test_the_decisions_a_shadow_disagreed_with(tmp_path: Path, refund_app: HookApp) -> None:
    """``shadow=disagrees``: the decisions whose shadow record says the candidate answered
    otherwise; a decision's detail lists its shadows."""
    import asyncio

    from handler_kit.ops.audit.capture import Observed
    from handler_kit.ops.audit.records import RecordPolicy
    from handler_kit.ops.audit.sqlite import SQLiteSink
    from handler_kit.ops.audit.trail import AuditTrail

    path = tmp_path / "audit.sqlite3"
    trail = AuditTrail(
        "refund-gate", RecordPolicy(), sinks=[SQLiteSink(str(path))], synchronous=True
    )
    ids = []
    for amount in (640, 700, 40):
        event = PreToolUse(
            hook_event_name="PreToolUse", tool_name="issue_refund", tool_input={"amount": amount}
        )
        answer = asyncio.run(refund_app.answer(event))
        item = Observed(answer, "webhook", None, None, time.time_ns(), 1)
        trail.submit(item)
        ids.append(item.decision_id)
        trail.record_shadow(
            item.decision_id,
            "refund-gate-next",
            "PreToolUse",
            {},
            False,
            [],
            time.time_ns(),
            agrees=amount != 700,  # the candidate lets the $700 refund through
            event=event,
        )
    trail.close()
    config = ServerConfig(
        tokens=[TOKEN], inspector=True, operations=OperationsConfig(audit=[f"sqlite:{path}"])
    )
    with running_server(refund_app, config=config) as server, server.http() as http:
        api = f"{PAGE}/api/records"
        assert [r["event_id"] for r in http.get(api).json()["records"]] == ids[::-1]
        disagreed = http.get(api, params={"shadow": "disagrees"}).json()["records"]
        assert [r["event_id"] for r in disagreed] == [ids[1]]
        shadows = http.get(api, params={"kind": "shadow"}).json()["records"]
        assert [(r["decision_id"], r["agrees"]) for r in shadows] == [
            (ids[2], True),
            (ids[1], False),
            (ids[0], True),
        ]
        detail = http.get(f"{PAGE}/api/record", params={"event_id": ids[1]}).json()
        assert [(s["app"], s["agrees"]) for s in detail["shadows"]] == [("refund-gate-next", False)]
        page = http.get(PAGE, params={"shadow": "disagrees"})
        assert page.text.count("<tr tabindex") == 1
        assert '<option value="disagrees" selected>' in page.text


# -- rendering -----------------------------------------------------------------------------


def test_every_recorded_value_is_escaped() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    html = render.row(
        {
            "id": 1,
            "event_id": '"><script>',
            "kind": "decision",
            "time": "2026-01-01T00:00:00.000Z",
            "event": hostile,
            "handlers": [hostile],
            "decision": hostile,
            "reason": hostile,
            "status": hostile,
            "latency_ms": 1.0,
        }
    )
    assert "<img" not in html and "<script>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    spark = render.sparkline(hostile, [1.0, 2.0])
    assert "<img" not in spark


def test_sparkline_geometry() -> None:
    svg = render.sparkline("gate", [1.0, 3.0, 2.0])
    points = svg.split('points="')[1].split('"')[0].split()
    xs = [float(p.split(",")[0]) for p in points]
    ys = [float(p.split(",")[1]) for p in points]
    assert xs[0] == 0 and xs[-1] == render.SPARK_WIDTH
    assert min(ys) == ys[1]  # the slowest call is the highest point
    assert "max 3.0 ms over 3 calls" in svg
    assert render.sparklines({}) == '<p class="empty">No handler calls yet.</p>'
    once = render.sparkline("gate", [2.0]).split('points="')[1].split('"')[0].split()
    assert len(once) == 2 and once[0].split(",")[1] == once[1].split(",")[1]  # a level line


# -- handler-kit serve --inspector --------------------------------------------------------


@pytest.mark.slow
def test_serve_inspector_with_two_workers(tmp_path: Path) -> None:
    """``serve --inspector`` gives its workers one session secret: a session made by one
    worker is accepted by the other (30 requests, each on a new connection, all succeed)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, XDG_CACHE_HOME=str(tmp_path / "cache"))
    argv = serve_argv("example_servers.context_loader:app", port, "--workers", "2", "--inspector")
    with process(argv, env) as server:
        server.wait_healthy(url, timeout=90)  # two workers start slowly on a loaded machine
        assert f"inspector: {url}/_inspector" in server.output()
        login = httpx.post(f"{url}{PAGE}/login", data={"token": TOKEN})
        assert login.status_code == 303
        cookie = {COOKIE_NAME: login.cookies[COOKIE_NAME]}
        statuses = {
            httpx.get(f"{url}{PAGE}/api/records", cookies=cookie).status_code for _ in range(30)
        }
        assert statuses == {200}
        event = {"hook_event_name": "SessionStart", "channel_user_id": "U0123456789"}
        answer = httpx.post(
            f"{url}/hooks", json=event, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert "Enterprise plan" in answer.text
        deadline = time.monotonic() + 20  # the audit writer is a background thread
        records: list[Any] = []
        while not records and time.monotonic() < deadline:
            records = httpx.get(f"{url}{PAGE}/api/records", cookies=cookie).json()["records"]
            time.sleep(0.05)
        assert [r["handlers"] for r in records] == [["customer_profile"]]
    assert (tmp_path / "cache" / "handler-kit" / "inspector" / "context-loader.sqlite3").is_file()


def test_docs_api_curl_works(inspected: Inspected) -> None:
    page = (REPO / "docs" / "inspector.md").read_text(encoding="utf-8")
    section = page.split("<!-- section:inspector -->")[1].split("<!-- /section:inspector -->")[0]
    (command,) = [
        line for line in section.splitlines() if line.startswith("curl") and "api/records" in line
    ]
    with inspected() as (server, app):
        fire(server, app)
        done = subprocess.run(
            ["bash", "-c", command.replace("http://127.0.0.1:8000", server.url)],
            env={"PATH": "/usr/bin:/bin", "TOKEN": TOKEN},
            capture_output=True,
            text=True,
            check=True,
        )
    records = json.loads(done.stdout)["records"]
    assert [(r["handlers"], r["decision"]) for r in records] == [(["refund_gate"], "deny")]
    assert re.fullmatch(r"evt_[0-9a-f]{32}", records[0]["event_id"])
