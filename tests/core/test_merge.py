"""Merge: several handlers' answers to one event, by the runtime's rules.

Claude dialect (what a HookApp answers with) and Runbear dialect (what the reference
dispatcher reproduces): context in order, deny > ask > allow with the first reason,
updatedInput last-set and dropped on deny, one block blocks, fail-closed at its position.
"""

from __future__ import annotations

import pytest

from handler_kit import Failure, Output, allow, ask, block, context, deny, merge, rewrite
from handler_kit.core.merge import RUNBEAR_FAIL_CLOSED_NOTICE, Merged
from handler_kit.core.outputs import CONTEXT_LIMIT, TRUNCATION_MARKER, parse_output

DIALECTS = ["claude", "runbear"]


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit", "PostToolUse"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_context_concatenated_in_order(event, dialect):
    merged = merge(
        event,
        [context("first"), None, Output(), context("second"), Failure(), context("third")],
        dialect=dialect,
    )
    assert merged.contexts == ["first", "second", "third"]
    rendered = merged.to_output().render(event)
    assert rendered["hookSpecificOutput"] == {
        "hookEventName": event,
        "additionalContext": "first\n\nsecond\n\nthird",
    }


def test_empty_context_counts_as_none():
    assert merge("SessionStart", [context(""), context("x")]).contexts == ["x"]


def test_each_context_capped_separately():
    merged = merge("UserPromptSubmit", [context("a" * 20_000), context("short")])
    assert len(merged.contexts[0]) == CONTEXT_LIMIT
    assert merged.contexts[0].endswith(TRUNCATION_MARKER)
    assert merged.contexts[1] == "short"


@pytest.mark.parametrize(
    ("results", "decision", "reason"),
    [
        ([allow("a"), ask("q"), deny("d1"), deny("d2")], "deny", "d1"),
        ([deny("d1"), allow("a")], "deny", "d1"),
        ([allow("a1"), ask("q1"), ask("q2")], "ask", "q1"),
        ([allow(), allow("second"), allow("third")], "allow", "second"),
        ([ask(), deny("d")], "deny", "d"),
        ([None, allow()], "allow", None),
        ([None, Failure()], None, None),
    ],
)
def test_strictest_decision_wins_with_its_first_reason(results, decision, reason):
    merged = merge("PreToolUse", results)
    assert (merged.decision, merged.reason) == (decision, reason)


def test_updated_input_last_set_wins_and_is_dropped_on_deny():
    merged = merge("PreToolUse", [rewrite({"v": 1}), allow(), rewrite({"v": 2}), None])
    assert merged.decision == "allow"
    assert merged.updated_input == {"v": 2}
    assert merged.to_output().render("PreToolUse")["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"v": 2},
    }
    denied = merge("PreToolUse", [rewrite({"v": 1}), deny("no"), rewrite({"v": 2})])
    assert denied.decision == "deny" and denied.updated_input is None
    assert "updatedInput" not in denied.to_output().render("PreToolUse")["hookSpecificOutput"]
    # ask keeps the rewrite (Claude Code: updatedInput works with allow or ask)
    asked = merge("PreToolUse", [rewrite({"v": 1}), ask("sure?")])
    assert asked.decision == "ask" and asked.updated_input == {"v": 1}


