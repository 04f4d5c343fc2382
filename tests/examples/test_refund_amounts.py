"""The refund gate on the amounts and currencies a tool call can carry, sent to the webhook as a
runtime would, to the example served by real uvicorn.

A negative amount is under every limit, ``-Infinity`` too, NaN is neither over nor under it,
and JSON's ``1e999`` reads as an infinity: compared with the limit, each would let the refund
run, so each is denied as not a valid refund amount. A figure no order comes near is no refund
either, and writing it out in full in the audit note would take memory in proportion to its
exponent. The literals ``NaN``, ``-Infinity`` and ``1e999`` are sent as raw JSON text, as
Python's encoder and other runtimes write them.

A written amount is read one way only (digits, ``,`` between groups of three, ``.`` and one or
two decimals): ``"1.000,50"``, a thousand in Europe, read by a looser rule as 1.0005 would run.
Anything else is unreadable, and denied. An amount in another currency than the gate's is
denied too: 450 KWD is about $1,460.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from example_servers import refund_gate
from handler_kit.testing import running_server

INVALID = "The amount is not a valid refund amount; a human approver must check it."
UNREADABLE = "The refund amount could not be read; a human approver must check it."
OVER_LIMIT = "Refunds over $500 need a human approver."


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with running_server(refund_gate.app, tls=False) as server, server.http(timeout=10) as client:
        yield client


def answer(
    http: httpx.Client, amount: str, tool: str = "issue_refund", **fields: object
) -> dict[str, object]:
    """The gate's answer to a PreToolUse whose ``amount`` is the JSON text ``amount``, with
    ``fields`` beside it in the tool input."""
    head = json.dumps({"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": tool})
    more = "".join(f", {json.dumps(k)}: {json.dumps(v)}" for k, v in fields.items())
    body = f'{head[:-1]}, "tool_input": {{"order_id": "4821", "amount": {amount}{more}}}}}'
    response = http.post(
        "/hooks", content=body.encode(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert isinstance(result, dict)
    return result


def send(
    http: httpx.Client, amount: str, tool: str = "issue_refund", **fields: object
) -> dict[str, object]:
    """The gate's decision on that refund (it must have one)."""
    output = answer(http, amount, tool, **fields)["hookSpecificOutput"]
    assert isinstance(output, dict)
    return output


@pytest.mark.parametrize(
    "amount",
    [
        *("-640", "-0.01", "-Infinity", "Infinity", "NaN", "1e999", "-1e999", "1e20"),
        *('"-640"', '"-$640.00"', '"-1,250.00"', '"-0.5"'),
    ],
)
def test_an_amount_no_refund_can_have_is_denied(http, amount):
    output = send(http, amount)
    assert output["permissionDecision"] == "deny"
    assert output["permissionDecisionReason"] == INVALID


def test_the_same_under_the_order_systems_tool_name(http):
    output = send(http, "-640", tool="mcp__orders__refund")
    assert (output["permissionDecision"], output["permissionDecisionReason"]) == ("deny", INVALID)


# JSON text of the amount -> what the gate reads it as (the limit is $500)
OVER_THE_LIMIT = [
    "640",
    "500.01",
    "999999999999999",
    '"640"',
    '"$1,250.00"',
    '"1,000.50"',  # the one way a thousand and a half is written
    '"1,000"',
    '"12,345,678.9"',
    '"1000.5"',
    '"$640"',
    '" 640 "',
    '"0640"',
]
UNDER_THE_LIMIT = ["0", "-0", "499.99", "500", '"$12.50"', '"500.00"', '"$500"', '"450"', '"0.5"']
UNREADABLE_AMOUNTS = [
    '"1.000,50"',  # 1,000.50 in Europe, which a looser rule reads as 1.0005
    '"1.000"',  # a thousand in Europe: three decimals are no cents
    '"1.0005"',
    '"12.500"',
    '"1,00"',
    '"1,0000"',
    '"1000,50"',
    '"12,50"',
    '",500"',
    '"1,,000"',
    '"1,000,"',
    '"1 000"',
    '"4_000"',  # Python's Decimal reads it as 4000
    '"1e3"',
    '".5"',
    '"5."',
    '"0x10"',
    '"\u0661\u0662\u0663"',  # Arabic-Indic digits, which Decimal reads as 123
    '"\u20ac450"',  # EUR 450
    '"450 USD"',
    '"USD 450"',
    '"$$5"',
    '"$-5"',
    '"+5"',
    '""',
    '"lots"',
    '"NaN"',
    '"sNaN"',
    '"Infinity"',
    '"-Infinity"',
    '"1e999"',
    "true",
    "null",
    "[640]",
    '{"value": 640}',
]


