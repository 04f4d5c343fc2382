"""A handler that raises ``KeyboardInterrupt`` on a server: its own failure, answered by its
failure policy, and the server stays up. A real Ctrl-C reaches a server as a signal, never out
of a handler, so the exception says nothing about the server (a command hook, where Ctrl-C
does arrive as one, still stops: tests/command).

Through a real ``handler-kit serve`` subprocess, on ``/hooks/{name}``, ``POST /hooks`` and
``/mcp`` (the fast path and the SDK's), for a sync handler (on a thread), an async one that
raises at once and one that raises after it suspended; after each, the process is alive and
answers the next request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.apps import INTERRUPTS_APP
from tests.support.http import TOKEN, error_body
from tests.support.processes import Process, clean_env, free_port, serve

SHAPES = ("sync", "async", "stepped")
GATE_NOTICE = "Blocked by policy: the check {name!r} failed, and it is configured to fail closed."
FAILED_TEXT = "The handler {name!r} failed; see the server log."


@pytest.fixture(scope="module", params=[True, False], ids=["mcp-fast-path", "mcp-sdk"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[Process, httpx.Client]]:
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_MCP_FAST_PATH=str(int(request.param)))
    with (
        serve(INTERRUPTS_APP, port=port, env=env) as process,
        httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=10,
        ) as http,
    ):
        yield process, http


def _event(name: str, tool: str) -> dict[str, Any]:
    event: dict[str, Any] = {
        "hook_event_name": name,
        "session_id": "s1",
        "tool_name": tool,
        "tool_input": {"command": "ls"},
        "tool_use_id": "tu-1",
    }
    if name == "PostToolUse":
        event["tool_response"] = {"ok": True}
    return event


def _deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def _still_serving(server: tuple[Process, httpx.Client]) -> None:
    process, http = server
    assert process.proc.poll() is None, process.output()
    response = http.post("/hooks/calm_gate", json=_event("PreToolUse", "calm"))
    assert (response.status_code, response.json()) == (200, _deny("calm")), process.output()


def _mcp(http: httpx.Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    response = http.post("/mcp", json=body, headers=headers)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


@pytest.mark.parametrize("shape", SHAPES)
def test_a_fail_closed_gate_that_raises_it_denies_on_its_own_route(
    server: tuple[Process, httpx.Client], shape: str
) -> None:
    process, http = server
    response = http.post(f"/hooks/{shape}_gate", json=_event("PreToolUse", shape))
    assert response.status_code == 200, (response.text, process.output())
    assert response.json() == _deny(GATE_NOTICE.format(name=f"{shape}_gate"))
    _still_serving(server)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_fail_closed_gate_that_raises_it_denies_on_the_general_path(
    server: tuple[Process, httpx.Client], shape: str
) -> None:
    """Two handlers run there (the gate and ``no_opinion``), each in a task of its own."""
    process, http = server
    response = http.post("/hooks", json=_event("PreToolUse", shape))
    assert response.status_code == 200, (response.text, process.output())
    assert response.json() == _deny(GATE_NOTICE.format(name=f"{shape}_gate"))
    _still_serving(server)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("path", ["own", "general"])
def test_a_fail_open_handler_that_raises_it_fails(
    server: tuple[Process, httpx.Client], shape: str, path: str
) -> None:
    _, http = server
    route = f"/hooks/{shape}_note" if path == "own" else "/hooks"
    response = http.post(route, json=_event("PostToolUse", shape))
    error_body(response, 500, "handler_failed")
    _still_serving(server)


@pytest.mark.parametrize("shape", SHAPES)
def test_over_mcp_a_gate_that_raises_it_denies_and_an_open_one_is_an_error(
    server: tuple[Process, httpx.Client], shape: str
) -> None:
    _, http = server
    gate = _mcp(http, f"{shape}_gate", {"tool_name": shape, "tool_input": {"command": "ls"}})
    assert "isError" not in gate or gate["isError"] is False, gate
    assert json.loads(gate["content"][0]["text"]) == _deny(GATE_NOTICE.format(name=f"{shape}_gate"))
    _still_serving(server)
    note = _mcp(http, f"{shape}_note", {"tool_name": shape, "tool_response": {"ok": True}})
    assert note["isError"] is True
    assert note["content"][0]["text"] == FAILED_TEXT.format(name=f"{shape}_note")
    _still_serving(server)


def test_only_the_app_a_server_builds_takes_an_interrupt_for_a_failure() -> None:
    """The user's app is left as it was: run directly (as a command hook runs it), a
    KeyboardInterrupt out of a handler still stops the run (raised again, not answered)."""
    from handler_kit import PreToolUse
    from handler_kit.config import ServerConfig
    from handler_kit.server.app import create_asgi_app
    from tests.support.apps.interrupts import app

    event = PreToolUse(session_id="s1", tool_name="async", tool_input={})
    served = create_asgi_app(app, ServerConfig(tokens=[TOKEN], mcp=False)).webhook.hook_app
    assert served.interrupt_fails and not app.interrupt_fails
    assert served.answer_sync(event).output == _deny(GATE_NOTICE.format(name="async_gate"))
    # the one place that tells a run-stopping exception from a handler's failure
    with pytest.raises(KeyboardInterrupt):
        app._caught(app.by_name["async_gate"], "PreToolUse", KeyboardInterrupt(), 0.0)
