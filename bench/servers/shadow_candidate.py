"""The shadow bench's candidate: the refund gate's own handler in an app of its own (a
second module, as a real candidate is: the gate reads its limit at import), so the candidate
costs what the enforced gate costs and agrees with it."""

from __future__ import annotations

from example_servers import refund_gate as enforced
from handler_kit import HookApp

app = HookApp("refund-gate-candidate")
app.pre_tool_use(matcher=enforced.REFUND_TOOLS, fail_closed=True, name="refund_gate")(
    enforced.refund_gate
)
