"""Candidates for the replay tests: ``app``, whose ``file_ticket`` (idempotent: it files a
ticket) denies refunds over $100 and counts its runs; ``crashing``, whose refund gate raises on
every refund, and ``crashing_two_ways``, whose refund gate raises one way over $100 and another
under it (async, so it runs inline: no deadline's timer can turn a crash into a timeout on a
loaded machine)."""

from __future__ import annotations

from handler_kit import HookApp, PreToolUse, deny

RUNS: list[str] = []
app = HookApp("refund-gate")


@app.pre_tool_use(matcher="issue_refund", idempotent=True)
def file_ticket(event: PreToolUse):
    RUNS.append(event.tool_use_id or "")
    amount = (event.tool_input or {}).get("amount")
    if isinstance(amount, int) and amount > 100:
        return deny("A ticket was filed for this refund.")
    return None


crashing = HookApp("refund-gate")


@crashing.pre_tool_use(matcher="issue_refund", fail_closed=True)
def refund_gate(event: PreToolUse):
    raise RuntimeError("the limit service is down")


crashing_two_ways = HookApp("refund-gate")


@crashing_two_ways.pre_tool_use(name="refund_gate", matcher="issue_refund", fail_closed=True)
async def refund_gate_two_ways(event: PreToolUse):
    amount = (event.tool_input or {}).get("amount")
    if isinstance(amount, int) and amount > 100:
        raise RuntimeError(f"the limit service is down (refund of {amount})")
    return {"approved": True}["limit"]
