"""Handlers as MCP tools over real HTTP on 127.0.0.1, with the official ``mcp`` client.

Both protocol eras are exercised: the client's ``auto`` mode (2026-07-28, no handshake) and
``legacy`` mode (2025-11-25, ``initialize`` first). The server is the real one
(``handler_kit.testing.running_server`` -> ``create_asgi_app``: auth, webhook, ``/mcp``).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import time
from typing import Any

import httpx
import pytest
from mcp import Client

import example_servers
from example_servers import context_loader, refund_gate
from handler_kit import HookApp
from handler_kit.config import ServerConfig
from handler_kit.testing import RunningServer, running_server
from tests.docs.pages import blocks, section
from tests.server.mcp.support import (
    BLOCK_TICKET,
    DENY_640,
    MODES,
    TOKEN,
    call,
    mcp_error,
    only_text,
    run,
    with_client,
)

# -- tools/call: the refund gate ----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_refund_over_limit_is_denied(gate: RunningServer, mode: str) -> None:
    args = {"tool_name": "issue_refund", "tool_input": {"order_id": "4821", "amount": 640}}
    result = run(call(gate, mode, "refund_gate", args))
    assert result.is_error is False
    assert only_text(result) == DENY_640


@pytest.mark.parametrize("mode", MODES)
def test_small_refund_has_no_opinion(gate: RunningServer, mode: str) -> None:
    args = {"tool_name": "issue_refund", "tool_input": {"order_id": "4821", "amount": 40}}
    result = run(call(gate, mode, "refund_gate", args))
    assert result.is_error is False
    assert only_text(result) == "{}"


def test_hook_event_name_is_optional_and_checked(gate: RunningServer) -> None:
    args = {"tool_name": "issue_refund", "tool_input": {"amount": 640}}
    explicit = run(call(gate, "auto", "refund_gate", {**args, "hook_event_name": "PreToolUse"}))
    assert only_text(explicit) == DENY_640
    wrong = run(call(gate, "auto", "refund_gate", {**args, "hook_event_name": "Stop"}))
    assert wrong.is_error is True
    assert "PreToolUse" in only_text(wrong) and "'Stop'" in only_text(wrong)


@pytest.mark.parametrize("mode", MODES)
def test_wrong_argument_types_are_an_error_result(gate: RunningServer, mode: str) -> None:
    args = {"tool_name": 42, "tool_input": "x"}
    result = run(call(gate, mode, "refund_audit_note", args))
    assert result.is_error is True
    # field paths and pydantic's messages, never the values
    assert only_text(result) == (
        "Invalid hook input for tool 'refund_audit_note' (PostToolUse): "
        "tool_name: Input should be a valid string; "
        "tool_input: Input should be a valid dictionary"
    )


@pytest.mark.parametrize("mode", MODES)
def test_arguments_a_fail_closed_gate_cannot_read_are_its_safe_decision(
    gate: RunningServer, mode: str
) -> None:
    """An error result lets the call through: the gate denies what it cannot read."""
    result = run(call(gate, mode, "refund_gate", {"tool_name": 42, "tool_input": "x"}))
    assert result.is_error is False
    out = json.loads(only_text(result))["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert out["permissionDecisionReason"] == (
        "Blocked by policy: the check 'refund_gate' could not read the hook input, "
        "and it is configured to fail closed."
    )


def test_matcher_that_does_not_match_is_no_opinion(gate: RunningServer) -> None:
    args = {"tool_name": "search_orders", "tool_input": {"amount": 100000}}
    assert only_text(run(call(gate, "auto", "refund_gate", args))) == "{}"


@pytest.mark.parametrize("mode", MODES)
def test_unknown_tool_is_a_protocol_error(gate: RunningServer, mode: str) -> None:
    error = mcp_error(call(gate, mode, "nope", {}))
    assert str(error) == "Unknown tool: nope"


# -- auth ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_wrong_token_fails(gate: RunningServer, mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("refund_gate", {"tool_name": "issue_refund"})

    # the client reports a 401 as a generic -32603, as it would a 500: the same call with the
    # right token must succeed, so the failure is the token's alone
    assert run(with_client(gate, mode, body)).is_error is False
    error = mcp_error(with_client(gate, mode, body, token="wrong-token-0123456789abcdef"))
    assert error.error.code == -32603


def test_mcp_answers_401_with_www_authenticate(gate: RunningServer) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789abcdef"}):
        response = httpx.post(gate.mcp_url, json=request, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")


# -- stop-loop guard, failures, deadlines ------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_stop_guard_holds(gate: RunningServer, mode: str) -> None:
    reply = {"last_assistant_message": "Your refund is on its way."}
    first = run(call(gate, mode, "cite_ticket", {**reply, "stop_hook_active": False}))
    assert only_text(first) == BLOCK_TICKET
    again = run(call(gate, mode, "cite_ticket", {**reply, "stop_hook_active": True}))
    assert again.is_error is False
    assert only_text(again) == "{}"


@pytest.mark.parametrize("mode", MODES)
def test_failing_handler_is_a_generic_error_result(failing: RunningServer, mode: str) -> None:
    result = run(call(failing, mode, "crashes", {"tool_name": "x"}))
    assert result.is_error is True
    text = only_text(result)
    assert text == "The handler 'crashes' failed; see the server log."
    assert "secret" not in text and "Traceback" not in text


@pytest.mark.parametrize("mode", MODES)
def test_failing_fail_closed_gate_denies(failing: RunningServer, mode: str) -> None:
    result = run(call(failing, mode, "crashing_gate", {"tool_name": "issue_refund"}))
    assert result.is_error is False
    output = json.loads(only_text(result))
    specific = output["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "crashing_gate" in specific["permissionDecisionReason"]
    assert "secret" not in only_text(result)


def test_deadline_fail_closed_denies_and_fail_open_errors(failing: RunningServer) -> None:
    started = time.perf_counter()
    gate_result = run(call(failing, "auto", "slow_gate", {"tool_name": "issue_refund"}))
    assert time.perf_counter() - started < 4  # the server's deadline, not the handler's 5 s
    decision = json.loads(only_text(gate_result))["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "did not answer in time" in decision["permissionDecisionReason"]
    stop_result = run(call(failing, "legacy", "slow_check", {"last_assistant_message": "x"}))
    assert stop_result.is_error is True
    assert only_text(stop_result) == "The handler 'slow_check' did not answer in time."


# -- byte-identical to the webhook ------------------------------------------------------------

RUNBEAR_COMMON = {
    "session_id": "6b3d0c1e",
    "agent_id": "f47ac10b-58cc-4372-a567-0e02b2c3d479",
    "agent_name": "Support",
    "org_id": "0c9e",
    "thread_id": "6b3d0c1e",
    "turn_id": "1720000000.000100",
    "channel": "slack",
    "channel_id": "C0123456789",
    "channel_user_id": "U0123456789",
    "user_name": "Dana",
    "user_email": "dana@example.com",
}


def sample_events(event: str) -> list[dict[str, Any]]:
    """Hook inputs for ``event`` that make the example handlers answer every way they can."""
    base = {"hook_event_name": event, **RUNBEAR_COMMON}
    if event == "PreToolUse":
        return [
            {**base, "tool_name": name, "tool_input": {"order_id": "4821", "amount": amount}}
            for name in ("issue_refund", "orders__refund", "lookup_order")
            for amount in (640, 40, "$1,200.50", None)
        ]
    if event == "PostToolUse":
        return [
            {
                **base,
                "tool_name": "issue_refund",
                "tool_input": {"order_id": 'Ærø-€😀 "quoted" \\ \u2028', "amount": 640},
                "tool_response": {"ok": True},
                "tool_use_id": "toolu_01",
            },
            {**base, "tool_name": "lookup_order", "tool_input": {}, "tool_response": "x"},
        ]
    if event == "Stop":
        return [
            {**base, "last_assistant_message": text, "stop_hook_active": active}
            for text in ("Refund issued for ticket #4821.", "Refund issued.")
            for active in (False, True)
        ]
    if event == "SessionStart":
        return [
            {**base, "source": "startup", "prompt": "Hi"},
            {**base, "source": "startup", "channel_user_id": "U_nobody", "user_email": None},
        ]
    if event == "UserPromptSubmit":
        return [
            {**base, "prompt": "Can I get a refund for order 4821 and #4907? Shipping?"},
            {**base, "prompt": "What is the warranty on 5102?", "channel_user_id": "U0222222222"},
            {**base, "prompt": "hello"},
        ]
    return [base]


def example_apps() -> list[HookApp]:
    """Every HookApp an example server module exposes as ``app`` (new examples join in)."""
    apps = []
    for info in pkgutil.iter_modules(example_servers.__path__):
        module = importlib.import_module(f"example_servers.{info.name}")
        app = getattr(module, "app", None)
        if isinstance(app, HookApp):
            apps.append(app)
    assert {refund_gate.app, context_loader.app} <= set(apps)
    return apps


@pytest.mark.parametrize("hook_app", example_apps(), ids=lambda app: app.name)
def test_webhook_and_mcp_answer_byte_identical(hook_app: HookApp) -> None:
    async def mcp_texts(server: RunningServer, mode: str, calls: list[Any]) -> list[str]:
        async def body(client: Client) -> list[str]:
            texts = []
            for name, event in calls:
                result = await client.call_tool(name, event)
                assert result.is_error is False, (name, result)
                texts.append(only_text(result))
            return texts

        texts: list[str] = await with_client(server, mode, body)
        return texts

    with running_server(hook_app, tokens=[TOKEN]) as server:
        calls = [(h.name, e) for h in hook_app.handlers for e in sample_events(h.event)]
        assert len(calls) >= len(hook_app.handlers)
        with server.http() as http:
            webhook = []
            for name, event in calls:
                response = http.post(f"/hooks/{name}", content=json.dumps(event))
                assert response.status_code == 200, response.text
                webhook.append(response.content)
        answered = {body for body in webhook}
        assert len(answered) > 1, "the samples should make the handlers answer differently"
        for mode in MODES:
            texts = run(mcp_texts(server, mode, calls))
            for (name, event), expected, text in zip(calls, webhook, texts, strict=True):
                assert text.encode() == expected, (mode, name, event)


# -- streaming and stateful modes ------------------------------------------------------------


@pytest.mark.parametrize(
    ("stateless", "json_response"), [(True, False), (False, True), (False, False)]
)
@pytest.mark.parametrize("mode", MODES)
def test_other_modes_work(mode: str, stateless: bool, json_response: bool) -> None:
    config = ServerConfig(tokens=[TOKEN], mcp_stateful=not stateless, mcp_sse=not json_response)
    args = {"tool_name": "issue_refund", "tool_input": {"amount": 640}}
    with running_server(refund_gate.app, config=config) as server:
        assert only_text(run(call(server, mode, "refund_gate", args))) == DENY_640


# -- the docs ----------------------------------------------------------------------------------


def test_docs_client_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The MCP page's client example, pointed at a real server, prints the deny."""
    code = blocks(section("mcp", "mcp.md"), "python")[0]
    with running_server(refund_gate.app, tokens=[TOKEN]) as server:
        code = code.replace("<token>", TOKEN).replace("http://127.0.0.1:8000", server.url)
        exec(compile(code, "docs/mcp.md", "exec"), {"__name__": "docs_mcp"})
    assert capsys.readouterr().out.strip() == DENY_640
