"""Refund gate: the support agent of Fjord Outfitters may not refund large orders on its own.

- PreToolUse on ``issue_refund`` and on the order system's ``refund`` tool under every
  runtime's name for it (``orders_refund``, ``orders__refund``, ``mcp__orders__refund``,
  ``mcp__plugin_<plugin>_orders__refund``...): denies refunds over the limit, fail closed, so
  an outage never lets one through. It denies too, each with its reason, a refund it cannot
  judge against the limit: an amount it cannot read (anything but digits, ``,`` between groups
  of three and ``.`` before one or two decimals: ``"1.000,50"`` is unreadable, not 1.0005), an
  amount no refund has (negative, NaN, infinite, absurdly large: ``-640``, ``1e999``), an
  amount in another currency than the gate's (``{"amount": 450, "currency": "KWD"}``, about
  $1,460), and every refund while ``REFUND_LIMIT`` is malformed;
- SessionStart: puts the current returns policy in context, so a policy change needs no prompt
  edit;
- Stop: sends back a reply that does not cite the ticket number, once (never loops);
- PostToolUse: adds an audit note next to every refund result.

Configured by environment: ``REFUND_LIMIT`` (default 500, in US dollars), ``RETURNS_POLICY``
(the policy text), ``TICKET_PATTERN`` (a regular expression, default ``#\\d+``). A malformed
setting fails closed: ``handler-kit serve`` refuses to start, naming it; as a command hook,
the refund gate denies every refund (exit 2 in the exit-code dialect) and the handlers that
use the setting fail (exit 1: a Stop hook exiting 2 would keep the agent working).

Serve it with ``handler-kit serve example_servers.refund_gate:app`` (or ``make run``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from decimal import Decimal
from typing import NamedTuple, TypeVar

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

T = TypeVar("T")

# The agent's own issue_refund, and the refund tool of the "orders" MCP server as each runtime
# names it: a spelling the matcher missed would be a refund no gate sees.
REFUND_TOOLS = "^issue_refund$|" + tool_matcher("orders", "refund")
# The currency of the limit, and of a refund whose tool call names none.
CURRENCY = "USD"
DEFAULT_POLICY = (
    "Fjord Outfitters returns policy: unworn items are accepted within 30 days of delivery "
    "with the receipt; refunds go to the original payment method within 5 business days; "
    "refunds over ${limit} need a human approver."
)
# No order comes near it: a larger figure is a malformed amount, and writing one out in full,
# as the audit note does, takes memory in proportion to its exponent.
LARGEST_AMOUNT = Decimal("1e15")
# An amount written as text: an optional sign and "$", then digits with "," between groups of
# three (1,250) or none, then "." and one or two decimals. Nothing else: "1.000,50" is a
# thousand in Europe, and "1.000" too, so three decimals are refused rather than read as a
# dollar; an exponent (1e3), a space, another currency sign or another script's digits, the
# same.
WRITTEN_AMOUNT = re.compile(r"(-?)\$?((?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]{1,2})?)")
CURRENCY_CODE = re.compile(r"[A-Za-z]{3}")
UNREADABLE_REASON = "The refund amount could not be read; a human approver must check it."
INVALID_REASON = "The amount is not a valid refund amount; a human approver must check it."


class RefundGateConfigError(ValueError):
    """A setting of the refund gate is malformed; the message names the variable."""


def money(amount: Decimal) -> str:
    """$500, $1,000, $499.99: cents only when there are some."""
    return f"{amount:,.0f}" if amount == amount.to_integral_value() else f"{amount:,.2f}"


def written_amount(text: str) -> Decimal | None:
    """The amount ``text`` writes (``"$1,250.00"``, ``"-640"``), or None when it is written
    any other way."""
    match = WRITTEN_AMOUNT.fullmatch(text.strip())
    if match is None:
        return None
    sign, digits = match.groups()
    return Decimal(sign + digits.replace(",", ""))


def refund_amount(tool_input: dict[str, object] | None) -> Decimal | None:
    """The refund amount of a tool call (a number or a string like "$640.00"), or None.

    It may be one no refund can have (see :func:`is_refund`).
    """
    raw = (tool_input or {}).get("amount")
    if type(raw) is int:  # the common case, and the hot path of every refund call
        return Decimal(raw)
    if type(raw) is float:  # a JSON number; NaN and the infinities are no refund's
        return Decimal(repr(raw))
    if type(raw) is str:
        return written_amount(raw)
    return None  # missing, null, true, a list...


def is_refund(amount: Decimal) -> bool:
    """Whether a refund can be of ``amount``: not negative, and under :data:`LARGEST_AMOUNT`.
    A negative refund is a charge, and NaN or an infinity is no sum of money (NaN is neither
    over nor under the limit, and -Infinity is under every limit)."""
    return amount.is_finite() and 0 <= amount < LARGEST_AMOUNT


def other_currency(tool_input: dict[str, object] | None) -> str | None:
    """The currency of the refund when it is not :data:`CURRENCY` (its code, or how it is
    described when it is no code), None when it is or none is named."""
    raw = (tool_input or {}).get("currency")
    if raw is None:
        return None
    if isinstance(raw, str) and CURRENCY_CODE.fullmatch(raw.strip()):
        code = raw.strip().upper()
        return None if code == CURRENCY else code
    return "an unknown currency"


def currency_reason(currency: str) -> str:
    where = currency if currency.isupper() else "a currency it cannot read"
    return f"The refund is in {where}, not {CURRENCY}; a human approver must check it."


def refund_problem(tool_input: dict[str, object] | None) -> tuple[Decimal | None, str | None]:
    """(the amount in :data:`CURRENCY`, None), or (None, why it cannot be compared with the
    limit): the one reading the gate and the audit note share."""
    currency = other_currency(tool_input)
    if currency is not None:
        return None, currency_reason(currency)
    amount = refund_amount(tool_input)
    if amount is None:
        return None, UNREADABLE_REASON
    if not is_refund(amount):
        return None, INVALID_REASON
    return amount, None


# -- configuration: read once, at import; a malformed value is recorded, never raised, so the
# module imports and every handler can answer for the settings it uses --------------------------


def read_limit(raw: str) -> Decimal:
    """``REFUND_LIMIT``: an amount written as the gate reads one (500, 1,000.00)."""
    amount = written_amount(raw)
    if amount is None or not is_refund(amount):
        raise RefundGateConfigError(
            f"REFUND_LIMIT={raw[:40]!r} is not an amount of US dollars (write it like 500 or "
            "1,000.00)"
        )
    return amount


def read_ticket_pattern(raw: str) -> re.Pattern[str]:
    """``TICKET_PATTERN``: a Python regular expression."""
    try:
        return re.compile(raw)
    except re.error as exc:
        raise RefundGateConfigError(
            f"TICKET_PATTERN={raw[:80]!r} is not a regular expression: {exc}"
        ) from None


def configured(name: str, default: str, read: Callable[[str], T]) -> tuple[T | None, str | None]:
    """(the value of the variable ``name``, None), or (None, what is wrong with it). Unset or
    empty is ``default``."""
    try:
        return read(os.environ.get(name) or default), None
    except RefundGateConfigError as exc:
        return None, str(exc)


class LimitSettings(NamedTuple):
    """What the gate reads from ``REFUND_LIMIT``, and what follows from it."""

    limit: Decimal | None  # None when REFUND_LIMIT is malformed
    limit_error: str | None  # what is wrong with it
    returns_policy: str | None  # RETURNS_POLICY, or the default one, which states the limit
    deny_reason: str  # why a refund over the limit is denied
    config_errors: tuple[str, ...]  # every malformed setting, for HookApp(config_errors=...)


def limit_settings(default: str) -> LimitSettings:
    """The settings that follow from ``REFUND_LIMIT`` (``default`` when unset); the candidate
    gate (refund_gate_candidate.py) calls it with its own default."""
    limit, error = configured("REFUND_LIMIT", default, read_limit)
    policy = os.environ.get("RETURNS_POLICY") or (
        DEFAULT_POLICY.format(limit=money(limit)) if limit is not None else None
    )
    reason = (
        f"Refunds over ${money(limit)} need a human approver."
        if limit is not None
        else f"The refund gate is misconfigured ({error}); a human approver must check "
        "every refund."
    )
    errors = tuple(e for e in (error, PATTERN_ERROR) if e)
    return LimitSettings(limit, error, policy, reason, errors)


TICKET_PATTERN, PATTERN_ERROR = configured("TICKET_PATTERN", r"#\d+", read_ticket_pattern)
REFUND_LIMIT, LIMIT_ERROR, RETURNS_POLICY, DENY_REASON, CONFIG_ERRORS = limit_settings("500")

app = HookApp(
    "refund-gate",
    description="Refund policy gate for a support agent.",
    config_errors=CONFIG_ERRORS,
)


@app.pre_tool_use(matcher=REFUND_TOOLS, fail_closed=True)
async def refund_gate(event: PreToolUse):
    """Deny refunds over the limit; a refund that cannot be compared with it (unreadable, no
    refund's amount, another currency, no valid limit) is denied too."""
    if REFUND_LIMIT is None:
        return deny(DENY_REASON)
    amount, problem = refund_problem(event.tool_input)
    if problem is not None:
        return deny(problem)
    if amount is not None and amount > REFUND_LIMIT:
        return deny(DENY_REASON)
    return None  # no opinion: the call runs


@app.session_start()
def returns_policy(event: SessionStart) -> str:
    """The current returns policy, as context for the whole thread."""
    if RETURNS_POLICY is None:  # its default states the limit, which is malformed
        raise RefundGateConfigError(LIMIT_ERROR)
    return RETURNS_POLICY


@app.stop()
def cite_ticket(event: Stop):
    """Send a reply back once if it does not cite the ticket number."""
    if TICKET_PATTERN is None:
        # raised, not a block: a failed Stop hook lets the reply through (exit 1), where a
        # block with no way to satisfy it would send the agent back every time
        raise RefundGateConfigError(PATTERN_ERROR)
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
    # a runtime that sends no tool call id (the sandbox runtime) gets no "(tool call None)"
    call = f" (tool call {event.tool_use_id})" if event.tool_use_id else ""
    return f"Refund of {shown} on order {order} recorded for audit{call}."
