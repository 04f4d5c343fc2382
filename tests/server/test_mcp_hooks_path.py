"""``HANDLER_KIT_MCP_PATH``: the hook tools served on a path of their own, so an MCP
integration that uses ``/mcp`` does not list them to the model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from example_servers import refund_gate
from handler_kit import HookApp
from handler_kit.config import ConfigError, ServerConfig
from handler_kit.server import describe_routes
from handler_kit.testing import RunningServer, running_server
from tests.docs.pages import blocks, section
from tests.server.support import TOKEN
from tests.support.payloads import REFUND_DENY, REFUND_EVENT

HOOK_TOOLS = "/internal/hook-tools"


@pytest.fixture(scope="module")
def moved() -> Iterator[RunningServer]:
    config = ServerConfig.from_env({"HANDLER_KIT_MCP_PATH": HOOK_TOOLS}, tokens=[TOKEN])
    with running_server(refund_gate.app, config=config) as server:
        yield server


async def _tool_names(url: str) -> list[str]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = await client.list_tools()
        result = await client.call_tool("refund_gate", dict(REFUND_EVENT))
    assert result.content[0].text == (  # type: ignore[union-attr]
        '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
        '"permissionDecisionReason":"Refunds over $500 need a human approver."}}'
    )
    return [tool.name for tool in tools.tools]


def test_hook_tools_answer_on_their_own_path_only(moved: RunningServer) -> None:
    assert moved.mcp_url == f"{moved.url}{HOOK_TOOLS}"
    names = asyncio.run(_tool_names(moved.mcp_url))
    assert names == [h.name for h in refund_gate.app.handlers]
    with moved.http(timeout=10) as http:
        # an integration pointed at /mcp finds no tools there
        gone = http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert gone.status_code == 404
        assert gone.json()["error"] == "not_found"
        # the webhook and health are where they were
        assert http.post("/hooks/refund_gate", json=REFUND_EVENT).json() == REFUND_DENY
        assert http.get("/healthz").status_code == 200
    # the new path is behind the same auth
    anonymous = httpx2.post(moved.mcp_url, json={}, timeout=10)
    assert anonymous.status_code == 401


def test_start_up_lists_the_path() -> None:
    config = ServerConfig(tokens=[TOKEN], mcp_path=HOOK_TOOLS)
    routes = describe_routes(refund_gate.app, config)
    assert f"POST {HOOK_TOOLS} ({len(refund_gate.app.handlers)} tools)" in routes
    assert not any(route.startswith("POST /mcp") for route in routes)


@pytest.mark.parametrize(
    "path",
    ["mcp", "/mcp/", "/hooks", "/hooks/tools", "/healthz", "/openapi.json", "/a b", "/a//b", ""],
)
def test_a_path_another_route_owns_or_not_a_path_is_refused(path: str) -> None:
    with pytest.raises(ConfigError, match="HANDLER_KIT_MCP_PATH"):
        ServerConfig.from_env({"HANDLER_KIT_MCP_PATH": path} if path else {}, mcp_path=path)


def test_docs_guard_denies_the_models_calls_to_hook_tools_only() -> None:
    """The MCP page's guard, registered after a gate and served over the webhook: a model's
    call to a hook tool under any runtime's name is denied, the agent's own tools are not."""
    (guard,) = [code for code in blocks(section("mcp", "mcp.md"), "python") if "HOOK_TOOLS" in code]
    hooks = HookApp("guarded")

    @hooks.pre_tool_use(matcher="issue_refund", fail_closed=True)
    def refund_gate(event: Any) -> None:
        return None

    exec(compile(guard, "docs/mcp.md", "exec"), {"hooks": hooks})
    assert [h.name for h in hooks.handlers] == ["refund_gate", "no_direct_hook_calls"]
    with running_server(hooks, tokens=[TOKEN]) as server, server.http(timeout=10) as http:
        for name in ("hook_tools_refund_gate", "mcp__hook-tools__refund_gate"):
            event = {**REFUND_EVENT, "tool_name": name}
            answer = http.post("/hooks/no_direct_hook_calls", json=event).json()
            assert answer["hookSpecificOutput"]["permissionDecision"] == "deny", name
        for name in ("issue_refund", "orders_refund", "hook_tools_refund_gate_status"):
            event = {**REFUND_EVENT, "tool_name": name}
            assert http.post("/hooks/no_direct_hook_calls", json=event).json() == {}, name
