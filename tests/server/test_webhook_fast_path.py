"""A handler's own route (``POST /hooks/{name}``) answers on the webhook's fast path, with
what was decided at start-up; every answer it gives must be the general path's
(:meth:`Webhook.handle`) for the same request: same status, same body. The fast path's answers
come from real uvicorn; the general path's from the same app's Webhook, in process."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from handler_kit.config import ServerConfig
from handler_kit.server.webhook import HTTPError, Webhook
from handler_kit.testing import running_server
from tests.server.support import TOKEN, client_for
from tests.support.apps import webhook

MAX_BODY = 4096


def pre(tool: str = "issue_refund", **fields: Any) -> bytes:
    event = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": tool,
        "tool_input": {"amount": 640},
        **fields,
    }
    return json.dumps(event).encode()


# (route, body, headers): every branch of the route's path
CASES: list[tuple[str, bytes, dict[str, str]]] = [
    ("gate", pre(), {"X-Runbear-Hook-Event": "PreToolUse"}),
    ("gate", pre(), {}),
    ("gate", pre("lookup_order"), {}),  # the matcher does not match: no opinion
    ("gate", pre(tool_input={"amount": 40}), {}),
    ("named_only", pre("special_tool"), {}),
    ("named_only", pre("issue_refund"), {}),
    ("gate", b"{not json", {}),  # fail-closed gate: its safe decision
    ("named_only", b"{not json", {}),  # not fail-closed: 400
    ("named_only", b"[1, 2]", {}),
    ("named_only", b'"text"', {}),
    ("named_only", pre(session_id=5), {}),  # validation fails
    ("gate", pre(session_id=5), {}),
    ("named_only", b'{"hook_event_name": "PreToolUse", "x": "\\udc8f"}', {}),
    ("named_only", pre(), {"X-Runbear-Hook-Event": "PostToolUse"}),  # header mismatch
    ("gate", pre(), {"X-Runbear-Hook-Event": "Stop"}),
    ("named_only", json.dumps({"hook_event_name": "Stop"}).encode(), {}),  # event mismatch
    (
        "named_only",
        json.dumps({"hook_event_name": "Stop"}).encode(),
        {"X-Runbear-Hook-Event": "PreToolUse"},
    ),
    (
        "named_only",
        json.dumps({"hook_event_name": "Stop"}).encode(),
        {"X-Runbear-Hook-Event": "Stop"},
    ),
    ("gate", pre(pad="x" * MAX_BODY), {}),  # over the body cap: the gate's safe decision
    ("named_only", pre(pad="x" * MAX_BODY), {}),  # 413
    ("gate", pre("crash_gate"), {}),
    (
        "raises",
        json.dumps({"hook_event_name": "PostToolUse", "tool_name": "crash_tool"}).encode(),
        {},
    ),
]


@pytest.fixture(scope="module")
def fast() -> Any:
    config = ServerConfig(tokens=[TOKEN], max_body_bytes=MAX_BODY)
    with running_server(webhook.app, tls=True, config=config) as running:
        yield running


def general(route: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    """The general path's answer, :meth:`Webhook.handle`, for the same request."""
    hook = Webhook(webhook.app, max_body_bytes=MAX_BODY, require_event_header=False)
    scope = {
        "type": "http",
        "method": "POST",
        "path": f"/hooks/{route}",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        + [(b"content-length", str(len(body)).encode())],
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        answer = asyncio.run(hook.handle(scope, receive))
    except HTTPError as error:
        return error.status, json.loads(error.body())
    return 200, json.loads(answer)


@pytest.mark.parametrize(("route", "body", "headers"), CASES)
def test_the_fast_path_answers_as_the_general_path(
    fast: Any, route: str, body: bytes, headers: dict[str, str]
) -> None:
    with client_for(fast) as client:
        response = client.post(
            f"/hooks/{route}",
            content=body,
            headers={"Content-Type": "application/json", **headers},
        )
    assert (response.status_code, response.json()) == general(route, body, headers)


def test_a_body_in_several_messages_is_read_whole(fast: Any) -> None:
    def chunks() -> Any:
        body = pre()
        yield body[:10]
        yield body[10:]

    with client_for(fast) as client:
        response = client.post("/hooks/gate", content=chunks())
    assert response.status_code == 200
    assert response.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
