"""The refund gate's next version, as a candidate to replay and shadow before it is enforced
(docs/rollout.md): the limit raised from $500 to $1,000, and the agent's own refund tool
gated under every spelling of its name (``issue-refund``, ``issueRefund``, ``IssueRefund``...),
which the current gate lets through ungated.

A second module rather than a setting: the refund gate reads its limit once, at import, so
one process cannot hold both. The handlers keep their names, which is how replay and shadow
pair each with the one it replaces; the reading of amounts and currencies, and the settings
that follow from the limit (``limit_settings``), are the current gate's own.

Serve or replay it as ``example_servers.refund_gate_candidate:app``; ``REFUND_LIMIT`` still
overrides the limit, ``RETURNS_POLICY`` and ``TICKET_PATTERN`` work as in the current gate.
"""

from __future__ import annotations

from example_servers.refund_gate import (
    RefundGateConfigError,
    cite_ticket,
    limit_settings,
    refund_audit_note,
    refund_problem,
)
from handler_kit import (
    HookApp,
    PreToolUse,
    SessionStart,
    deny,
    tool_matcher,
)

# Every spelling of the agent's own refund tool a model has been seen to call, and the orders
# server's refund tool as each runtime names it.
REFUND_TOOLS = "^[Ii]ssue[-_]?[Rr]efund$|" + tool_matcher("orders", "refund")

REFUND_LIMIT, LIMIT_ERROR, RETURNS_POLICY, DENY_REASON, CONFIG_ERRORS = limit_settings("1000")

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
        raise RefundGateConfigError(LIMIT_ERROR)
    return RETURNS_POLICY


# Unchanged in this version: the current gate's own functions, registered on this app under
# the same names (refund_audit_note with the wider spellings).
app.stop()(cite_ticket)
app.post_tool_use(matcher=REFUND_TOOLS)(refund_audit_note)
