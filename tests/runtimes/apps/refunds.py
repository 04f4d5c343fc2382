"""The refund gate, matched by ``tool_matcher``: denies refunds over 500 through the order
system's MCP tool, whatever the runtime calls it."""

from __future__ import annotations

from handler_kit import HookApp, PreToolUse, deny, tool_matcher

app = HookApp("refunds")


@app.pre_tool_use(matcher=tool_matcher("orders", "refund"), fail_closed=True)
def refund_gate(event: PreToolUse):
    if float((event.tool_input or {}).get("amount", 0)) > 500:
        return deny("REFUND-DENIED: refunds over $500 need a human approver.")
    return None
