"""A candidate with a side effect, for the replay tests: ``file_ticket`` (idempotent: it files
a ticket) denies refunds over $100 and counts its runs."""

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
