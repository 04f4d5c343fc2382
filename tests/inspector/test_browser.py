"""The inspector page in a real browser: headless Chromium (Debian's) driven by Playwright.

A support-desk server (the refund gate and the context loader together) runs on 127.0.0.1
over HTTPS with the inspector on; the browser logs in with the form, the test fires a thread of
real hook events at the server, and the browser must show them arriving without a reload, open
one, and filter.

Skipped only when Chromium or Playwright is truly absent outside CI; with ``CI=true`` a missing
browser fails the run (``.ci/run`` installs it). Set ``HANDLER_KIT_UPDATE_SCREENSHOT=1`` to
write ``docs/inspector.png`` (the picture of docs/inspector.md) from this run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from handler_kit import HookApp
from handler_kit.inspector.session import COOKIE_NAME
from handler_kit.testing import RunningServer
from tests.inspector.support import TOKEN
from tests.support.processes import REPO

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]
SCREENSHOT = REPO / "docs" / "inspector.png"
# Every wait is "until the page shows it"; this bound only keeps a broken run from hanging.
WAIT_MS = 30_000


def require_browser() -> Any:
    """Playwright's sync API, or skip (fail in CI) when the browser stack is missing."""
    problems = []
    if not Path(CHROMIUM).is_file():
        problems.append(f"{CHROMIUM} not found (apt-get install chromium chromium-driver)")
    try:
        from playwright import sync_api
    except ImportError:
        problems.append("playwright is not installed (pip install -e '.[dev]')")
        sync_api = None
    if problems:
        message = "; ".join(problems)
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"CI must run the browser test: {message}")
        pytest.skip(message)
    return sync_api


THREAD = {
    "session_id": "th-42",
    "thread_id": "th-42",
    "channel": "slack",
    "channel_user_id": "U0123456789",
    "user_email": "dana@example.com",
}
EVENTS: list[dict[str, Any]] = [
    {"hook_event_name": "SessionStart", "source": "startup"},
    {"hook_event_name": "UserPromptSubmit", "prompt": "Can I return order #4821? Refund?"},
    {
        "hook_event_name": "PreToolUse",
        "tool_name": "issue_refund",
        "tool_input": {"order_id": "4821", "amount": 640, "card_number": "4111111111111111"},
        "tool_use_id": "toolu_1",
    },
    {
        "hook_event_name": "PreToolUse",
        "tool_name": "issue_refund",
        "tool_input": {"order_id": "4907", "amount": 40},
        "tool_use_id": "toolu_2",
    },
    {
        "hook_event_name": "PostToolUse",
        "tool_name": "issue_refund",
        "tool_input": {"order_id": "4907", "amount": 40},
        "tool_response": {"ok": True},
        "tool_use_id": "toolu_2",
    },
    {"hook_event_name": "Stop", "last_assistant_message": "I refunded $40 on order 4907."},
    {
        "hook_event_name": "Stop",
        "last_assistant_message": "I refunded $40 on order 4907.",
        "stop_hook_active": True,
    },
]
# rows: one per decision, its handlers in it (2 + 5 + 1 + 1 + 1 + 1 + 1 handler calls)
RECORDS = len(EVENTS)


def fire(server: RunningServer, app: HookApp) -> None:
    with server.client() as client:
        for event in EVENTS:
            assert client.send({**THREAD, **event}).status_code == 200
    assert server.asgi is not None
    ops = server.asgi.operations
    assert ops is not None and ops.audit is not None and ops.audit.flush()


