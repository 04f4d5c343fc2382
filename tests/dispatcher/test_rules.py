"""Matchers, concurrency, timeouts, failClosed, merging and the thread rules of 000_*/001_*,
through the dispatcher against a real HTTPS server on 127.0.0.1 (trustme CA)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from handler_kit.core.merge import RUNBEAR_FAIL_CLOSED_NOTICE
from handler_kit.core.outputs import TRUNCATION_MARKER
from handler_kit.dispatcher import Thread
from handler_kit.dispatcher import core as core_module
from tests.support.dispatch import ScriptServer, block, context, document, http, permission

PRE = {
    "hook_event_name": "PreToolUse",
    "thread_id": "t1",
    "turn_id": "1.1",
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "4821", "amount": 640},
}
POST = {**PRE, "hook_event_name": "PostToolUse", "tool_response": {"ok": True}}
PROMPT = {"hook_event_name": "UserPromptSubmit", "thread_id": "t1", "turn_id": "1.1"}
START = {"hook_event_name": "SessionStart", "thread_id": "t1"}
STOP = {"hook_event_name": "Stop", "thread_id": "t1", "turn_id": "1.1"}


def groups(event: str, *groups: tuple[str | None, list[dict[str, Any]]]) -> dict[str, Any]:
    """A document with several matcher groups on one event."""
    built = []
    for matcher, handlers in groups:
        group: dict[str, Any] = {"hooks": handlers}
        if matcher is not None:
            group["matcher"] = matcher
        built.append(group)
    return {"hooks": {event: built}}


# -- matchers ---------------------------------------------------------------------------------


def test_session_start_matchers_match_startup(scripted: ScriptServer, dispatcher_for) -> None:
    matchers = ["startup", "resume", "*", "", "start", "^start", "clear|startup"]
    data = groups(
        "SessionStart",
        *(
            (m, [http(scripted.url(f"m{i}", body=context("SessionStart", m or "empty")))])
            for i, m in enumerate(matchers)
        ),
    )
    outcome = dispatcher_for(data).dispatch_sync(START)
    assert outcome.statuses == ["ok", "skipped", "ok", "ok", "skipped", "ok", "ok"]
    assert outcome.additional_context == ["startup", "*", "empty", "^start", "clear|startup"]


def test_user_prompt_submit_and_stop_ignore_matchers(scripted, dispatcher_for) -> None:
    for event, base in (("UserPromptSubmit", PROMPT), ("Stop", STOP)):
        data = groups(
            event, ("never_matches", [http(scripted.url("h"))]), ("[", [http(scripted.url("h"))])
        )
        assert dispatcher_for(data).dispatch_sync(base).statuses == ["ok", "ok"]


def test_tool_event_matchers_apply_to_tool_name(scripted, dispatcher_for) -> None:
    matchers = [
        "issue_refund|delete_record",  # exact-name list
        "refund",  # exact name: not a substring
        "refund.*",  # unanchored regular expression
        "^issue_",
        "delete_record",
        None,  # omitted: everything
        "lookup, issue_refund",  # commas separate names too
    ]
    for event, base in (("PreToolUse", PRE), ("PostToolUse", POST)):
        data = groups(event, *((m, [http(scripted.url("h"))]) for m in matchers))
        outcome = dispatcher_for(data).dispatch_sync({**base, "tool_name": "issue_refund_v2"})
        assert outcome.statuses == ["skipped", "skipped", "ok", "ok", "skipped", "ok", "skipped"]
        outcome = dispatcher_for(data).dispatch_sync(base)
        assert outcome.statuses == ["ok", "skipped", "ok", "ok", "skipped", "ok", "ok"], event


# -- running handlers -------------------------------------------------------------------------


def test_handlers_run_concurrently_at_most_4_at_a_time_each_to_completion(
    scripted, dispatcher_for, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 8 handlers: 6 answer after 1 s, 2 never answer within their 1 s timeout. Four at a time
    # means two waves of >= 1 s each; the dispatcher's own gauge shows exactly 4 in flight.
    gauge = {"now": 0, "max": 0}
    real_call_http = core_module.call_http

    async def counting_call_http(*args: Any, **kwargs: Any) -> Any:
        gauge["now"] += 1
        gauge["max"] = max(gauge["max"], gauge["now"])
        try:
            return await real_call_http(*args, **kwargs)
        finally:
            gauge["now"] -= 1

    monkeypatch.setattr(core_module, "call_http", counting_call_http)
    slow = {1, 5}
    handlers = [
        http(scripted.url(f"h{i}", sleep=5), timeout=1)
        if i in slow
        else http(scripted.url(f"h{i}", sleep=1, body=permission("allow", f"ok {i}")))
        for i in range(8)
    ]
    data = groups("PreToolUse", (None, handlers[:3]), ("issue_refund", handlers[3:]))
    started = time.perf_counter()
    outcome = dispatcher_for(data).dispatch_sync(PRE)
    elapsed = time.perf_counter() - started

    assert [h.index for h in outcome.handlers] == list(range(8))  # document order, across groups
    assert outcome.statuses == ["ok", "timeout", "ok", "ok", "ok", "timeout", "ok", "ok"]
    assert gauge["max"] == 4
    assert elapsed >= 1.99  # two waves of four (unbounded concurrency would take ~1 s)
    assert len(scripted.requests) == 8  # every handler was called
    assert outcome.decision == "allow" and outcome.reason == "ok 0"
    for report in outcome.handlers:
        assert report.duration_ms >= 990  # every one ran to completion or to its timeout


def test_default_timeouts_are_3s_and_5s_on_session_start(scripted, dispatcher_for) -> None:
    prompt = dispatcher_for(
        document("UserPromptSubmit", http(scripted.url("p", sleep=4), timeout=None))
    )
    start = dispatcher_for(
        document(
            "SessionStart",
            http(
                scripted.url("s", sleep=3.2, body=context("SessionStart", "late but in time")),
                timeout=None,
            ),
        )
    )

    async def both() -> list[Any]:
        async with prompt, start:
            return await asyncio.gather(prompt.dispatch(PROMPT), start.dispatch(START))

    prompt_outcome, start_outcome = asyncio.run(both())
    assert prompt_outcome.statuses == ["timeout"]
    assert prompt_outcome.handlers[0].duration_ms >= 2990
    assert prompt_outcome.handlers[0].error == "no answer within 3 s"
    assert start_outcome.statuses == ["ok"]
    assert start_outcome.additional_context == ["late but in time"]


def test_handlers_fail_open_by_default(scripted, dispatcher_for) -> None:
    data = document(
        "UserPromptSubmit",
        http(scripted.url("down", status=500)),
        http(scripted.url("bad", raw="not json")),
        http(scripted.url("ctx", body=context("UserPromptSubmit", "still here"))),
    )
    outcome = dispatcher_for(data).dispatch_sync(PROMPT)
    assert outcome.statuses == ["failed", "failed", "ok"]
    assert outcome.decision is None
    assert outcome.additional_context == ["still here"]
    pre = document("PreToolUse", http(scripted.url("down", status=502)))
    assert dispatcher_for(pre).dispatch_sync(PRE).decision is None  # the call runs


def test_session_start_post_tool_use_and_stop_always_fail_open(scripted, dispatcher_for) -> None:
    cases = (("SessionStart", START), ("PostToolUse", POST), ("Stop", STOP))
    dispatchers = [
        dispatcher_for(
            document(
                event,
                http(scripted.url("down", status=500)),
                http(scripted.url("late", sleep=5), timeout=1),
                http(scripted.url("ctx", body=context(event, "kept"))),
            )
        )
        for event, _ in cases
    ]

    async def all_three() -> list[Any]:  # concurrently: one 1 s timeout for the three
        outcomes = await asyncio.gather(
            *(d.dispatch(base) for d, (_, base) in zip(dispatchers, cases, strict=True))
        )
        for dispatcher in dispatchers:
            await dispatcher.aclose()
        return outcomes

    for (event, _), outcome in zip(cases, asyncio.run(all_three()), strict=True):
        assert outcome.statuses == ["failed", "timeout", "ok"], event
        assert outcome.decision is None, event
        assert outcome.additional_context == ([] if event == "Stop" else ["kept"]), event


# -- failClosed -------------------------------------------------------------------------------


def test_failclosed_failure_counts_as_deny_at_its_own_position(scripted, dispatcher_for) -> None:
    explicit = http(
        scripted.url("deny", body=permission("deny", "Refunds over $500 need a human approver."))
    )
    failing = http(scripted.url("down", status=503), failClosed=True)
    # After an explicit deny: the earlier handler's reason is kept over the generic notice.
    outcome = dispatcher_for(document("PreToolUse", explicit, failing)).dispatch_sync(PRE)
    assert outcome.statuses == ["ok", "failed"]
    assert outcome.decision == "deny"
    assert outcome.reason == "Refunds over $500 need a human approver."
    # Before an explicit deny: the failure is the first deny, with the generic notice.
    outcome = dispatcher_for(document("PreToolUse", failing, explicit)).dispatch_sync(PRE)
    assert outcome.decision == "deny"
    assert outcome.reason == RUNBEAR_FAIL_CLOSED_NOTICE


def test_failclosed_failure_denies_over_an_allow_and_drops_updated_input(
    scripted, dispatcher_for
) -> None:
    rewrite = http(
        scripted.url("rewrite", body=permission("allow", "fine", updatedInput={"amount": 1}))
    )
    late = http(scripted.url("late", sleep=5), timeout=1, failClosed=True)  # a timeout fails too
    outcome = dispatcher_for(document("PreToolUse", rewrite, late)).dispatch_sync(PRE)
    assert outcome.statuses == ["ok", "timeout"]
    assert outcome.decision == "deny"
    assert outcome.reason == RUNBEAR_FAIL_CLOSED_NOTICE
    assert outcome.updated_input is None


def test_failclosed_failure_on_user_prompt_submit_blocks_with_the_generic_notice(
    scripted, dispatcher_for
) -> None:
    data = document(
        "UserPromptSubmit",
        http(scripted.url("ctx", body=context("UserPromptSubmit", "background"))),
        http(scripted.url("bad", raw="<html>"), failClosed=True),
    )
    outcome = dispatcher_for(data).dispatch_sync(PROMPT)
    assert outcome.decision == "block"
    assert outcome.reason == RUNBEAR_FAIL_CLOSED_NOTICE
    assert "policy check configured by your organization" in outcome.reason


def test_failclosed_handler_that_succeeds_changes_nothing(scripted, dispatcher_for) -> None:
    data = document("PreToolUse", http(scripted.url("quiet"), failClosed=True))
    outcome = dispatcher_for(data).dispatch_sync(PRE)
    assert outcome.statuses == ["ok"] and outcome.decision is None


# -- merging ----------------------------------------------------------------------------------


def test_every_additional_context_is_kept_in_document_order_across_groups(
    scripted, dispatcher_for
) -> None:
    # The first handler answers last: the order is the document's, not completion order.
    data = groups(
        "UserPromptSubmit",
        (
            None,
            [
                http(scripted.url("one", sleep=0.5, body=context("UserPromptSubmit", "one"))),
                http(scripted.url("two", body=context("UserPromptSubmit", "two"))),
            ],
        ),
        (None, [http(scripted.url("three", body=context("UserPromptSubmit", "three")))]),
    )
    outcome = dispatcher_for(data).dispatch_sync(PROMPT)
    assert outcome.additional_context == ["one", "two", "three"]


def test_an_empty_string_counts_as_no_context(scripted, dispatcher_for) -> None:
    data = document(
        "PostToolUse",
        http(scripted.url("empty", body=context("PostToolUse", ""))),
        http(scripted.url("ctx", body=context("PostToolUse", "Order 4821 refunded."))),
    )
    outcome = dispatcher_for(data).dispatch_sync(POST)
    assert outcome.additional_context == ["Order 4821 refunded."]


def test_context_is_read_on_session_start_user_prompt_submit_and_post_tool_use_only(
    scripted, dispatcher_for
) -> None:
    for event, base, injected in (
        ("SessionStart", START, True),
        ("UserPromptSubmit", PROMPT, True),
        ("PostToolUse", POST, True),
        ("PreToolUse", PRE, False),
        ("Stop", STOP, False),
    ):
        data = document(event, http(scripted.url("ctx", body=context(event, f"for {event}"))))
        outcome = dispatcher_for(data).dispatch_sync(base)
        assert outcome.statuses == ["ok"]
        assert outcome.additional_context == ([f"for {event}"] if injected else []), event


def test_a_single_block_blocks_with_the_first_blocking_reason(scripted, dispatcher_for) -> None:
    for event, base in (("UserPromptSubmit", PROMPT), ("PostToolUse", POST), ("Stop", STOP)):
        data = document(
            event,
            http(scripted.url("none")),
            http(scripted.url("first", sleep=0.3, body=block("first reason"))),
            http(scripted.url("second", body=block("second reason"))),
        )
        outcome = dispatcher_for(data).dispatch_sync(base)
        assert outcome.decision == "block", event
        assert outcome.reason == "first reason", event


def test_post_tool_use_block_reason_is_fed_back_next_to_context(scripted, dispatcher_for) -> None:
    answer = {
        **block("Tell the user the refund needs a receipt."),
        **context("PostToolUse", "Refunded."),
    }
    outcome = dispatcher_for(
        document("PostToolUse", http(scripted.url("fb", body=answer)))
    ).dispatch_sync(POST)
    assert outcome.decision == "block"
    assert outcome.reason == "Tell the user the refund needs a receipt."
    assert outcome.additional_context == ["Refunded."]


def test_block_on_session_start_is_ignored(scripted, dispatcher_for) -> None:
    answer = {**block("no"), **context("SessionStart", "kept")}
    outcome = dispatcher_for(
        document("SessionStart", http(scripted.url("b", body=answer)))
    ).dispatch_sync(START)
    assert outcome.decision is None and outcome.reason is None
    assert outcome.additional_context == ["kept"]


def test_strictest_permission_wins_deny_over_ask_over_allow(scripted, dispatcher_for) -> None:
    def answers(*pairs: tuple[str, str]) -> dict[str, Any]:
        return document(
            "PreToolUse",
            *(http(scripted.url(f"p{i}", body=permission(d, r))) for i, (d, r) in enumerate(pairs)),
        )

    outcome = dispatcher_for(
        answers(("allow", "a"), ("ask", "b"), ("deny", "c"), ("deny", "d"))
    ).dispatch_sync(PRE)
    assert (outcome.decision, outcome.reason) == ("deny", "c")
    outcome = dispatcher_for(answers(("ask", "b"), ("deny", "c"))).dispatch_sync(PRE)
    assert (outcome.decision, outcome.reason) == ("deny", "c")  # deny over ask
    outcome = dispatcher_for(answers(("allow", "a"), ("allow", "a2"))).dispatch_sync(PRE)
    assert (outcome.decision, outcome.reason) == ("allow", "a")


def test_ask_is_treated_as_deny_with_its_reason(scripted, dispatcher_for) -> None:
    data = document(
        "PreToolUse",
        http(scripted.url("allow", body=permission("allow", "fine"))),
        http(
            scripted.url("ask", body=permission("ask", "Please confirm the refund with the user."))
        ),
    )
    outcome = dispatcher_for(data).dispatch_sync(PRE)
    assert outcome.decision == "deny"
    assert outcome.reason == "Please confirm the refund with the user."


def test_defer_is_ignored(scripted, dispatcher_for) -> None:
    outcome = dispatcher_for(
        document("PreToolUse", http(scripted.url("d", body=permission("defer"))))
    ).dispatch_sync(PRE)
    assert outcome.statuses == ["ok"] and outcome.decision is None


def test_top_level_block_on_pre_tool_use_is_deny_and_approve_is_allow(
    scripted, dispatcher_for
) -> None:
    outcome = dispatcher_for(
        document(
            "PreToolUse",
            http(scripted.url("old", body={"decision": "block", "reason": "legacy no"})),
        )
    ).dispatch_sync(PRE)
    assert (outcome.decision, outcome.reason) == ("deny", "legacy no")
    outcome = dispatcher_for(
        document(
            "PreToolUse",
            http(scripted.url("old", body={"decision": "approve", "reason": "legacy yes"})),
        )
    ).dispatch_sync(PRE)
    assert (outcome.decision, outcome.reason) == ("allow", "legacy yes")


def test_updated_input_comes_from_the_last_handler_that_set_one(scripted, dispatcher_for) -> None:
    data = document(
        "PreToolUse",
        http(scripted.url("first", body=permission("allow", None, updatedInput={"amount": 1}))),
        http(scripted.url("none", body=permission("allow"))),
        # Last in document order though it answers first.
        http(scripted.url("last", body=permission("allow", None, updatedInput={"amount": 2}))),
        http(scripted.url("ctx", sleep=0.3, body={})),
    )
    outcome = dispatcher_for(data).dispatch_sync(PRE)
    assert outcome.decision == "allow"
    assert outcome.updated_input == {"amount": 2}


def test_updated_input_is_dropped_when_the_call_is_denied(scripted, dispatcher_for) -> None:
    data = document(
        "PreToolUse",
        http(scripted.url("rewrite", body=permission("allow", None, updatedInput={"amount": 1}))),
        http(scripted.url("deny", body=permission("deny", "no"))),
    )
    outcome = dispatcher_for(data).dispatch_sync(PRE)
    assert (outcome.decision, outcome.updated_input) == ("deny", None)
    asked = document(
        "PreToolUse",
        http(scripted.url("ask", body=permission("ask", "sure?", updatedInput={"a": 1}))),
    )
    assert dispatcher_for(asked).dispatch_sync(PRE).updated_input is None


def test_everything_else_in_the_output_is_accepted_and_ignored(scripted, dispatcher_for) -> None:
    answer = {
        "continue": False,
        "stopReason": "halt",
        "suppressOutput": True,
        "systemMessage": "hello",
        "somethingNew": {"x": 1},
        **context("UserPromptSubmit", "ctx"),
    }
    outcome = dispatcher_for(
        document("UserPromptSubmit", http(scripted.url("cc", body=answer)))
    ).dispatch_sync(PROMPT)
    assert outcome.statuses == ["ok"]
    assert (outcome.decision, outcome.additional_context) == (None, ["ctx"])


# Fields Runbear accepts and ignores, each with a type Claude Code would refuse.
ILL_TYPED_IGNORED = {
    "suppressOutput": "yes",
    "systemMessage": 5,
    "continue": "no",
    "stopReason": ["halt"],
    "somethingNew": None,
}


def test_a_deny_beside_an_ill_typed_field_runbear_ignores_is_read(scripted, dispatcher_for) -> None:
    answers = [
        {**permission("deny", f"denied beside {key}"), key: value}
        for key, value in ILL_TYPED_IGNORED.items()
    ]
    # Inside hookSpecificOutput too: context is not read on PreToolUse, and unknown keys never.
    answers.append(permission("deny", "denied beside context", additionalContext=5))
    answers.append(permission("deny", "denied beside a new key", sessionTitle=["x"]))
    handlers = [http(scripted.url(f"a{i}", body=answer)) for i, answer in enumerate(answers)]
    outcome = dispatcher_for(document("PreToolUse", *handlers)).dispatch_sync(PRE)
    assert outcome.statuses == ["ok"] * len(answers), [h.error for h in outcome.handlers]
    assert [h.output.decision for h in outcome.handlers if h.output] == ["deny"] * len(answers)
    assert (outcome.decision, outcome.reason) == ("deny", "denied beside suppressOutput")


def test_a_block_beside_ill_typed_fields_runbear_ignores_is_read(scripted, dispatcher_for) -> None:
    for event, base in (("UserPromptSubmit", PROMPT), ("PostToolUse", POST), ("Stop", STOP)):
        answer = {
            **block("blocked"),
            **ILL_TYPED_IGNORED,
            # permissionDecision and updatedInput are read on PreToolUse only
            "hookSpecificOutput": {"hookEventName": event, "permissionDecision": 5},
        }
        if event == "Stop":  # no context is read on Stop
            answer["hookSpecificOutput"]["additionalContext"] = {"not": "text"}
        data = document(event, http(scripted.url("b", body=answer)))
        outcome = dispatcher_for(data).dispatch_sync({**base, "turn_id": event})
        assert outcome.statuses == ["ok"], (event, outcome.handlers[0].error)
        assert (outcome.decision, outcome.reason) == ("block", "blocked"), event


def test_a_field_runbear_reads_with_the_wrong_type_is_a_failure(scripted, dispatcher_for) -> None:
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("PreToolUse", permission(5), "permissionDecision"),
        ("PreToolUse", permission("deny", 5), "permissionDecisionReason"),
        ("PreToolUse", permission("allow", None, updatedInput="x"), "updatedInput"),
        ("PreToolUse", {"decision": 5}, "decision"),
        ("UserPromptSubmit", {"decision": "block", "reason": 5}, "reason"),
        ("UserPromptSubmit", context("UserPromptSubmit", 5), "additionalContext"),
        ("PostToolUse", {"hookSpecificOutput": "context"}, "hookSpecificOutput"),
    ]
    for event, answer, field in cases:
        base = {"PreToolUse": PRE, "UserPromptSubmit": PROMPT, "PostToolUse": POST}[event]
        data = document(event, http(scripted.url("bad", body=answer)))
        outcome = dispatcher_for(data).dispatch_sync(base)
        assert outcome.statuses == ["failed"], (event, answer)
        assert field in outcome.handlers[0].error, (field, outcome.handlers[0].error)


def test_a_context_string_over_10000_characters_is_truncated_with_a_marker(
    scripted, dispatcher_for
) -> None:
    data = document(
        "UserPromptSubmit",
        http(scripted.url("long", context_length=25_000)),
        http(scripted.url("exact", context_length=10_000)),
    )
    outcome = dispatcher_for(data).dispatch_sync(PROMPT)
    long, exact = outcome.additional_context
    assert len(long) == 10_000 and long.endswith(TRUNCATION_MARKER)
    assert exact == "x" * 10_000  # at the cap: untouched


# -- thread rules -----------------------------------------------------------------------------


def test_user_prompt_submit_context_injected_earlier_in_the_thread_is_not_injected_again(
    scripted, dispatcher_for
) -> None:
    data = document(
        "UserPromptSubmit",
        http(
            scripted.url(
                "plan", body=context("UserPromptSubmit", "Dana is on the Enterprise plan.")
            )
        ),
        http(scripted.url("order", body=context("UserPromptSubmit", "Order 4821 shipped."))),
    )
    dispatcher = dispatcher_for(data)
    thread = Thread()
    first = dispatcher.dispatch_sync(PROMPT, thread)
    assert first.additional_context == ["Dana is on the Enterprise plan.", "Order 4821 shipped."]
    again = dispatcher.dispatch_sync({**PROMPT, "turn_id": "1.2"}, thread)
    assert again.statuses == ["ok", "ok"]  # the handlers still run
    assert again.additional_context == []
    assert thread.injected_contexts == first.additional_context
    other = dispatcher.dispatch_sync(PROMPT, Thread())  # another thread: injected again
    assert len(other.additional_context) == 2


def test_session_start_runs_once_per_thread(scripted, dispatcher_for) -> None:
    data = document("SessionStart", http(scripted.url("s", body=context("SessionStart", "policy"))))
    dispatcher = dispatcher_for(data)
    first = dispatcher.dispatch_sync(START)
    assert first.additional_context == ["policy"]
    second = dispatcher.dispatch_sync(START)
    assert second.statuses == ["skipped"] and second.additional_context == []
    assert len(scripted.named("s")) == 1
    assert dispatcher.thread_for(START).session_context == ["policy"]
    other = dispatcher.dispatch_sync({**START, "thread_id": "t2"})
    assert other.additional_context == ["policy"]


def test_stop_block_is_honoured_once_per_turn_with_stop_hook_active_on_the_continuation(
    scripted, dispatcher_for
) -> None:
    data = document("Stop", http(scripted.url("review", body=block("Cite the ticket number."))))
    dispatcher = dispatcher_for(data)
    first = dispatcher.dispatch_sync({**STOP, "last_assistant_message": "Done."})
    assert (first.decision, first.reason) == ("block", "Cite the ticket number.")
    assert first.continuation == "Cite the ticket number."
    # The continuation of the same turn: stop_hook_active is set, a further block is ignored.
    second = dispatcher.dispatch_sync({**STOP, "last_assistant_message": "Still done."})
    assert second.statuses == ["ok"]
    assert (second.decision, second.continuation) == (None, None)
    third = dispatcher.dispatch_sync(STOP)
    assert third.decision is None
    # A new turn may block again.
    fourth = dispatcher.dispatch_sync({**STOP, "turn_id": "1.2"})
    assert fourth.decision == "block"
    sent = [r.body["stop_hook_active"] for r in scripted.named("review")]
    assert sent == [False, True, True, False]


def test_stop_without_turn_ids_counts_turns_by_user_prompt(scripted, dispatcher_for) -> None:
    data = {
        "hooks": {
            "Stop": [{"hooks": [http(scripted.url("review", body=block("again")))]}],
            "UserPromptSubmit": [{"hooks": [http(scripted.url("p"))]}],
        }
    }
    dispatcher = dispatcher_for(data)
    thread = Thread()
    stop = {"hook_event_name": "Stop"}
    assert (
        dispatcher.dispatch_sync({"hook_event_name": "UserPromptSubmit"}, thread).decision is None
    )
    assert dispatcher.dispatch_sync(stop, thread).decision == "block"
    assert dispatcher.dispatch_sync(stop, thread).decision is None
    dispatcher.dispatch_sync({"hook_event_name": "UserPromptSubmit"}, thread)
    assert dispatcher.dispatch_sync(stop, thread).decision == "block"


# -- the outcome ------------------------------------------------------------------------------


def test_outcome_json_is_the_documented_line(scripted, dispatcher_for) -> None:
    data = document("PreToolUse", http(scripted.url("d", body=permission("deny", "no"))))
    line = dispatcher_for(data).dispatch_sync(PRE).to_json()
    assert list(line) == [
        "event",
        "decision",
        "reason",
        "additional_context",
        "updated_input",
        "handlers",
    ]
    (handler,) = line["handlers"]
    assert list(handler) == ["index", "type", "status", "duration_ms", "error"]
    assert (line["event"], line["decision"], handler["type"]) == ("PreToolUse", "deny", "http")
    assert isinstance(handler["duration_ms"], float)


def test_an_input_that_is_not_a_runbear_event_is_refused(dispatcher_for, scripted) -> None:
    dispatcher = dispatcher_for(document("Stop", http(scripted.url("x"))))
    with pytest.raises(ValueError, match="not one of Runbear's events"):
        dispatcher.dispatch_sync({"hook_event_name": "Notification"})
