"""The stub MCP server that offers a case's tool to the agent and records every call: the tool
"ran" when a call is recorded. It is written into the throwaway project and run by the agent
with the standard library alone, so that it is connected before the model's first turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STUB_FILE = "_handler_kit_stub_mcp.py"
RECORD_FILE = "_handler_kit_calls.jsonl"

STUB_SOURCE = '''\
"""handler-kit test --runtime: offers one tool (argv[1]) and records each call's arguments,
one JSON line each, in argv[2]."""
import json
import sys

TOOL, RECORD = sys.argv[1], sys.argv[2]


def answer(request):
    method = request.get("method")
    if "id" not in request:
        return None
    if method == "initialize":
        result = {
            "protocolVersion": request["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "handler-kit-stub", "version": "1"},
        }
    elif method == "tools/list":
        schema = {"type": "object", "additionalProperties": True}
        result = {"tools": [{"name": TOOL, "description": "A stub.", "inputSchema": schema}]}
    elif method == "tools/call":
        arguments = request["params"].get("arguments") or {}
        with open(RECORD, "a", encoding="utf-8") as record:
            record.write(json.dumps(arguments) + "\\n")
        text = "STUB-TOOL-RAN: " + TOOL
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": "no method " + str(method)}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


for line in sys.stdin:
    if line.strip():
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\\n")
            sys.stdout.flush()
'''


def mcp_servers(server: str, tool: str, project: Path, python: str) -> dict[str, Any]:
    """The ``mcpServers`` table that runs the stub as ``server``, offering ``tool``."""
    args = [str(project / STUB_FILE), tool, str(project / RECORD_FILE)]
    return {server: {"type": "stdio", "command": python, "args": args}}


def recorded_calls(project: Path) -> list[dict[str, Any]]:
    """The arguments of every call the stub received, in order."""
    path = project / RECORD_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
