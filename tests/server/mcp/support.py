"""What the MCP tests share: the token, both protocol eras, the refund gate's answers, a real
``mcp.Client`` over Streamable HTTP, and an in-process client of one :class:`McpMount`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from handler_kit import Answer
from handler_kit.server.mcp import McpMount
from handler_kit.testing import RunningServer

TOKEN = "mcp-test-token-0123456789abcdef"
# The client's ``auto`` mode speaks 2026-07-28 (no handshake), ``legacy`` 2025-11-25.
MODES = ("auto", "legacy")
DENY_640 = (
    '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
    '"permissionDecisionReason":"Refunds over $500 need a human approver."}}'
)
BLOCK_TICKET = '{"decision":"block","reason":"The reply does not cite the ticket number."}'
DENY_ARGS = {"tool_name": "issue_refund", "tool_input": {"amount": 640}}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


async def with_client(
    server: RunningServer,
    mode: str,
    body: Callable[[Client], Awaitable[Any]],
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """Run ``body`` with an ``mcp.Client`` connected to the server's ``/mcp``."""
    all_headers = {"Authorization": f"Bearer {token or server.token}", **(headers or {})}
    async with httpx2.AsyncClient(headers=all_headers, timeout=httpx2.Timeout(30)) as http:
        transport = streamable_http_client(server.mcp_url, http_client=http)
        async with Client(transport, mode=mode) as client:
            return await body(client)


async def call(server: RunningServer, mode: str, tool: str, arguments: dict[str, Any]) -> Any:
    async def body(client: Client) -> Any:
        return await client.call_tool(tool, arguments)

    return await with_client(server, mode, body)


def mcp_error(coro: Awaitable[Any]) -> MCPError:
    """The MCPError a client call fails with (the transport wraps it in exception groups)."""
    errors: list[MCPError] = []
    try:
        run(coro)
    except* MCPError as group:
        errors.extend(e for e in _leaves(group) if isinstance(e, MCPError))
    assert errors, "the call did not fail"
    return errors[0]


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for sub in error.exceptions for leaf in _leaves(sub)]
    return [error]


def only_text(result: Any) -> str:
    """The one text content of a tool result (never a second item, no structuredContent)."""
    assert len(result.content) == 1
    assert result.content[0].type == "text"
    assert result.structured_content is None
    text: str = result.content[0].text
    return text


class PathCounter:
    """Observer recording which MCP code path answered: ``"fast"`` or ``"sdk"``."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, answer: Answer, transport: str, context: dict[str, Any]) -> None:
        if transport == "mcp":
            self.paths.append(context["mcp_path"])


@contextlib.asynccontextmanager
async def in_process(mount: McpMount) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client calling ``mount.asgi`` in this process, inside the mount's lifespan (no
    server, no auth: what the mount itself does)."""
    async with mount.lifespan():
        transport = httpx.ASGITransport(app=mount.asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            yield http
