"""mcp_tool input templates, rule by rule (000_*, "Templates for MCP tools")."""

from __future__ import annotations

from handler_kit.dispatcher.templates import keep_declared, render_input

EVENT = {
    "hook_event_name": "PreToolUse",
    "channel": "slack",
    "channel_user_id": "U0123456789",
    "user_name": "Dana",
    "user_email": None,
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "4821", "amount": 640, "items": ["a", "b"]},
    "stop_hook_active": False,
}


def test_a_value_that_is_exactly_one_placeholder_keeps_its_json_type() -> None:
    rendered, dropped = render_input(
        {
            "args": "${tool_input}",
            "flag": "${stop_hook_active}",
            "amount": "${tool_input.amount}",
            "spaced": "${ channel }",
        },
        EVENT,
    )
    assert rendered == {
        "args": {"order_id": "4821", "amount": 640, "items": ["a", "b"]},
        "flag": False,
        "amount": 640,
        "spaced": "slack",
    }
    assert dropped == []


def test_a_string_that_embeds_placeholders_is_interpolated_as_text() -> None:
    rendered, _ = render_input(
        {
            "who": "user ${user_name} on ${channel}",
            "amount": "refund of ${tool_input.amount} for ${tool_input.order_id}",
            "missing": "email: ${user_email}.",
            "object": "args=${tool_input.items}",
        },
        EVENT,
    )
    assert rendered == {
        "who": "user Dana on slack",
        "amount": "refund of 640 for 4821",
        "missing": "email: .",
        "object": 'args=["a","b"]',
    }


def test_dot_paths_read_nested_values() -> None:
    rendered, _ = render_input(
        {"id": "${tool_input.order_id}", "first": "${tool_input.items.0}"}, EVENT
    )
    assert rendered == {"id": "4821", "first": "a"}


def test_a_key_whose_placeholder_resolves_to_nothing_is_dropped_not_sent_as_null() -> None:
    rendered, dropped = render_input(
        {
            "email": "${user_email}",  # null on Slack
            "team": "${team_id}",  # absent
            "deep": "${tool_input.nope.deeper}",
            "source": "runbear",
        },
        EVENT,
    )
    assert rendered == {"source": "runbear"}
    assert dropped == ["email", "team", "deep"]


def test_literal_values_pass_through_and_nested_templates_render() -> None:
    rendered, _ = render_input(
        {"n": 3, "ok": True, "nested": {"id": "${tool_input.order_id}", "gone": "${nope}"}},
        EVENT,
    )
    assert rendered == {"n": 3, "ok": True, "nested": {"id": "4821"}}


def test_keys_the_tool_schema_does_not_declare_are_dropped() -> None:
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}}
    kept, dropped = keep_declared({"order_id": "1", "renamed_slot": "x"}, schema)
    assert kept == {"order_id": "1"}
    assert dropped == ["renamed_slot"]
    assert keep_declared({"a": 1}, {"type": "object"}) == ({}, ["a"])