@pytest.mark.parametrize("amount", OVER_THE_LIMIT)
def test_a_valid_amount_over_the_limit_keeps_its_reason(http, amount):
    output = send(http, amount)
    assert (output["permissionDecision"], output["permissionDecisionReason"]) == (
        "deny",
        OVER_LIMIT,
    )


@pytest.mark.parametrize("amount", UNDER_THE_LIMIT)
def test_a_valid_amount_under_the_limit_runs(http, amount):
    assert answer(http, amount) == {}


@pytest.mark.parametrize("amount", UNREADABLE_AMOUNTS)
def test_an_amount_written_any_other_way_is_unreadable_and_denied(http, amount):
    output = send(http, amount)
    assert (output["permissionDecision"], output["permissionDecisionReason"]) == (
        "deny",
        UNREADABLE,
    )


def in_currency(code: str) -> str:
    return f"The refund is in {code}, not USD; a human approver must check it."


# the currency field -> the gate's reason (None: no opinion, the refund of 450 runs)
CURRENCIES = [
    ("KWD", in_currency("KWD")),  # 450 KWD is about $1,460
    ("EUR", in_currency("EUR")),
    ("kwd", in_currency("KWD")),
    ("usd", None),
    (" USD ", None),
    ("USD", None),
    (None, None),
    ("US$", in_currency("a currency it cannot read")),
    ("USDT", in_currency("a currency it cannot read")),
    ("", in_currency("a currency it cannot read")),
    (840, in_currency("a currency it cannot read")),
    (["USD"], in_currency("a currency it cannot read")),
]


@pytest.mark.parametrize(("currency", "reason"), CURRENCIES)
def test_a_refund_in_another_currency_is_denied(http, currency, reason):
    result = answer(http, "450", currency=currency)
    if reason is None:
        assert result == {}
    else:
        output = result["hookSpecificOutput"]
        assert isinstance(output, dict)
        assert (output["permissionDecision"], output["permissionDecisionReason"]) == (
            "deny",
            reason,
        )


def test_another_currency_is_denied_whatever_the_amount_and_the_tools_name(http):
    """The currency is the first thing read: no amount in it is compared with the limit."""
    for amount in ("1", '"lots"', "-5"):
        for tool in ("issue_refund", "mcp__orders__refund", "mcp__plugin_shop_orders__refund"):
            output = send(http, amount, tool=tool, currency="KWD")
            assert output["permissionDecisionReason"] == in_currency("KWD"), (amount, tool)
    # the gate's own currency, named, changes nothing
    assert send(http, "640", currency="USD")["permissionDecisionReason"] == OVER_LIMIT


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


def post_tool_use(http: httpx.Client, **fields: object) -> str:
    event = {
        "hook_event_name": "PostToolUse",
        "tool_name": "orders__refund",
        "tool_input": {"order_id": "4821", "amount": 40},
        **fields,
    }
    response = http.post("/hooks", json=event)
    assert response.status_code == 200, response.text
    note = response.json()["hookSpecificOutput"]["additionalContext"]
    assert isinstance(note, str)
    return note


def test_the_audit_note_names_the_tool_call_only_when_there_is_one(http):
    """The sandbox runtime sends no tool_use_id: the note does not say "tool call None"."""
    assert post_tool_use(http, tool_use_id="toolu_7") == (
        "Refund of $40.00 on order 4821 recorded for audit (tool call toolu_7)."
    )
    for missing in ({}, {"tool_use_id": None}, {"tool_use_id": ""}):
        assert (
            post_tool_use(http, **missing) == "Refund of $40.00 on order 4821 recorded for audit."
        )
    note = post_tool_use(http, tool_input={"order_id": "4821", "amount": 450, "currency": "KWD"})
    assert note == "Refund of an amount in KWD on order 4821 recorded for audit."
