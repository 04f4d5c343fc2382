"""A field Runbear does not read never costs the decision beside it.

Everything Runbear does not read "is accepted and ignored, so a hook written for Claude Code
never fails to parse" (000_*): only what it reads is type-checked. Whether a field is read can
depend on the others (a ``reason`` is the reason of a top-level ``decision``; an
``updatedInput`` is dropped with a deny; Stop reads nothing of ``hookSpecificOutput``). Each
answer comes from a real HTTPS server, through the dispatcher; none of the handlers is
fail-closed, so a failure would let the call run.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.dispatch import ScriptServer, block, context, document, http, permission

REASON = "Refunds over $500 need a human approver."
PRE = {
    "hook_event_name": "PreToolUse",
    "thread_id": "u1",
    "turn_id": "1.1",
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "4821", "amount": 640},
}
PROMPT = {"hook_event_name": "UserPromptSubmit", "thread_id": "u2", "prompt": "refund?"}
STOP = {"hook_event_name": "Stop", "thread_id": "u3", "turn_id": "1.1"}
START = {"hook_event_name": "SessionStart", "thread_id": "u4"}
POST = {**PRE, "hook_event_name": "PostToolUse", "thread_id": "u5", "tool_response": {}}

# name -> (input, answer, expected (decision, reason, additional_context))
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], tuple[Any, Any, list[str]]]] = {
    # a reason with no top-level decision is the reason of nothing
    "reason beside permissionDecision": (
        PRE,
        {**permission("deny", REASON), "reason": {"code": 42}},
        ("deny", REASON, []),
    ),
    # permissionDecision replaces the older top-level spelling, which is then not read
    "decision beside permissionDecision": (
        PRE,
        {**permission("deny", REASON), "decision": 5, "reason": ["x"]},
        ("deny", REASON, []),
    ),
    "unknown decision beside permissionDecision": (
        PRE,
        {**permission("deny", REASON), "decision": "maybe"},
        ("deny", REASON, []),
    ),
    # an updatedInput is dropped with a deny (an ask is one)
    "updatedInput beside deny": (
        PRE,
        permission("deny", REASON, updatedInput="amount=0"),
        ("deny", REASON, []),
    ),
    "updatedInput beside ask": (
        PRE,
        permission("ask", REASON, updatedInput=[1]),
        ("deny", REASON, []),
    ),
    # permissionDecisionReason is the reason of a permissionDecision
    "permissionDecisionReason beside a top-level block": (
        PRE,
        {**block(REASON), "hookSpecificOutput": {"permissionDecisionReason": 7}},
        ("deny", REASON, []),
    ),
    "reason beside context": (
        PROMPT,
        {**context("UserPromptSubmit", "Billing FAQ."), "reason": 42},
        (None, None, ["Billing FAQ."]),
    ),
    # Stop reads nothing of hookSpecificOutput
    "hookSpecificOutput not an object on Stop": (
        STOP,
        {**block("Cite the ticket."), "hookSpecificOutput": "yes"},
        ("block", "Cite the ticket.", []),
    ),
    "hookEventName of another event on Stop": (
        STOP,
        {**block("Cite the ticket."), "hookSpecificOutput": {"hookEventName": "PreToolUse"}},
        ("block", "Cite the ticket.", []),
    ),
    # a decision is ignored on SessionStart, whatever it is
    "decision on SessionStart": (
        START,
        {**context("SessionStart", "Plan: gold."), "decision": 7, "reason": 8},
        (None, None, ["Plan: gold."]),
    ),
    "unknown decision on SessionStart": (
        START,
        {**context("SessionStart", "Plan: gold."), "decision": "allow"},
        (None, None, ["Plan: gold."]),
    ),
    "permission fields on PostToolUse": (
        POST,
        {
            **block("Redact the card."),
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": 1},
        },
        ("block", "Redact the card.", []),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_unread_field_of_any_type_leaves_the_decision(
    name: str, scripted: ScriptServer, dispatcher_for
) -> None:
    event, answer, expected = CASES[name]
    url = scripted.url("gate", body=answer)
    outcome = dispatcher_for(document(event["hook_event_name"], http(url))).dispatch_sync(event)
    assert outcome.statuses == ["ok"], outcome.handlers[0].error
    assert (outcome.decision, outcome.reason, outcome.additional_context) == expected


# What Runbear does read is still checked: the wrong type there is the handler's failure.
READ: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "reason of a block": (PROMPT, {"decision": "block", "reason": 5}, "reason must be a string"),
    "reason of a top-level deny": (PRE, {"decision": "block", "reason": 5}, "reason must be"),
    "permissionDecisionReason of a deny": (
        PRE,
        permission("deny", {"why": 1}),  # type: ignore[arg-type]
        "permissionDecisionReason must be a string",
    ),
    "updatedInput of an allow": (
        PRE,
        permission("allow", updatedInput="amount=0"),
        "updatedInput must be an object",
    ),
    "hookEventName of another event": (
        PRE,
        {"hookSpecificOutput": {"hookEventName": "Stop", "permissionDecision": "deny"}},
        "hookEventName",
    ),
    "context on UserPromptSubmit": (
        PROMPT,
        {"hookSpecificOutput": {"additionalContext": 5}},
        "additionalContext must be a string",
    ),
}


@pytest.mark.parametrize("name", list(READ))
def test_a_read_field_of_the_wrong_type_is_a_failure(
    name: str, scripted: ScriptServer, dispatcher_for
) -> None:
    event, answer, error = READ[name]
    url = scripted.url("gate", body=answer)
    outcome = dispatcher_for(document(event["hook_event_name"], http(url))).dispatch_sync(event)
    assert outcome.statuses == ["failed"]
    assert error in (outcome.handlers[0].error or ""), outcome.handlers[0].error
