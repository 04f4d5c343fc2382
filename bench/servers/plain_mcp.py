"""The stock ``mcp`` 2.3 SDK path: ``MCPServer`` + one tool doing the refund gate's $500 check.

Stateless JSON mode (``stateless_http=True, json_response=True``), mounted as the notes
recommend (``Mount("/")`` with ``session_manager.run()`` in the parent lifespan), served by
uvicorn with one worker. The tool takes the event's fields flat and all optional, like
handler-kit's MCP tools, and returns the Claude Code JSON as one text content. No auth
middleware: this is the SDK as shipped, so the comparison is conservative for handler-kit.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

_DENY = json.dumps(
    {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Refunds over $500 need a human approver.",
        }
    }
)

mcp = MCPServer("plain-sdk", log_level="WARNING")


async def refund_gate(
    session_id: str | None = None,
    hook_event_name: str | None = None,
    tool_name: str | None = None,
    tool_input: dict[str, Any] | None = None,
    tool_use_id: str | None = None,
    agent_id: str | None = None,
    agent_name: str | None = None,
    org_id: str | None = None,
    thread_id: str | None = None,
    turn_id: str | None = None,
    channel: str | None = None,
    channel_id: str | None = None,
    channel_user_id: str | None = None,
    user_name: str | None = None,
    user_email: str | None = None,
) -> str:
    """Deny issue_refund over $500."""
    if tool_name == "issue_refund" and (tool_input or {}).get("amount", 0) > 500:
        return _DENY
    return "{}"


mcp.add_tool(refund_gate, name="refund_gate", structured_output=False)

_mcp_app = mcp.streamable_http_app(stateless_http=True, json_response=True)


@contextlib.asynccontextmanager
async def _lifespan(_app):
    async with mcp.session_manager.run():
        yield


async def _healthz(_request):
    return JSONResponse({"ok": True})


app = Starlette(routes=[Route("/healthz", _healthz), Mount("/", app=_mcp_app)], lifespan=_lifespan)
