"""The app the reliability run serves: the refund gate, and an idempotent copy of it.

The idempotent gate keeps its keys in Redis, so a Redis outage is one of the faults injected;
it is fail-closed like the refund gate, so the outage must turn into denials, not allows.
"""

from __future__ import annotations

from example_servers.refund_gate import REFUND_TOOLS, refund_gate
from handler_kit import HookApp, PreToolUse

__all__ = ["app"]

app = HookApp("reliability", description="The refund gate, served for the reliability run.")
app.pre_tool_use(matcher=REFUND_TOOLS, fail_closed=True)(refund_gate)


@app.pre_tool_use(matcher=REFUND_TOOLS, fail_closed=True, idempotent=True)
async def refund_once(event: PreToolUse):
    """The refund gate's decision, once per tool call: a retried call is answered the same."""
    return await refund_gate(event)