def test_log_in_watch_events_arrive_open_one_and_filter(desk_server: Any, tmp_path: Path) -> None:
    sync_api = require_browser()
    expect = sync_api.expect
    expect.set_options(timeout=WAIT_MS)
    server, app = desk_server
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            context = chromium.new_context(
                ignore_https_errors=True,  # the server's certificate is from a throw-away CA
                viewport={"width": 1440, "height": 980},
            )
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)

            # the page sends a browser without a session to the login form
            page.goto(server.url + "/_inspector")
            expect(page).to_have_url(re.compile(r"/_inspector/login\?next="))
            # the login page's background is the whole window, not only its top
            body_height = page.evaluate("document.body.getBoundingClientRect().height")
            assert body_height >= 980, body_height
            page.fill("#token", "a-wrong-token-of-some-length")
            page.click("#login")
            expect(page.locator(".error")).to_contain_text("not accepted")
            page.fill("#token", TOKEN)
            page.click("#login")
            expect(page).to_have_url(server.url + "/_inspector")
            rows = page.locator("#records tbody tr")
            expect(rows).to_have_count(0)
            cookie = next(c for c in context.cookies() if c["name"] == COOKIE_NAME)
            assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Strict"
            assert TOKEN not in cookie["value"]
            assert COOKIE_NAME not in page.evaluate("document.cookie")  # HttpOnly

            # events fired at the server appear, without a reload
            fire(server, app)
            expect(rows).to_have_count(RECORDS)
            expect(page.locator("#live")).to_have_text("live")
            expect(page.locator("#sparklines figure.spark")).to_have_count(10)
            deny = page.locator('#records tbody tr[data-kind="decision"][data-decision="deny"]')
            expect(deny).to_have_count(1)
            expect(deny.locator("td.handler")).to_have_text("refund_gate")
            expect(deny.locator("td.tool")).to_have_text("issue_refund")
            expect(deny.locator("td.reason")).to_have_text(
                "Refunds over $500 need a human approver."
            )
            expect(deny.locator("td.latency")).to_have_text(re.compile(r"^\d+\.\d ms$"))

            # open one: the input and output, redacted by the audit rules
            deny.click()
            detail = page.locator("#detail")
            expect(detail).to_be_visible()
            expect(page.locator("#detail-title")).to_have_text("PreToolUse · refund_gate")
            expect(page.locator("#detail-input")).to_contain_text('"amount": 640')
            expect(page.locator("#detail-input")).to_contain_text('"card_number": "[REDACTED]"')
            expect(page.locator("#detail-input")).not_to_contain_text("4111111111111111")
            expect(page.locator("#detail-output")).to_contain_text('"permissionDecision": "deny"')
            # its handlers, in the detail pane
            expect(page.locator("#detail-invocations")).to_contain_text(
                "refund_gate: ok, deny \u2014 Refunds over $500 need a human approver."
            )
            expect(page.locator("#detail-shadows")).to_be_hidden()
            # with the pane open the reason keeps its room: readable, not one letter
            reason_width = deny.locator("td.reason").evaluate(
                "c => c.getBoundingClientRect().width"
            )
            assert reason_width >= 200, reason_width

            # filter by decision, by event, by status
            page.select_option("#filter-decision", "deny")
            expect(rows).to_have_count(1)  # one row per decision
            expect(page).to_have_url(re.compile(r"\?decision=deny$"))
            for decision in rows.evaluate_all("rows => rows.map(r => r.dataset.decision)"):
                assert decision == "deny"
            page.select_option("#filter-decision", "")
            page.select_option("#filter-event", "UserPromptSubmit")
            expect(rows).to_have_count(1)  # one decision of five fragment handlers
            expect(rows.first.locator("td.handler")).to_have_text(re.compile(r"^\w+(, \w+){4}$"))
            page.select_option("#filter-event", "")
            page.select_option("#filter-status", "loop_guarded")
            expect(rows).to_have_count(1)
            expect(rows.first.locator("td.event")).to_have_text("Stop")

            # the docs' picture: everything, with the denied refund open
            page.select_option("#filter-status", "")
            # no shadow candidate runs here: none disagreed
            page.select_option("#filter-shadow", "disagrees")
            expect(rows).to_have_count(0)
            expect(page).to_have_url(re.compile(r"\?shadow=disagrees$"))
            page.select_option("#filter-shadow", "")
            expect(rows).to_have_count(RECORDS)
            page.locator('#records tbody tr[data-kind="decision"][data-decision="deny"]').click()
            expect(page.locator("#detail-output")).to_contain_text("permissionDecision")
            target = (
                SCREENSHOT
                if os.environ.get("HANDLER_KIT_UPDATE_SCREENSHOT") == "1"
                else tmp_path / "inspector.png"
            )
            page.screenshot(path=str(target), full_page=True)
            assert target.stat().st_size > 10_000

            # a filtered view stays live: new matching events arrive, others do not
            page.select_option("#filter-event", "Stop")
            expect(rows).to_have_count(2)
            with server.client() as client:
                client.send({**THREAD, **EVENTS[0]})  # SessionStart: filtered out
                client.send({**THREAD, **EVENTS[5]})  # Stop: shown
            assert server.asgi is not None
            ops = server.asgi.operations
            assert ops is not None and ops.audit is not None and ops.audit.flush()
            expect(rows).to_have_count(3)

            # log out: the API refuses the browser again
            page.click(".logout button")
            expect(page).to_have_url(re.compile(r"/_inspector/login"))
            status = page.evaluate(
                "fetch('/_inspector/api/records', {credentials: 'same-origin'}).then(r => r.status)"
            )
            assert status == 401
        finally:
            chromium.close()