@pytest.mark.parametrize("event", ["UserPromptSubmit", "PostToolUse", "Stop", "SubagentStop"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_one_block_blocks_with_the_first_reason(event, dialect):
    merged = merge(
        event, [None, Output(), block("first"), Failure(), block("second")], dialect=dialect
    )
    assert (merged.decision, merged.reason) == ("block", "first")
    assert merged.to_output().render(event) == {"decision": "block", "reason": "first"}
    assert merge(event, [None, Output()], dialect=dialect).decision is None


def test_block_on_an_event_without_blocks_is_ignored():
    # Runbear: "On SessionStart a block is ignored"
    assert merge("SessionStart", [block("x")], dialect="runbear").decision is None


@pytest.mark.parametrize("dialect", DIALECTS)
def test_fail_closed_failure_counts_as_deny_at_its_position(dialect):
    before = merge("PreToolUse", [deny("explicit"), Failure(fail_closed=True)], dialect=dialect)
    assert (before.decision, before.reason) == ("deny", "explicit")
    after = merge("PreToolUse", [Failure(fail_closed=True), deny("explicit")], dialect=dialect)
    assert (after.decision, after.reason) == ("deny", RUNBEAR_FAIL_CLOSED_NOTICE)
    noticed = merge(
        "PreToolUse",
        [allow("ok"), Failure(fail_closed=True, notice="gate failed")],
        dialect=dialect,
    )
    assert (noticed.decision, noticed.reason) == ("deny", "gate failed")
    # a fail-open failure is simply ignored
    assert merge("PreToolUse", [Failure(), allow("ok")], dialect=dialect).decision == "allow"
    # and a fail-closed failure drops a rewrite like any deny
    dropped = merge("PreToolUse", [rewrite({"a": 1}), Failure(fail_closed=True)], dialect=dialect)
    assert dropped.updated_input is None


def test_fail_closed_failure_blocks_user_prompt_submit():
    merged = merge("UserPromptSubmit", [context("ctx"), Failure(fail_closed=True)])
    assert (merged.decision, merged.reason) == ("block", RUNBEAR_FAIL_CLOSED_NOTICE)
    assert merged.contexts == ["ctx"]
    # no safe decision on Stop/PostToolUse/SessionStart: the failure is ignored
    for event in ("Stop", "PostToolUse", "SessionStart"):
        assert merge(event, [Failure(fail_closed=True)]).decision is None


# -- Runbear dialect -----------------------------------------------------------------------


def test_runbear_ask_is_deny():
    merged = merge("PreToolUse", [allow("a"), ask("please confirm")], dialect="runbear")
    assert (merged.decision, merged.reason) == ("deny", "please confirm")
    claude = merge("PreToolUse", [allow("a"), ask("please confirm")], dialect="claude")
    assert claude.decision == "ask"


def test_runbear_defer_is_ignored():
    defer = Output(decision="defer")
    assert merge("PreToolUse", [defer], dialect="runbear").decision is None
    assert merge("PreToolUse", [allow("a"), defer], dialect="runbear").decision == "allow"
    assert merge("PreToolUse", [allow("a"), defer], dialect="claude").decision == "defer"


def test_which_reason_a_winning_decision_carries():
    """Claude: the first reason given for the winner. Runbear: a winning deny likewise, a
    winning block the first blocking handler's, even when it gave none."""
    blocks = [Output(decision="block"), block("second")]
    assert merge("Stop", blocks, dialect="claude").reason == "second"
    merged = merge("Stop", blocks, dialect="runbear")
    assert (merged.decision, merged.reason) == ("block", None)
    denies = [Output(decision="deny"), deny("second")]
    for dialect in DIALECTS:
        merged = merge("PreToolUse", denies, dialect=dialect)
        assert (merged.decision, merged.reason) == ("deny", "second")


def test_runbear_legacy_spellings():
    approve = parse_output("PreToolUse", {"decision": "approve", "reason": "fine"})
    merged = merge("PreToolUse", [approve], dialect="runbear")
    assert (merged.decision, merged.reason) == ("allow", "fine")
    legacy_block = parse_output("PreToolUse", {"decision": "block", "reason": "no"})
    merged = merge("PreToolUse", [allow("a"), legacy_block], dialect="runbear")
    assert (merged.decision, merged.reason) == ("deny", "no")


@pytest.mark.parametrize("event", ["PreToolUse", "Stop"])
def test_runbear_drops_context_on_decision_events(event):
    results = [context("ignored on decision events")]
    assert merge(event, results, dialect="runbear").contexts == []
    assert merge(event, results, dialect="claude").contexts == ["ignored on decision events"]


def test_halt_and_universal_fields():
    merged = merge(
        "Stop",
        [
            Output(continue_=True, system_message="one"),
            Output(continue_=False, stop_reason="first stop"),
            Output(continue_=False, stop_reason="second stop", system_message="two"),
        ],
    )
    rendered = merged.to_output().render("Stop")
    assert rendered == {"continue": False, "stopReason": "first stop", "systemMessage": "one\ntwo"}


def test_permission_request_decisions_merge_as_pre_tool_uses_do():
    merged = merge("PermissionRequest", [allow("fine"), deny("no"), allow(), deny("later")])
    assert (merged.decision, merged.reason) == ("deny", "no")
    asked = merge("PermissionRequest", [rewrite({"v": 1}), allow()])
    assert (asked.decision, asked.updated_input) == ("allow", {"v": 1})


def test_a_subclass_is_never_equal_to_its_base_as_with_dataclasses():
    class NamedFailure(Failure):
        __slots__ = ()

    class NamedMerged(Merged):
        __slots__ = ()

    assert Failure(True, "n") == Failure(True, "n")
    assert Failure(True, "n") != NamedFailure(True, "n")
    assert Merged("Stop", "block") == Merged("Stop", "block")
    assert Merged("Stop", "block") != NamedMerged("Stop", "block")


# -- continue, suppressOutput and the keys handler-kit does not read ---------------------------


def stop(data):
    return parse_output("Stop", data)


@pytest.mark.parametrize(
    ("outputs", "rendered"),
    [
        ([{"continue": True}, {}], {"continue": True}),
        ([{}, {"continue": True}], {"continue": True}),
        (
            [{"continue": False, "stopReason": "a"}, {"continue": True}],
            {"continue": False, "stopReason": "a"},
        ),
        (
            [{"continue": True}, {"continue": False, "stopReason": "b"}],
            {"continue": False, "stopReason": "b"},
        ),
        ([{"suppressOutput": False}, {}], {"suppressOutput": False}),
        ([{"suppressOutput": False}, {"suppressOutput": True}], {"suppressOutput": True}),
        ([{"suppressOutput": True}, {"suppressOutput": False}], {"suppressOutput": True}),
        ([{}, {}], {}),
    ],
)
def test_any_stop_stops_and_any_suppression_suppresses(outputs, rendered):
    assert merge("Stop", [stop(o) for o in outputs]).to_output().render("Stop") == rendered


def test_keys_not_read_are_kept_the_first_given_wins():
    def permission(interrupt, **extra):
        decision = {"behavior": "allow", "interrupt": interrupt}
        return parse_output(
            "PermissionRequest", {"hookSpecificOutput": {"decision": decision}, **extra}
        )

    merged = merge(
        "PermissionRequest", [permission(False, x_one=1), permission(True, x_one=2, x_two=3)]
    )
    assert merged.to_output().render("PermissionRequest") == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow", "interrupt": False},
        },
        "x_one": 1,
        "x_two": 3,
    }
