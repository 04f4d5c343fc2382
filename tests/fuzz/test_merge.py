"""Properties of the merge of several handlers' answers (both dialects).

Deny beats ask beats allow (and defer, in Claude Code's dialect, sits between deny and ask;
Runbear ignores it and reads a winning ask as deny); a fail-closed failure counts as the
event's safe decision; the reason is the first one given for the winning decision; contexts
keep document order; updatedInput is the last one set and is dropped on deny; the decision
does not depend on the order of the answers; and the merged answer of outputs the event can
carry is one the event can carry.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from handler_kit import Failure, Output, allow, ask, deny, merge
from handler_kit.core.merge import RUNBEAR_CONTEXT_EVENTS
from handler_kit.core.outputs import SAFE_DECISIONS, cap_context
from tests.fuzz.support import any_text, json_values

DECISION_EVENTS = ["PreToolUse", "PermissionRequest"]
BLOCK_EVENTS = ["UserPromptSubmit", "PostToolUse", "Stop"]
# Claude Code's order (strictest first), and Runbear's reading.
CLAUDE_ORDER = ["deny", "defer", "ask", "allow"]


def outputs_for(event: str) -> st.SearchStrategy[Output]:
    """Outputs ``event`` can carry, with the fields the merge combines."""
    decisions = {
        "PreToolUse": ["allow", "deny", "ask", "defer"],
        "PermissionRequest": ["allow", "deny"],
    }.get(event, ["block"])
    with_context = event not in ("PermissionRequest",)
    return st.builds(
        Output,
        decision=st.none() | st.sampled_from(decisions),
        reason=st.none() | any_text,
        context=(st.none() | any_text | st.just("c" * 10_050)) if with_context else st.none(),
        updated_input=(
            st.none() | st.dictionaries(any_text, json_values(4), max_size=2)
            if event in DECISION_EVENTS
            else st.none()
        ),
        continue_=st.none() | st.booleans(),
        stop_reason=st.none() | any_text,
        system_message=st.none() | any_text,
    )


def results_for(event: str) -> st.SearchStrategy[list[Output | Failure | None]]:
    item = st.one_of(
        outputs_for(event),
        st.none(),
        st.builds(Failure, fail_closed=st.booleans(), notice=st.none() | any_text),
    )
    return st.lists(item, max_size=6)


def expected_decision(event: str, results: list[Any], dialect: str) -> tuple[Any, Any]:
    """(decision, reason) by the rules, written out plainly."""
    given_: list[tuple[str, str | None]] = []
    for result in results:
        if isinstance(result, Failure):
            if result.fail_closed and event in SAFE_DECISIONS:
                given_.append((SAFE_DECISIONS[event], result.notice or "notice"))
        elif isinstance(result, Output) and result.decision is not None:
            decision = result.decision
            if dialect == "runbear" and decision == "defer":
                continue
            given_.append((decision, result.reason))
    if not given_:
        return None, None
    order = ["block", *CLAUDE_ORDER]
    winner = next(d for d in order if any(g == d for g, _ in given_))
    reasons = [r for d, r in given_ if d == winner]
    if dialect == "runbear" and winner == "block":
        reason = reasons[0]
    else:
        reason = next((r for r in reasons if r is not None), None)
    if dialect == "runbear" and winner == "ask":
        winner = "deny"
    return winner, reason


@given(data=st.data(), event=st.sampled_from(DECISION_EVENTS + BLOCK_EVENTS))
@example(data=[ask("q"), allow("a"), deny("d")], event="PreToolUse")
@example(data=[allow(updated_input={"x": 1}), Failure(fail_closed=True)], event="PreToolUse")
def test_merge_follows_the_rules(data: Any, event: str) -> None:
    results = data if isinstance(data, list) else data.draw(results_for(event), label="results")
    for dialect in ("claude", "runbear"):
        merged = merge(event, results, dialect=dialect, fail_closed_notice="notice")
        decision, reason = expected_decision(event, results, dialect)
        assert (merged.decision, merged.reason) == (decision, reason), dialect

        contexts = [cap_context(r.context) for r in results if isinstance(r, Output) and r.context]
        if dialect == "runbear" and event not in RUNBEAR_CONTEXT_EVENTS:
            contexts = []
        assert merged.contexts == contexts  # document order, each capped

        set_inputs = [r.updated_input for r in results if isinstance(r, Output)]
        set_inputs = [i for i in set_inputs if i is not None]
        if merged.decision == "deny" or not set_inputs:
            assert merged.updated_input is None
        else:
            assert merged.updated_input is set_inputs[-1]

        halts = [r for r in results if isinstance(r, Output) and r.continue_ is False]
        if halts:
            assert merged.continue_ is False
            reasons = [r.stop_reason for r in halts if r.stop_reason is not None]
            assert merged.stop_reason == (reasons[0] if reasons else None)


@given(data=st.data(), event=st.sampled_from(DECISION_EVENTS + BLOCK_EVENTS))
def test_merged_decision_does_not_depend_on_order(data: Any, event: str) -> None:
    results = data.draw(results_for(event), label="results")
    shuffled = data.draw(st.permutations(results), label="shuffled")
    for dialect in ("claude", "runbear"):
        first = merge(event, results, dialect=dialect).decision
        assert merge(event, shuffled, dialect=dialect).decision == first


@given(data=st.data(), event=st.sampled_from(DECISION_EVENTS + BLOCK_EVENTS))
def test_merged_answer_is_one_the_event_carries(data: Any, event: str) -> None:
    """What a HookApp sends for several handlers: merging outputs the event carries must not
    make one it cannot (rendering it would fail in the server, after every handler ran)."""
    results = data.draw(results_for(event), label="results")
    for out in results:
        if isinstance(out, Output):
            out.check(event)
    rendered = merge(event, results).to_output().render(event)
    assert isinstance(rendered, dict)


@given(reason=any_text.filter(bool), text=any_text)
def test_deny_beats_everything_at_any_position(reason: str, text: str) -> None:
    for position in range(3):
        results: list[Any] = [allow(text or None), ask(), allow(updated_input={"k": text})]
        results.insert(position, deny(reason))
        merged = merge("PreToolUse", results)
        assert (merged.decision, merged.reason, merged.updated_input) == ("deny", reason, None)
