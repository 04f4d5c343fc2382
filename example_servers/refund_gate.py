"""Refund gate: the support agent of Fjord Outfitters may not refund large orders on its own.

- PreToolUse on ``issue_refund`` and on the order system's ``refund`` tool under every
  runtime's name for it (``orders_refund``, ``orders__refund``, ``mcp__orders__refund``...):
  denies refunds over the limit, fail closed, so an outage never lets one through; an amount
  that is no refund (negative, NaN, infinite, absurdly large: ``-640``, ``1e999``) is denied
  too, as not a valid refund amount, since comparing it with the limit says nothing;
- SessionStart: puts the current returns policy in context, so a policy change needs no prompt
  edit;
- Stop: sends back a reply that does not cite the ticket number, once (never loops);
- PostToolUse: adds an audit note next to every refund result.

Configured by environment: ``REFUND_LIMIT`` (default 500), ``RETURNS_POLICY`` (the policy
text), ``TICKET_PATTERN`` (a regular expression, default ``#\\d+``).

Serve it with ``handler-kit serve example_servers.refund_gate:app`` (or ``make run``).
"""

from __future__ import annotations

import os
import re
from decimal import Decimal, InvalidOperation

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

# The agent's own issue_refund, and the refund tool of the "orders" MCP server as each runtime
# names it: a spelling the matcher missed would be a refund no gate sees.
REFUND_TOOLS = "^issue_refund$|" + tool_matcher("orders", "refund")
DEFAULT_POLICY = (
    "Fjord Outfitters returns policy: unworn items are accepted within 30 days of delivery "
    "with the receipt; refunds go to the original payment method within 5 business days; "
    "refunds over ${limit} need a human approver."
)


def money(amount: Decimal) -> str:
    """$500, $1,000, $499.99: cents only when there are some."""
    return f"{amount:,.0f}" if amount == amount.to_integral_value() else f"{amount:,.2f}"


REFUND_LIMIT = Decimal(os.environ.get("REFUND_LIMIT", "500"))
RETURNS_POLICY = os.environ.get("RETURNS_POLICY") or DEFAULT_POLICY.format(
    limit=money(REFUND_LIMIT)
)
DENY_REASON = f"Refunds over ${money(REFUND_LIMIT)} need a human approver."
TICKET_PATTERN = re.compile(os.environ.get("TICKET_PATTERN", r"#\d+"))
# No order comes near it: a larger figure (``"1e999"``) is a malformed amount, and writing one
# out in full, as the audit note does, takes memory in proportion to its exponent.
LARGEST_AMOUNT = Decimal("1e15")
UNREADABLE_REASON = "The refund amount could not be read; a human approver must check it."
INVALID_REASON = "The amount is not a valid refund amount; a human approver must check it."

app = HookApp("refund-gate", description="Refund policy gate for a support agent.")


def refund_amount(tool_input: dict[str, object] | None) -> Decimal | None:
    """The refund amount of a tool call (a number or a string like "$640.00"), or None.

    It may be one no refund can have (see :func:`is_refund`).
    """
    raw = (tool_input or {}).get("amount")
    if type(raw) is int:  # the common case, and the hot path of every refund call
        return Decimal(raw)
    if isinstance(raw, bool) or raw is None:
        return None
    try:
        return Decimal(str(raw).replace("$", "").replace(",", "").strip())
    except InvalidOperation:
        return None


def is_refund(amount: Decimal) -> bool:
    """Whether a refund can be of ``amount``: not negative, and under :data:`LARGEST_AMOUNT`.
    A negative refund is a charge, and NaN or an infinity is no sum of money (NaN is neither
    over nor under the limit, and -Infinity is under every limit)."""
    return amount.is_finite() and 0 <= amount < LARGEST_AMOUNT


@app.pre_tool_use(matcher=REFUND_TOOLS, fail_closed=True)
async def refund_gate(event: PreToolUse):
    """Deny refunds over the limit; a refund whose amount cannot be read, or is no refund's
    amount, is denied too."""
    amount = refund_amount(event.tool_input)
    if amount is None:
        return deny(UNREADABLE_REASON)
    if not is_refund(amount):
        return deny(INVALID_REASON)
    if amount > REFUND_LIMIT:
        return deny(DENY_REASON)
    return None  # no opinion: the call runs


@app.session_start()
def returns_policy(event: SessionStart) -> str:
    """The current returns policy, as context for the whole thread."""
    return RETURNS_POLICY


@app.stop()
def cite_ticket(event: Stop):
    """Send a reply back once if it does not cite the ticket number."""
    if not TICKET_PATTERN.search(event.last_assistant_message or ""):
        return block("The reply does not cite the ticket number.")
    return None


@app.post_tool_use(matcher=REFUND_TOOLS)
def refund_audit_note(event: PostToolUse) -> str:
    """A note next to every refund result, for the agent and the audit trail."""
    amount = refund_amount(event.tool_input)
    order = (event.tool_input or {}).get("order_id", "unknown")
    shown = (
        f"${amount:,.2f}" if amount is not None and is_refund(amount) else "an unreadable amount"
    )
    return f"Refund of {shown} on order {order} recorded for audit (tool call {event.tool_use_id})."
