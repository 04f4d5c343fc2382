"""The refund gate's next version, as a candidate to replay and shadow before it is enforced
(docs/rollout.md): the limit raised from $500 to $1,000, and the agent's own refund tool
gated under every spelling of its name (``issue-refund``, ``issueRefund``, ``IssueRefund``...),
which the current gate lets through ungated.

A second module rather than a setting: the refund gate reads its limit once, at import, so
one process cannot hold both. The handlers keep their names, which is how replay and shadow
pair each with the one it replaces; the reading of amounts and currencies is the current
gate's own.

Serve or replay it as ``example_servers.refund_gate_candidate:app``; ``REFUND_LIMIT`` still
overrides the limit, ``RETURNS_POLICY`` and ``TICKET_PATTERN`` work as in the current gate.
"""

from __future__ import annotations

import os

from example_servers.refund_gate import (
    DEFAULT_POLICY,
    configured,
    money,
    other_currency,
    read_limit,
    read_ticket_pattern,
    refund_problem,
)
from handler_kit import (
    HookApp,
    PostToolUse,
    PreToolUse,
    SessionStart,
    Stop,
    block,
    deny,
    tool_matcher,
)

# Every spelling of the agent's own refund tool a model has been seen to call, and the orders
# server's refund tool as each runtime names it.
REFUND_TOOLS = "^[Ii]ssue[-_]?[Rr]efund$|" + tool_matcher("orders", "refund")

REFUND_LIMIT, LIMIT_ERROR = configured("REFUND_LIMIT", "1000", read_limit)
TICKET_PATTERN, PATTERN_ERROR = configured("TICKET_PATTERN", r"#\d+", read_ticket_pattern)
RETURNS_POLICY = os.environ.get("RETURNS_POLICY") or (
    DEFAULT_POLICY.format(limit=money(REFUND_LIMIT)) if REFUND_LIMIT is not None else None
)
CONFIG_ERRORS = tuple(error for error in (LIMIT_ERROR, PATTERN_ERROR) if error)
DENY_REASON = (
    f"Refunds over ${money(REFUND_LIMIT)} need a human approver."
    if REFUND_LIMIT is not None
    else f"The refund gate is misconfigured ({LIMIT_ERROR}); a human approver must check "
    "every refund."
)

app = HookApp(
    "refund-gate",
    description="Refund policy gate for a support agent (candidate: $1,000 limit).",
    config_errors=CONFIG_ERRORS,
)


@app.pre_tool_use(matcher=REFUND_TOOLS, fail_closed=True)
async def refund_gate(event: PreToolUse):
    """Deny refunds over the limit, and every refund that cannot be compared with it."""
    if REFUND_LIMIT is None:
        return deny(DENY_REASON)
    amount, problem = refund_problem(event.tool_input)
    if problem is not None:
        return deny(problem)
    if amount is not None and amount > REFUND_LIMIT:
        return deny(DENY_REASON)
    return None


@app.session_start()
def returns_policy(event: SessionStart) -> str:
    """The current returns policy, as context for the whole thread."""
    if RETURNS_POLICY is None:
        raise ValueError(LIMIT_ERROR)
    return RETURNS_POLICY


@app.stop()
def cite_ticket(event: Stop):
    """Send a reply back once if it does not cite the ticket number."""
    if TICKET_PATTERN is None:
        raise ValueError(PATTERN_ERROR)
    if not TICKET_PATTERN.search(event.last_assistant_message or ""):
        return block("The reply does not cite the ticket number.")
    return None


@app.post_tool_use(matcher=REFUND_TOOLS)
def refund_audit_note(event: PostToolUse) -> str:
    """A note next to every refund result, for the agent and the audit trail."""
    amount, _ = refund_problem(event.tool_input)
    currency = other_currency(event.tool_input)
    order = (event.tool_input or {}).get("order_id", "unknown")
    if amount is not None:
        shown = f"${amount:,.2f}"
    elif currency is not None and currency.isupper():
        shown = f"an amount in {currency}"
    else:
        shown = "an unreadable amount"
    call = f" (tool call {event.tool_use_id})" if event.tool_use_id else ""
    return f"Refund of {shown} on order {order} recorded for audit{call}."
