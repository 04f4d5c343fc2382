"""The verdict on a candidate's answer against the recorded one, as a table: decisions ranked
by how much they let through (allow, then no opinion, then ask, then deny/block/halt), every
other difference a change."""

from __future__ import annotations

from typing import Any

import pytest

from handler_kit.replay import compare


def pre(decision: str | None = None, reason: str | None = None, **more: Any) -> dict[str, Any]:
    specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if decision is not None:
        specific["permissionDecision"] = decision
    if reason is not None:
        specific["permissionDecisionReason"] = reason
    specific.update(more)
    return {"hookSpecificOutput": specific}


NONE: dict[str, Any] = {}


@pytest.mark.parametrize(
    ("was", "now", "verdict", "fields"),
    [
        (NONE, NONE, "unchanged", []),
        (pre("deny", "no"), pre("deny", "no"), "unchanged", []),
        (NONE, pre("deny", "no"), "tightened", ["decision", "reason"]),
        (NONE, pre("ask"), "tightened", ["decision"]),
        (pre("allow"), NONE, "tightened", ["decision"]),
        (pre("allow"), {"decision": "block", "reason": "r"}, "tightened", ["decision", "reason"]),
        (pre("deny", "no"), NONE, "loosened", ["decision", "reason"]),
        (pre("deny"), pre("ask"), "loosened", ["decision"]),
        (pre("ask"), pre("allow"), "loosened", ["decision"]),
        ({"continue": False, "stopReason": "s"}, NONE, "loosened", ["decision", "reason"]),
        (pre("deny", "a"), pre("deny", "b"), "changed", ["reason"]),
        (pre("deny"), pre("block"), "changed", ["decision"]),  # the same rank
        (pre(additionalContext="x"), pre(additionalContext="y"), "changed", ["context"]),
        (pre(updatedInput={"a": 1}), pre(updatedInput={"a": 2}), "changed", ["updated_input"]),
        (NONE, {"systemMessage": "m"}, "changed", ["system_message"]),
        (NONE, {"suppressOutput": True}, "changed", ["suppressOutput"]),
    ],
)
def test_verdicts(
    was: dict[str, Any], now: dict[str, Any], verdict: str, fields: list[str]
) -> None:
    found, differences = compare(was, now)
    assert found == verdict
    assert [d.field for d in differences] == fields


def test_an_answer_that_failed_is_no_opinion_and_a_change() -> None:
    # a 500 lets the call through, as no opinion does: a gate that now fails loosened
    assert compare(pre("deny"), NONE, now_failed=True)[0] == "loosened"
    verdict, differences = compare(NONE, NONE, now_failed=True)
    assert verdict == "changed"
    assert [str(d) for d in differences] == ["failed: was none, now true"]
