"""The refund gate on amounts no refund can have, sent to the webhook as a runtime would.

A negative amount is under every limit, ``-Infinity`` too, NaN is neither over nor under it,
and JSON's ``1e999`` reads as an infinity: compared with the limit, each would let the refund
run. A figure no order comes near (the string ``"1e999"``) is no refund either, and writing it
out in full in the audit note would take memory in proportion to its exponent. Each is sent as
raw JSON text (the literals ``NaN``, ``-Infinity`` and ``1e999`` as Python's encoder and other
runtimes write them) to the example served by real uvicorn, and each is denied as not a valid
refund amount.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from example_servers import refund_gate
from handler_kit.testing import running_server

INVALID = "The amount is not a valid refund amount; a human approver must check it."
OVER_LIMIT = "Refunds over $500 need a human approver."


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with running_server(refund_gate.app, tls=False) as server, server.http(timeout=10) as client:
        yield client


def answer(http: httpx.Client, amount: str, tool: str = "issue_refund") -> dict[str, object]:
    """The gate's answer to a PreToolUse whose ``amount`` is the JSON text ``amount``."""
    head = json.dumps({"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": tool})
    body = f'{head[:-1]}, "tool_input": {{"order_id": "4821", "amount": {amount}}}}}'
    response = http.post(
        "/hooks", content=body.encode(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert isinstance(result, dict)
    return result


def send(http: httpx.Client, amount: str, tool: str = "issue_refund") -> dict[str, object]:
    """The gate's decision on that refund (it must have one)."""
    output = answer(http, amount, tool)["hookSpecificOutput"]
    assert isinstance(output, dict)
    return output


@pytest.mark.parametrize(
    "amount",
    [
        "-640",
        "-0.01",
        "-Infinity",
        "Infinity",
        "NaN",
        "1e999",
        "-1e999",
        "1e20",
        '"1e999"',
        '"-640"',
        '"-$640.00"',
        '"-Infinity"',
        '"Infinity"',
        '"NaN"',
        '"sNaN"',
    ],
)
def test_an_amount_no_refund_can_have_is_denied(http, amount):
    output = send(http, amount)
    assert output["permissionDecision"] == "deny"
    assert output["permissionDecisionReason"] == INVALID


def test_the_same_under_the_order_systems_tool_name(http):
    output = send(http, "-640", tool="mcp__orders__refund")
    assert (output["permissionDecision"], output["permissionDecisionReason"]) == ("deny", INVALID)


@pytest.mark.parametrize("amount", ["640", '"$1,250.00"', "999999999999999"])
def test_a_valid_amount_over_the_limit_keeps_its_reason(http, amount):
    output = send(http, amount)
    assert output["permissionDecisionReason"] == OVER_LIMIT


@pytest.mark.parametrize("amount", ["0", "-0", "499.99", '"$12.50"'])
def test_a_valid_amount_under_the_limit_runs(http, amount):
    assert answer(http, amount) == {}


def test_the_audit_note_does_not_write_out_a_huge_amount(http):
    """PostToolUse writes the amount into its note: a finite but enormous one is not spelled
    out digit by digit."""
    head = json.dumps(
        {"hook_event_name": "PostToolUse", "tool_name": "issue_refund", "tool_use_id": "t1"}
    )
    body = f'{head[:-1]}, "tool_input": {{"order_id": "4821", "amount": "1e9999999"}}}}'
    response = http.post("/hooks", content=body.encode())
    assert response.status_code == 200
    note = response.json()["hookSpecificOutput"]["additionalContext"]
    assert note.startswith("Refund of an unreadable amount on order 4821")
