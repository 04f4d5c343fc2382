"""Matchers: the Claude Code / Runbear rule, exactly, compiled once at decoration."""

from __future__ import annotations

import asyncio

import pytest

from handler_kit import HookApp, MatcherError, compile_matcher, parse_event
from handler_kit.core.matchers import is_match_all

NAMES = [
    "issue_refund",
    "orders__refund",
    "refund",
    "issue_refund_v2",
    "send-message",
    "send_message",
    "mcp__context-server__lookup",
    "Bash",
    "",
]


@pytest.mark.parametrize("matcher", [None, "", "*", "  ", " * "])
def test_omitted_empty_or_star_match_everything(matcher):
    match = compile_matcher(matcher)
    assert is_match_all(matcher)
    assert all(match(name) for name in NAMES)
    assert match(None)


@pytest.mark.parametrize(
    ("matcher", "matched"),
    [
        ("refund", {"refund"}),  # the Runbear doc's own example: exactly refund
        ("issue_refund|orders__refund", {"issue_refund", "orders__refund"}),
        ("issue_refund,orders__refund", {"issue_refund", "orders__refund"}),
        (" issue_refund | orders__refund ", {"issue_refund", "orders__refund"}),
        ("issue_refund, refund", {"issue_refund", "refund"}),
        ("issue_refund\t|\nBash", {"issue_refund", "Bash"}),
        ("send-message", {"send-message"}),  # '-' keeps it a list: not a regex range
        ("mcp__context-server__lookup", {"mcp__context-server__lookup"}),
        ("Bash|send_message", {"Bash", "send_message"}),
    ],
)
def test_exact_name_lists(matcher, matched):
    match = compile_matcher(matcher)
    assert {name for name in NAMES if match(name)} == matched
    assert not match(None)
    assert not is_match_all(matcher)


@pytest.mark.parametrize(
    ("matcher", "matched"),
    [
        ("refund.*", {"issue_refund", "orders__refund", "refund", "issue_refund_v2"}),
        ("send[-_]message", {"send-message", "send_message"}),
        ("^mcp__context-server__", {"mcp__context-server__lookup"}),
        ("refund$", {"issue_refund", "orders__refund", "refund"}),
        ("^(issue_refund|Bash)$", {"issue_refund", "Bash"}),
        ("_v\\d", {"issue_refund_v2"}),
        ("B.sh", {"Bash"}),
    ],
)
def test_anything_else_is_an_unanchored_regex(matcher, matched):
    match = compile_matcher(matcher)
    assert {name for name in NAMES if match(name)} == matched
    assert not match(None)


def test_unanchored_means_search_not_match():
    match = compile_matcher("fund.")
    assert match("issue_refund_v2")  # found in the middle
    assert not match("issue_refund")  # nothing after "fund"


@pytest.mark.parametrize("bad", ["refund(", "[a-", "*refund", "a{2,1}", "(?P<x"])
def test_invalid_regex_fails_at_compile(bad):
    with pytest.raises(MatcherError, match="invalid matcher"):
        compile_matcher(bad)


def test_invalid_regex_fails_at_decoration_with_the_handlers_name():
    hooks = HookApp("bad")
    with pytest.raises(ValueError, match="refund_gate_v3") as info:

        @hooks.pre_tool_use(matcher="issue_refund(")
        def refund_gate_v3(event):
            return None

    assert "issue_refund(" in str(info.value)
    with pytest.raises(ValueError, match="custom-name"):

        @hooks.pre_tool_use(matcher="[unclosed", name="custom-name")
        def whatever(event):
            return None

    assert hooks.handlers == []  # nothing half-registered


def test_matchers_filter_handlers_per_event_field():
    """Tool events match tool_name; SessionStart its source; Notification its type."""
    hooks = HookApp("m")

    @hooks.pre_tool_use(matcher="issue_refund|orders__refund")
    def gate(event):
        return None

    @hooks.pre_tool_use(matcher="mcp__.*")
    def mcp_only(event):
        return None

    @hooks.pre_tool_use()
    def every_tool(event):
        return None

    @hooks.session_start(matcher="startup|resume")
    def fresh(event):
        return "fresh"

    @hooks.notification(matcher="idle_prompt")
    def idle(event):
        return None

    def names(data):
        return [h.name for h in hooks.matching(parse_event(data))]

    assert names({"hook_event_name": "PreToolUse", "tool_name": "orders__refund"}) == [
        "gate",
        "every_tool",
    ]
    assert names({"hook_event_name": "PreToolUse", "tool_name": "mcp__orders__refund"}) == [
        "mcp_only",
        "every_tool",
    ]
    assert names({"hook_event_name": "PreToolUse"}) == ["every_tool"]
    assert names({"hook_event_name": "SessionStart", "source": "resume"}) == ["fresh"]
    assert names({"hook_event_name": "SessionStart", "source": "clear"}) == []
    assert names({"hook_event_name": "Notification", "notification_type": "idle_prompt"}) == [
        "idle"
    ]
    answer = asyncio.run(
        hooks.answer(parse_event({"hook_event_name": "SessionStart", "source": "compact"}))
    )
    assert answer.output == {} and answer.invocations == []
