"""Claude Code renders an ``mcp_tool`` hook's whole-value placeholder (``"${tool_input}"``) as
JSON *text*, where Runbear keeps the JSON type: a field the event model wants as an object or
an array is taken as JSON text too, parsed, then validated as usual, on the fast path and
through the SDK. Refusing the text made a fail-closed gate deny every call and a fail-open one
answer an error, which Claude Code reads as "proceed": the call ran unchecked.

Through real uvicorn, with raw posts and the real ``mcp`` client; the tools' listed schemas
admit the text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client

from handler_kit import HookApp, PostToolUse, PreToolUse, Stop, block, deny
from handler_kit.config import ServerConfig
from handler_kit.testing import RunningServer, running_server
from tests.server.mcp.support import MODES, TOKEN, only_text, run, with_client

hooks = HookApp("json-text")


@hooks.pre_tool_use(matcher="Bash", fail_closed=True)
async def bash_gate(event: PreToolUse) -> Any:
    """Denies rm -rf."""
    if "rm -rf" in str((event.tool_input or {}).get("command", "")):
        return deny("rm -rf is not allowed here.")
    return None


@hooks.pre_tool_use(matcher="Bash", name="bash_note")
async def bash_note(event: PreToolUse) -> Any:
    """Fails open: says which command it saw."""
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "seen"}}


@hooks.stop()
async def tasks_check(event: Stop) -> Any:
    """Blocks while background tasks run."""
    if event.background_tasks:
        return block(f"{len(event.background_tasks)} background task(s) still running.")
    return None


@hooks.post_tool_use()
async def response_kind(event: PostToolUse) -> Any:
    """Says what type tool_response arrived as (it takes any value: text stays text)."""
    return type(event.tool_response).__name__


RM_RF = json.dumps({"command": "rm -rf /"})
DENY_RM = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "rm -rf is not allowed here.",
    }
}
SAFE_DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Blocked by policy: the check 'bash_gate' could not read "
        "the hook input, and it is configured to fail closed.",
    }
}


@pytest.fixture(scope="module", params=[True, False], ids=["fast-path", "sdk"])
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    config = ServerConfig(tokens=[TOKEN], mcp_fast_path=request.param)
    with running_server(hooks, config=config) as running:
        assert running.asgi is not None and running.asgi.mcp_mount is not None
        assert running.asgi.mcp_mount.fast_path is request.param
        yield running


def call(server: RunningServer, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    with httpx.Client(base_url=server.url, timeout=30) as http:
        response = http.post("/mcp", json=body, headers=headers)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def decision(result: dict[str, Any]) -> Any:
    assert result["isError"] is False, result
    return json.loads(result["content"][0]["text"])


@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [(RM_RF, DENY_RM), (json.dumps({"command": "ls"}), {}), ({"command": "rm -rf /"}, DENY_RM)],
    ids=["text-rm", "text-ls", "object-rm"],
)
def test_tool_input_as_json_text_gets_the_gates_real_decision(
    server: RunningServer, tool_input: Any, expected: Any
) -> None:
    result = call(server, "bash_gate", {"tool_name": "Bash", "tool_input": tool_input})
    assert decision(result) == expected


@pytest.mark.parametrize(
    "text", ['{"command": ', "rm -rf /", '["not", "an object"]', "[" * 300 + "]" * 300]
)
def test_tool_input_as_text_that_is_no_object_gets_the_gates_safe_decision(
    server: RunningServer, text: str
) -> None:
    result = call(server, "bash_gate", {"tool_name": "Bash", "tool_input": text})
    assert decision(result) == SAFE_DENY


def test_a_fail_open_tool_answers_json_text_and_refuses_text_that_is_no_object(
    server: RunningServer,
) -> None:
    seen = call(server, "bash_note", {"tool_name": "Bash", "tool_input": RM_RF})
    assert decision(seen)["hookSpecificOutput"]["additionalContext"] == "seen"
    refused = call(server, "bash_note", {"tool_name": "Bash", "tool_input": '{"command": '})
    assert refused["isError"] is True
    assert "tool_input" in refused["content"][0]["text"]


def test_an_array_field_as_json_text(server: RunningServer) -> None:
    tasks = json.dumps([{"id": "t1", "status": "running"}])
    result = call(server, "tasks_check", {"background_tasks": tasks})
    assert decision(result) == {
        "decision": "block",
        "reason": "1 background task(s) still running.",
    }
    # a field that takes any value keeps text as text
    kind = call(server, "response_kind", {"tool_name": "Bash", "tool_response": '{"ok": 1}'})
    assert decision(kind) == {
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "str"}
    }


@pytest.mark.parametrize("mode", MODES)
def test_the_mcp_client_sends_tool_input_as_text_as_claude_code_does(
    server: RunningServer, mode: str
) -> None:
    async def body(client: Client) -> Any:
        listed = await client.list_tools()
        schema = next(t.input_schema for t in listed.tools if t.name == "bash_gate")
        assert schema["properties"]["tool_input"]["type"] == ["object", "string", "null"]
        return await client.call_tool("bash_gate", {"tool_name": "Bash", "tool_input": RM_RF})

    result = run(with_client(server, mode, body))
    assert result.is_error is False
    assert json.loads(only_text(result)) == DENY_RM
