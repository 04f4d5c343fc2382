"""A real MCP server (stdio, JSON-RPC by hand) with an order system's ``refund`` tool, which
records each refund it makes in ``refunds.log`` in the working folder: what the refund gate's
``tool_matcher`` must catch under Claude Code's name for it (``mcp__orders__refund``).

The standard library alone: it must be connected before the model's first turn, and the ``mcp``
package takes seconds to import on a busy machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REFUND = {
    "name": "refund",
    "description": "Refund an order.",
    "inputSchema": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["order_id", "amount"],
    },
}


def answer(request: dict) -> dict | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification
    if method == "initialize":
        result: dict = {
            "protocolVersion": request["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "orders", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [REFUND]}
    elif method == "tools/call":
        arguments = request["params"].get("arguments") or {}
        with Path("refunds.log").open("a", encoding="utf-8") as log:
            log.write(f"{arguments.get('order_id')} {arguments.get('amount')}\n")
        text = f"Refunded {arguments.get('amount')} on order {arguments.get('order_id')}."
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
