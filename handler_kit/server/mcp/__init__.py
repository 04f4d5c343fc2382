"""MCP tools on the server's own port: every handler of a HookApp is a tool at ``/mcp``.

:mod:`~handler_kit.server.mcp.tools` makes the tools (schemas, descriptions, one call through
:meth:`HookApp.answer`), :mod:`~handler_kit.server.mcp.hosts` the Host/Origin checks,
:mod:`~handler_kit.server.mcp.mount` the endpoint (:class:`McpMount`) the server routes
``/mcp`` to. The private ``_fast_path`` module answers plain tool calls without the SDK's
per-request machinery; it is the only code here that relies on the SDK's internals.
"""

from handler_kit.server.mcp.hosts import ALL_HOSTS, LOOPBACK_HOSTS, transport_security
from handler_kit.server.mcp.mount import McpMount, create_mcp_mount
from handler_kit.server.mcp.tools import (
    ToolOutcome,
    ToolSpec,
    build_tools,
    call_context,
    outcome_of,
    run_tool,
    tool_description,
    tool_input_schema,
)

__all__ = [
    "ALL_HOSTS",
    "LOOPBACK_HOSTS",
    "McpMount",
    "ToolOutcome",
    "ToolSpec",
    "build_tools",
    "call_context",
    "create_mcp_mount",
    "outcome_of",
    "run_tool",
    "tool_description",
    "tool_input_schema",
    "transport_security",
]
