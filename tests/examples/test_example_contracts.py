"""The example servers' contracts, through the reference dispatcher: each app on a real HTTPS
port, with the hooks document ``handler-kit document`` generates for it, http and mcp_tool
handlers mixed in one document, one Runbear thread event by event.

(example_servers.context_loader runs its own thread through the dispatcher over http and over
MCP in tests/examples/test_context_loader.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

from example_servers.refund_gate import RETURNS_POLICY
from example_servers.refund_gate import app as refund_gate
from handler_kit.core.merge import RUNBEAR_FAIL_CLOSED_NOTICE

THREAD = {"session_id": "th-9", "thread_id": "th-9", "channel": "slack", "channel_user_id": "U1"}


def event(name: str, **fields: Any) -> dict[str, Any]:
    return {"hook_event_name": name, **THREAD, **fields}


def refund(amount: Any, tool: str = "issue_refund", **fields: Any) -> dict[str, Any]:
    return event(
        "PreToolUse",
        turn_id="t1",
        tool_name=tool,
        tool_input={"order_id": "4821", "amount": amount},
        tool_use_id="toolu_1",
        **fields,
    )


@pytest.mark.parametrize("via", ["http", "mcp", "mixed"])
def test_refund_gate_thread(hook_dispatcher, via: str) -> None:
    dispatcher = hook_dispatcher(refund_gate, via=via)
    run = dispatcher.dispatch_sync
    document = dispatcher.document
    kinds = [h.type for name in document.hooks for _, h in document.handlers(name)]
    assert (
        kinds
        == {
            "http": ["http"] * 4,
            "mcp": ["mcp_tool"] * 4,
            "mixed": ["http", "mcp_tool", "http", "mcp_tool"],
        }[via]
    )

    start = run(event("SessionStart"))
    assert start.additional_context == [RETURNS_POLICY]
    assert run(event("SessionStart")).statuses == ["skipped"]  # once per thread

    denied = run(refund(640))
    assert (denied.decision, denied.reason) == ("deny", "Refunds over $500 need a human approver.")
    assert run(refund("$1,200.00", tool="mcp__orders__refund")).decision == "deny"
    unreadable = run(refund("a lot"))
    assert unreadable.decision == "deny" and "could not be read" in unreadable.reason
    allowed = run(refund(120))
    assert (allowed.decision, allowed.statuses) == (None, ["ok"])
    other_tool = run(refund(9999, tool="lookup_order"))
    assert (other_tool.decision, other_tool.statuses) == (None, ["skipped"])

    audit = run(
        event(
            "PostToolUse",
            tool_name="issue_refund",
            tool_use_id="toolu_1",
            tool_input={"order_id": "4821", "amount": 120},
            tool_response={"ok": True},
        )
    )
    assert audit.additional_context == [
        "Refund of $120.00 on order 4821 recorded for audit (tool call toolu_1)."
    ]

    first = run(event("Stop", turn_id="t1", last_assistant_message="Your refund is on its way."))
    assert (first.decision, first.reason) == ("block", "The reply does not cite the ticket number.")
    again = run(event("Stop", turn_id="t1", last_assistant_message="Still no ticket."))
    assert again.decision is None  # the continuation: stop_hook_active, the block is not honoured
    cited = run(event("Stop", turn_id="t2", last_assistant_message="Refund done (ticket #4821)."))
    assert cited.decision is None


def test_refund_gate_fails_closed_when_the_gate_is_unreachable(hook_dispatcher) -> None:
    dispatcher = hook_dispatcher(refund_gate)
    document = dispatcher.document.to_json()
    gate = document["hooks"]["PreToolUse"][0]["hooks"][0]
    assert gate["failClosed"] is True
    gate["url"] = gate["url"].replace("/hooks/refund_gate", "/hooks/no_such_handler")  # a 404
    broken = hook_dispatcher(refund_gate, document=document)
    outcome = broken.dispatch_sync(refund(20))
    assert outcome.statuses == ["failed"]
    assert (outcome.decision, outcome.reason) == ("deny", RUNBEAR_FAIL_CLOSED_NOTICE)


def test_mixed_transports_in_one_event(hook_dispatcher) -> None:
    from handler_kit import HookApp, UserPromptSubmit, block, context

    hooks = HookApp("mixed-demo")

    @hooks.user_prompt_submit()
    def plan(event: UserPromptSubmit):
        return context("Dana is on the Enterprise plan.")

    @hooks.user_prompt_submit()
    def channel_policy(event: UserPromptSubmit):
        if "crypto" in (event.prompt or ""):
            return block("This channel is for billing questions only.")

    @hooks.user_prompt_submit()
    def order(event: UserPromptSubmit) -> str:
        return "Order 4821 shipped." if "4821" in (event.prompt or "") else ""

    dispatcher = hook_dispatcher(hooks, via="mixed")
    assert [h.type for _, h in dispatcher.document.handlers("UserPromptSubmit")] == [
        "http",
        "mcp_tool",
        "http",
    ]
    thread = dispatcher.thread_for({"thread_id": "x"})
    first = dispatcher.dispatch_sync(
        {"hook_event_name": "UserPromptSubmit", "prompt": "4821?"}, thread
    )
    assert first.additional_context == ["Dana is on the Enterprise plan.", "Order 4821 shipped."]
    second = dispatcher.dispatch_sync(
        {"hook_event_name": "UserPromptSubmit", "prompt": "4821!"}, thread
    )
    assert second.additional_context == []  # both fragments were injected on the first message
    blocked = dispatcher.dispatch_sync(
        {"hook_event_name": "UserPromptSubmit", "prompt": "crypto"}, thread
    )
    assert (blocked.decision, blocked.reason) == (
        "block",
        "This channel is for billing questions only.",
    )
    assert blocked.statuses == ["ok", "ok", "ok"]


def test_hook_server_serves_plain_http_too(hook_server, hook_dispatcher) -> None:
    server = hook_server(refund_gate, tls=False)
    assert server.url.startswith("http://") and server.ca_file is None
    dispatcher = hook_dispatcher(refund_gate, tls=False)  # allow_private admits http:// locally
    assert dispatcher.dispatch_sync(refund(900)).decision == "deny"
