"""Idempotent answers belong to the caller that got them: through a real server with two
tokens, the same call sent with token #0 and then token #1 runs the handler for each, on the
webhook and on MCP (fast path and SDK path), while a repeat with the same token is replayed."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from handler_kit import HookApp, PreToolUse, deny
from handler_kit.config import ServerConfig
from handler_kit.ops.idempotency import caller_key
from handler_kit.testing import running_server

TOKENS = ["idem-principal-token-a-0123456789", "idem-principal-token-b-0123456789"]
EVENT = {
    "session_id": "s1",
    "hook_event_name": "PreToolUse",
    "tool_name": "open_approval",
    "tool_input": {"amount": 900},
    "tool_use_id": "toolu_same",
}
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}


def approval_app(runs: list[str]) -> HookApp:
    hooks = HookApp("idem-principal")

    @hooks.pre_tool_use(matcher="open_approval", idempotent=True, fail_closed=True, timeout=3)
    async def open_approval(event: PreToolUse) -> Any:
        runs.append(event.tool_use_id or "")
        return deny(f"Approval request #{len(runs)} opened.")

    return hooks


def reason_of(output: dict[str, Any]) -> str:
    return str(output["hookSpecificOutput"]["permissionDecisionReason"])


def via_webhook(http: httpx.Client, token: str) -> str:
    response = http.post(
        "/hooks", json=EVENT, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    return reason_of(response.json())


def via_mcp(http: httpx.Client, token: str) -> str:
    arguments = {k: v for k, v in EVENT.items() if k != "hook_event_name"}
    response = http.post(
        "/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "open_approval", "arguments": arguments},
        },
        headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result.get("isError") is not True, result
    return reason_of(json.loads(result["content"][0]["text"]))


@pytest.mark.parametrize(
    ("send", "fast_path"),
    [(via_webhook, True), (via_mcp, True), (via_mcp, False)],
    ids=["webhook", "mcp-fast-path", "mcp-sdk"],
)
def test_an_answer_recorded_for_one_token_is_not_replayed_to_another(
    send: Any, fast_path: bool
) -> None:
    runs: list[str] = []
    config = ServerConfig(tokens=TOKENS, mcp_fast_path=fast_path)
    with (
        running_server(approval_app(runs), config=config) as server,
        httpx.Client(base_url=server.url) as http,
    ):
        first = send(http, TOKENS[0])
        other = send(http, TOKENS[1])
        again = send(http, TOKENS[0])
        other_again = send(http, TOKENS[1])
    # token #1 got an answer of its own: the handler ran for it
    assert first == "Approval request #1 opened."
    assert other == "Approval request #2 opened."
    assert runs == ["toolu_same", "toolu_same"]
    # each caller's repeat is still replayed
    assert again == first and other_again == other


def test_the_caller_part_of_the_key_is_fixed_length_and_never_the_principal() -> None:
    keys = {caller_key(p) for p in ("token#0", "token#1", "jwt:a:b", "jwt:a")}
    assert len(keys) == 4
    assert all(len(key) == 32 and ":" not in key for key in keys)
    assert caller_key(None) == "-"
