"""The refund-gate example (reference/003's story) over real HTTPS, and its policy values
configured by environment in a ``handler-kit serve`` subprocess."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from example_servers import refund_gate
from tests.support.payloads import REFUND_DENY
from tests.support.processes import clean_env, free_port, process, serve_argv

UNREADABLE = "The refund amount could not be read; a human approver must check it."
CITE = "The reply does not cite the ticket number."


def refund(tool: str = "issue_refund", **tool_input: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": tool,
        "tool_input": {"order_id": "4821", **tool_input},
        "tool_use_id": "toolu_1",
    }


def test_defaults_are_the_documented_policy():
    assert refund_gate.REFUND_LIMIT == 500 and refund_gate.CURRENCY == "USD"
    assert refund_gate.app.config_errors == ()
    gate = refund_gate.app.by_name["refund_gate"]
    assert gate.event == "PreToolUse" and gate.fail_closed
    assert gate.matches("issue_refund") and gate.matches("orders__refund")


def test_640_is_denied_with_the_exact_reason(client):
    result = client.send(refund(amount=640))
    assert result.status_code == 200
    assert result.json == REFUND_DENY
    assert (result.decision, result.reason) == ("deny", "Refunds over $500 need a human approver.")


@pytest.mark.parametrize("amount", [40, 500, "500.00", 0, "$12.50"])
def test_at_or_under_the_limit_is_no_opinion(client, amount):
    result = client.send(refund(amount=amount))
    assert result.status_code == 200 and result.json == {} and result.no_opinion


@pytest.mark.parametrize("amount", ["$640.00", "640", "1,250.00", 500.01])
def test_amounts_over_the_limit_in_any_spelling(client, amount):
    result = client.send(refund(amount=amount))
    assert result.json == REFUND_DENY


@pytest.mark.parametrize("tool_input", [{}, {"amount": None}, {"amount": "lots"}, {"amount": True}])
def test_unreadable_amount_is_denied(client, tool_input):
    result = client.send(refund(**tool_input) | {"tool_input": tool_input})
    assert (result.decision, result.reason) == ("deny", UNREADABLE)


@pytest.mark.parametrize(
    "tool",
    [
        "orders_refund",  # Anthropic agents
        "orders__refund",  # the sandbox runtime
        "mcp__orders__refund",  # Claude Agent SDK agents, Claude Code
        "orders_2_refund",  # the server renamed because its name was taken
        "mcp__orders_2__refund",
        "mcp__plugin_fjord_orders__refund",  # Claude Code, the server bundled by a plugin
        "mcp__plugin_support-kit_orders__refund",
    ],
)
def test_every_runtime_spelling_of_the_refund_tool_is_gated(client, tool):
    assert client.send(refund(tool, amount=640)).json == REFUND_DENY
    assert client.send(refund(tool, amount=40)).json == {}


@pytest.mark.parametrize(
    "tool",
    [
        "issue_refund_v2",
        "lookup_order",
        "refund",
        "orders_refund_status",
        "orders_refunds",
        "mcp__orders__refund_status",
    ],
)
def test_other_tools_are_not_gated(client, tool):
    assert client.send(refund(tool, amount=10_000)).json == {}


def test_named_route(client):
    assert client.send(refund(amount=640), handler="refund_gate").json == REFUND_DENY


def test_session_start_policy_context(client):
    result = client.send({"hook_event_name": "SessionStart", "source": "startup"})
    out = result.json["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert out["additionalContext"] == refund_gate.RETURNS_POLICY
    assert "30 days" in result.context and "refunds over $500 need a human approver" in (
        result.context
    )


def test_stop_blocks_a_reply_without_the_ticket_once(client):
    reply = {"hook_event_name": "Stop", "last_assistant_message": "Your refund is on its way."}
    result = client.send(reply | {"stop_hook_active": False})
    assert result.json == {"decision": "block", "reason": CITE}
    # the continuation: never blocks again, whatever the reply says
    assert client.send(reply | {"stop_hook_active": True}).json == {}
    # citing the ticket passes
    cited = {"hook_event_name": "Stop", "last_assistant_message": "Ticket #4821: refunded."}
    assert client.send(cited).json == {}
    # no reply text at all is still checked (and blocked)
    assert client.send({"hook_event_name": "Stop"}).decision == "block"


def test_post_tool_use_audit_note(client):
    event = {
        "hook_event_name": "PostToolUse",
        "tool_name": "issue_refund",
        "tool_input": {"order_id": "4821", "amount": 40},
        "tool_response": {"status": "refunded"},
        "tool_use_id": "toolu_9",
    }
    result = client.send(event)
    assert result.json == {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": (
                "Refund of $40.00 on order 4821 recorded for audit (tool call toolu_9)."
            ),
        }
    }
    other = client.send(event | {"tool_name": "lookup_order"})
    assert other.json == {}


def test_refund_limit_from_the_environment():
    port = free_port()
    token = "refund-limit-token-0123456789"
    env = clean_env(HANDLER_KIT_TOKENS=token, REFUND_LIMIT="1000")
    url = f"http://127.0.0.1:{port}"
    with process(serve_argv("example_servers.refund_gate:app", port, "--no-mcp"), env) as server:
        server.wait_healthy(url, timeout=60)
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=10
        ) as http:
            assert http.post("/hooks", json=refund(amount=640)).json() == {}
            denied = http.post("/hooks", json=refund(amount=1500)).json()
            assert denied["hookSpecificOutput"]["permissionDecisionReason"] == (
                "Refunds over $1,000 need a human approver."
            )
            policy = http.post("/hooks", json={"hook_event_name": "SessionStart"}).json()
            assert (
                "refunds over $1,000 need a human approver"
                in (policy["hookSpecificOutput"]["additionalContext"])
            )
