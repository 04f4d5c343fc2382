"""Calling one ``mcp_tool`` handler the way Runbear does, with the official ``mcp`` client.

- the handler's ``input`` template is rendered against the hook input (``templates.py``), then
  keys the tool's input schema does not declare are dropped with a warning. The schema comes from
  one ``tools/list`` per server, cached for the dispatcher's life;
- the tool's text content is read the way Claude Code reads a command hook's stdout: text whose
  first non-blank character is ``{`` and that parses as a JSON object is a Claude Code output,
  read as Runbear reads one (``answers.py``; a field it reads that it cannot read is a
  failure, a field it ignores is ignored); any other text is the context itself on SessionStart,
  UserPromptSubmit and PostToolUse, and carries nothing on PreToolUse and Stop;
- a result flagged ``isError``, a transport or protocol error, or an unknown tool is a failure.

The client stack of ``mcp`` 2.x is ``httpx2`` (not ``httpx``): one ``httpx2.AsyncClient`` per
server holds its headers, TLS trust and connection pool; each call opens its own ``mcp.Client``
session over it (Streamable HTTP, protocol negotiated automatically), because an MCP client
session belongs to the task that opened it and handlers run in concurrent tasks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from dataclasses import dataclass, field
from typing import Any

from handler_kit.core.outputs import Output, OutputError
from handler_kit.dispatcher.answers import read_answer
from handler_kit.dispatcher.templates import keep_declared, render_input

logger = logging.getLogger("handler_kit.dispatcher")

PLAIN_TEXT_CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PostToolUse"})


@dataclass(slots=True)
class McpResult:
    """What one mcp_tool handler answered and how the runtime reads it."""

    ok: bool
    output: Output | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    arguments: dict[str, Any] | None = None
    text: str | None = None


class McpServer:
    """How to reach one Custom MCP server, plus what the runtime caches about it."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.name = name
        self.url = url
        self.headers = dict(headers or {})
        self.verify = verify
        # tool name -> input schema; listed once per server.
        self.schemas: dict[str, dict[str, Any]] | None = None
        self.listings = 0  # how many times tools/list was walked (once, unless it failed)
        self._http: Any = None  # httpx2.AsyncClient, built on first use in the running loop
        self._lock: asyncio.Lock | None = None

    def http_client(self) -> Any:
        if self._http is None:
            import httpx2

            self._http = httpx2.AsyncClient(
                headers=self.headers,
                verify=self.verify,
                timeout=httpx2.Timeout(30.0),
                follow_redirects=False,
            )
        return self._http

    async def aclose(self) -> None:
        client, self._http, self._lock = self._http, None, None
        if client is not None:
            await client.aclose()

    def forget_loop(self) -> None:
        """Drop what is bound to an event loop that is gone (the schema cache survives)."""
        self._http = None
        self._lock = None

    async def tool_schemas(self, client: Any) -> dict[str, dict[str, Any]]:
        """Every tool's input schema, listed on first use and cached."""
        if self.schemas is not None:
            return self.schemas
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.schemas is None:
                self.listings += 1
                schemas: dict[str, dict[str, Any]] = {}
                cursor: str | None = None
                for _ in range(100):
                    page = await client.list_tools(cursor=cursor)
                    for tool in page.tools:
                        schemas[tool.name] = dict(tool.input_schema or {})
                    cursor = page.next_cursor
                    if not cursor:
                        break
                self.schemas = schemas
        return self.schemas


def load_client() -> None:
    """Import the MCP client stack (``mcp``, ``httpx2``).

    The import is synchronous and slow, and holds the event loop while it runs: done inside
    a handler's call, it would spend that handler's timeout, and every sibling's running at
    the same time. The dispatcher calls this before any handler's clock starts.
    """
    import httpx2  # noqa: F401
    from mcp import Client  # noqa: F401
    from mcp.client.streamable_http import streamable_http_client  # noqa: F401
    from mcp.types import TextContent  # noqa: F401


def read_tool_text(event_name: str, text: str) -> Output | None:
    """Read a tool's text as Claude Code reads command stdout (see the module docstring).

    Raises :class:`OutputError` for a JSON object that is not a valid output for the event.
    """
    if not text.strip():
        return None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's limit
            data = None
        if isinstance(data, dict):
            return read_answer(event_name, data)
    if event_name in PLAIN_TEXT_CONTEXT_EVENTS:
        return Output(context=text)
    return None


async def call_mcp_tool(
    server: McpServer,
    tool: str,
    template: dict[str, Any],
    event_name: str,
    payload: dict[str, Any],
) -> McpResult:
    """Render the template, call ``tool`` on ``server`` and read the result. Never raises for
    the server's behaviour (that is a failed :class:`McpResult`); cancellation propagates."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import TextContent

    arguments, empty = render_input(template, payload)
    warnings: list[str] = []
    if empty:
        logger.debug("mcp_tool %s: keys resolving to nothing dropped: %s", tool, empty)
    result = McpResult(False, warnings=warnings)
    try:
        async with Client(
            streamable_http_client(server.url, http_client=server.http_client()), mode="auto"
        ) as client:
            schemas = await server.tool_schemas(client)
            if tool not in schemas:
                result.error = f"tool {tool!r} not found on MCP server {server.name!r}"
                return result
            arguments, undeclared = keep_declared(arguments, schemas[tool])
            if undeclared:
                message = (
                    f"keys not declared by {server.name}/{tool}'s input schema dropped: "
                    f"{', '.join(undeclared)}"
                )
                warnings.append(message)
                logger.warning("mcp_tool handler: %s", message)
            result.arguments = arguments
            answer = await client.call_tool(tool, arguments)
    except Exception as exc:
        result.error = _describe_error(exc)
        return result
    text = "\n".join(block.text for block in answer.content if isinstance(block, TextContent))
    result.text = text
    if answer.is_error:
        result.error = f"tool returned isError: {text[:500]}" if text else "tool returned isError"
        return result
    try:
        result.output = read_tool_text(event_name, text)
    except OutputError as exc:
        result.error = f"unreadable output: {exc}"
        return result
    result.ok = True
    return result


def _describe_error(exc: BaseException) -> str:
    """The innermost error of the nested exception groups the mcp client raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
