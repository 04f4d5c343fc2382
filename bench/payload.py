"""The one PreToolUse event every benchmark sends, and the headers each path uses.

The event is the issue's body plus the Runbear shared fields (``000_*`` "What your handler
receives"), so parsing and validation see a realistically sized input.
"""

from __future__ import annotations

import json

# handler-kit refuses bearer tokens shorter than 16 characters, so the literal "token"
# cannot be used; every side gets this one.
TOKEN = "bench-token-0123456789abcdef"
EVENT_NAME = "PreToolUse"
TOOL = "refund_gate"

EVENT: dict = {
    "session_id": "s",
    "hook_event_name": EVENT_NAME,
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "4821", "amount": 640},
    "tool_use_id": "toolu_1",
    # Runbear shared fields
    "agent_id": "f47ac10b-58cc-4372-a567-0e02b2c3d479",
    "agent_name": "Support",
    "org_id": "0c9e6f1a-2b7d-4e0a-9d7c-1f2e3a4b5c6d",
    "thread_id": "6b3d9a2e-1c4f-4b8e-9a7d-2e1f0c3b4a5d",
    "turn_id": "1720000000.000100",
    "channel": "slack",
    "channel_id": "C0123456789",
    "channel_user_id": "U0123456789",
    "user_name": "Dana",
    "user_email": "dana@example.com",
}

EVENT_BODY: bytes = json.dumps(EVENT, separators=(",", ":")).encode()

DENY_REASON = "Refunds over $500 need a human approver."
DENY: dict = {
    "hookSpecificOutput": {
        "hookEventName": EVENT_NAME,
        "permissionDecision": "deny",
        "permissionDecisionReason": DENY_REASON,
    }
}

WEBHOOK_HEADERS: dict[str, str] = {
    "Authorization": f"Bearer {TOKEN}",
    "Content-Type": "application/json",
    "X-Runbear-Hook-Event": EVENT_NAME,
}

# What the mcp 2.3.0 ``Client`` (mode="auto", which lands on 2026-07-28 against a 2.3 server)
# sends for ``call_tool``: captured on the wire from a real client, see bench/README.md.
MCP_PROTOCOL_VERSION = "2026-07-28"
MCP_HEADERS: dict[str, str] = {
    "Authorization": f"Bearer {TOKEN}",
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": MCP_PROTOCOL_VERSION,
    "Mcp-Method": "tools/call",
    "Mcp-Name": TOOL,
    "User-Agent": "python-httpx2/2.16.2",
    "Accept-Encoding": "gzip, deflate",
}
MCP_REQUEST: dict = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {
        "name": TOOL,
        "arguments": EVENT,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MCP_PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0.1.0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    },
}
MCP_BODY: bytes = json.dumps(MCP_REQUEST, separators=(",", ":")).encode()
