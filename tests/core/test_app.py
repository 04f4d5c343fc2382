"""HookApp: registration, where handlers run, concurrency, merge order, loop guard,
deadlines, failure policies and decoration errors.

Concurrency is proven with barriers both handlers must reach (a sequential run would break
the barrier), never with wall-clock thresholds.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from handler_kit import (
    EVENT_MODELS,
    Answer,
    HookApp,
    Output,
    PreToolUse,
    allow,
    block,
    context,
    deny,
    parse_event,
    rewrite,
)
from handler_kit.core._decorators import HandlerDefinitionError
from handler_kit.core.vocabulary import DEFAULT_TIMEOUT, Status, server_deadline
from handler_kit.testing import running_server

PRE = {"hook_event_name": "PreToolUse", "tool_name": "issue_refund", "tool_input": {"amount": 1}}


def answer(hooks: HookApp, data: dict):
    return asyncio.run(hooks.answer(parse_event(data)))


# -- where handlers run --------------------------------------------------------------------


def test_sync_handlers_run_in_a_worker_thread_async_on_the_loop(hooks):
    seen: dict[str, int] = {}

    @hooks.pre_tool_use()
    def sync_handler(event):
        seen["sync"] = threading.get_ident()

    @hooks.pre_tool_use()
    async def async_handler(event):
        await asyncio.sleep(0)
        seen["async"] = threading.get_ident()

    async def main():
        seen["loop"] = threading.get_ident()
        return await hooks.answer(parse_event(PRE))

    result = asyncio.run(main())
    assert [i.status for i in result.invocations] == [Status.OK, Status.OK]
    assert seen["async"] == seen["loop"]
    assert seen["sync"] != seen["loop"]


def test_sync_handler_off_the_servers_loop_over_real_http(hooks):
    seen: dict[str, int] = {}

    @hooks.pre_tool_use()
    def sync_handler(event):
        seen["sync"] = threading.get_ident()
        return allow("sync")

    @hooks.pre_tool_use()
    async def async_handler(event):
        seen["loop"] = threading.get_ident()
        return allow()

    with running_server(hooks) as server, server.client() as client:
        result = client.send(PRE)
    assert result.decision == "allow" and result.reason == "sync"
    assert seen["sync"] != seen["loop"]
    assert seen["loop"] != threading.get_ident()  # the server's loop thread, not the test's


def test_sync_handlers_run_on_the_apps_threads_a_few_calls_of_each_at_a_time():
    """``calls_per_handler=1``: three calls of one handler at once take turns on the app's
    own threads (not asyncio's default executor), each answered, none waiting past its
    deadline; another handler is not held up by them."""
    hooks = HookApp("limits", threads=2, calls_per_handler=1)
    lock = threading.Lock()
    running = {"now": 0, "most": 0}
    names: set[str] = set()

    @hooks.post_tool_use(matcher="serial", timeout=10)
    def one_at_a_time(event):
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
            names.add(threading.current_thread().name)
        time.sleep(0.2)  # long enough for the three calls to overlap, were they allowed to
        with lock:
            running["now"] -= 1
        return context("done")

    @hooks.pre_tool_use()
    def other(event):
        names.add(threading.current_thread().name)
        return allow("other")

    post = {"hook_event_name": "PostToolUse", "tool_name": "serial"}
    with (
        running_server(hooks) as server,
        server.http(timeout=30) as http,
        ThreadPoolExecutor(3) as pool,
    ):
        calls = [pool.submit(http.post, "/hooks", json=post) for _ in range(3)]
        other_answer = http.post("/hooks", json=PRE)
        answers = [call.result() for call in calls]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert running["most"] == 1
    assert other_answer.json()["hookSpecificOutput"]["permissionDecisionReason"] == "other"
    assert names and all(name.startswith("handler-kit-handler") for name in names)


def test_a_forked_process_runs_sync_handlers_on_threads_of_its_own():
    """A process forked after the app's threads were made (a pre-forking server, a tool that
    forks per task) inherits the pool without its threads: its calls must still run, not wait
    until their deadline for a thread that is not there."""
    hooks = HookApp("forked", threads=1, calls_per_handler=1)

    @hooks.pre_tool_use(timeout=2)
    def gate(event):
        return deny(f"no refunds on {threading.current_thread().name}")

    expected = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no refunds on handler-kit-handler_0",
        }
    }
    assert answer(hooks, PRE).output == expected  # the pool's one thread made, now idle
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its answer down the pipe, then out without pytest's clean-up
        try:
            result = answer(hooks, PRE)
            os.write(write, json.dumps([result.invocations[0].status, result.output]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        reported = pipe.read()
    os.waitpid(pid, 0)
    assert json.loads(reported) == ["ok", expected]


def test_thread_limits_must_be_positive():
    for options in ({"threads": 0}, {"calls_per_handler": 0}):
        with pytest.raises(ValueError, match="must be at least 1"):
            HookApp("bad", **options)


# -- concurrency ---------------------------------------------------------------------------


def test_async_handlers_run_concurrently(hooks):
    arrived: list[str] = []
    both_here = asyncio.Event()

    def make(label):
        async def handler(event):
            arrived.append(label)
            if len(arrived) == 2:
                both_here.set()
            # a sequential run never gets here for the first handler: the barrier times out
            await asyncio.wait_for(both_here.wait(), timeout=8)
            return context(label)

        return handler

    hooks.user_prompt_submit(name="one", timeout=10)(make("one"))
    hooks.user_prompt_submit(name="two", timeout=10)(make("two"))
    result = answer(hooks, {"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert [i.status for i in result.invocations] == [Status.OK, Status.OK]
    assert result.output["hookSpecificOutput"]["additionalContext"] == "one\n\ntwo"


def test_sync_and_async_handlers_run_concurrently(hooks):
    barrier = threading.Barrier(3, timeout=8)

    @hooks.session_start(timeout=10)
    def first(event):
        barrier.wait()  # BrokenBarrierError unless all three are running at once
        return "first"

    @hooks.session_start(timeout=10)
    def second(event):
        barrier.wait()
        return "second"

    @hooks.session_start(timeout=10)
    async def third(event):
        await asyncio.to_thread(barrier.wait)
        return "third"

    result = answer(hooks, {"hook_event_name": "SessionStart", "source": "startup"})
    assert [i.status for i in result.invocations] == [Status.OK, Status.OK, Status.OK]
    assert result.output["hookSpecificOutput"]["additionalContext"] == ("first\n\nsecond\n\nthird")


def test_merge_follows_registration_order_not_completion_order(hooks):
    second_done = asyncio.Event()

    @hooks.pre_tool_use(timeout=10)
    async def first(event):
        await asyncio.wait_for(second_done.wait(), timeout=8)  # finishes last
        return deny("first reason")

    @hooks.pre_tool_use()
    async def second(event):
        second_done.set()
        return deny("second reason")

    @hooks.user_prompt_submit(name="ctx_first", timeout=10)
    async def ctx_first(event):
        await asyncio.wait_for(second_done.wait(), timeout=8)
        return "A"

    @hooks.user_prompt_submit(name="ctx_second")
    async def ctx_second(event):
        second_done.set()
        return "B"

    result = answer(hooks, PRE)
    assert result.output["hookSpecificOutput"]["permissionDecisionReason"] == "first reason"
    second_done.clear()
    result = answer(hooks, {"hook_event_name": "UserPromptSubmit"})
    assert result.output["hookSpecificOutput"]["additionalContext"] == "A\n\nB"


def test_several_handlers_merged_by_the_runtime_rules(hooks):

    @hooks.pre_tool_use()
    def allows(event):
        return allow("fine")

    @hooks.pre_tool_use()
    def rewrites(event):
        return rewrite({**event.tool_input, "requested_by": "U1"})

    result = answer(hooks, PRE)
    assert result.output == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "fine",
            "updatedInput": {"amount": 1, "requested_by": "U1"},
        }
    }

    @hooks.pre_tool_use()
    def denies(event):
        return deny("no")

    result = answer(hooks, PRE)
    assert result.output == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no",
        }
    }


# -- Stop loop guard -----------------------------------------------------------------------


@pytest.mark.parametrize("event_name", ["Stop", "SubagentStop"])
def test_stop_loop_guard(event_name, caplog, hooks):

    @hooks.on(event_name)
    def check_reply(event):
        return block("cite the ticket")

    fresh = {"hook_event_name": event_name, "stop_hook_active": False}
    assert answer(hooks, fresh).output == {"decision": "block", "reason": "cite the ticket"}

    caplog.set_level(logging.WARNING, logger="handler_kit")
    looping = {"hook_event_name": event_name, "stop_hook_active": True}
    result = answer(hooks, looping)
    assert result.output == {}
    assert [i.status for i in result.invocations] == [Status.LOOP_GUARDED]
    assert not result.failed
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "check_reply" in r.getMessage() and "stop_hook_active" in r.getMessage() for r in warnings
    )


def test_stop_loop_guard_holds_back_blocks_and_context_and_can_be_opted_out(hooks):

    @hooks.stop()
    def guarded(event):
        return block("guarded block")

    @hooks.stop()
    def adds_context(event):
        return "keep going"  # on Stop, context continues the turn as a block does

    looping = {"hook_event_name": "Stop", "stop_hook_active": True}
    assert answer(hooks, looping).output == {}
    first = {"hook_event_name": "Stop", "stop_hook_active": False}
    assert answer(hooks, first).output == {
        "decision": "block",
        "reason": "guarded block",
        "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "keep going"},
    }

    @hooks.stop(stop_loop_guard=False)
    def insists(event):
        return block("insisting")

    assert answer(hooks, looping).output == {"decision": "block", "reason": "insisting"}


# -- deadlines and failure policies --------------------------------------------------------


def test_deadline_is_a_little_under_the_timeout(hooks):
    for timeout in (0.5, 1, 2, 3, 5, 10):
        deadline = server_deadline(timeout)
        assert 0.85 * timeout <= deadline < timeout
        assert timeout - deadline <= 0.5

    @hooks.pre_tool_use()
    def default_pre(event): ...

    @hooks.session_start()
    def default_session(event): ...

    @hooks.pre_tool_use(timeout=1)
    def one_second(event): ...

    assert hooks.by_name["default_pre"].timeout == DEFAULT_TIMEOUT == 3.0
    assert hooks.by_name["default_session"].timeout == 5.0
    for handler in hooks.handlers:
        assert handler.deadline == server_deadline(handler.timeout) < handler.timeout
    assert hooks.by_name["one_second"].deadline == pytest.approx(0.9)


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_hanging_handler_is_cut_at_the_deadline(kind, hooks):
    release = threading.Event()

    if kind == "async":

        @hooks.pre_tool_use(timeout=0.5)
        async def hangs(event):
            await asyncio.sleep(30)

    else:

        @hooks.pre_tool_use(timeout=0.5)
        def hangs(event):
            release.wait(30)

    @hooks.pre_tool_use(timeout=0.5, fail_closed=True, name="gate")
    async def gate(event):
        await asyncio.sleep(30)

    async def main():
        try:
            return await hooks.answer(parse_event(PRE))
        finally:
            release.set()  # free the worker thread before asyncio.run waits for it

    started = time.monotonic()
    result = asyncio.run(main())
    elapsed = time.monotonic() - started
    assert elapsed >= server_deadline(0.5)
    assert [i.status for i in result.invocations] == [Status.TIMEOUT, Status.FAIL_CLOSED]
    out = result.output["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "'gate' did not answer in time" in out["permissionDecisionReason"]


def test_handler_failures_follow_the_policy(caplog, hooks):

    @hooks.pre_tool_use(fail_closed=True)
    def gate(event):
        raise RuntimeError("database down")

    @hooks.post_tool_use()
    def note(event):
        raise RuntimeError("boom")

    @hooks.session_start()
    def wrong_helper(event):
        return deny("SessionStart cannot deny")

    @hooks.user_prompt_submit(fail_closed=True)
    def wrong_helper_gate(event):
        return rewrite({"x": 1})

    result = answer(hooks, PRE)
    assert result.output["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "'gate' failed" in result.output["hookSpecificOutput"]["permissionDecisionReason"]
    assert "database down" not in str(result.output)

    result = answer(hooks, {"hook_event_name": "PostToolUse", "tool_name": "x"})
    assert result.output == {} and result.failed and not result.timed_out
    assert result.invocations[0].status == Status.ERROR
    assert "boom" in result.invocations[0].error

    caplog.set_level(logging.ERROR, logger="handler_kit")
    result = answer(hooks, {"hook_event_name": "SessionStart"})
    assert result.output == {} and result.failed
    assert "cannot carry" in result.invocations[0].error
    assert any("wrong_helper" in r.getMessage() for r in caplog.records)

    result = answer(hooks, {"hook_event_name": "UserPromptSubmit", "prompt": "x"})
    assert result.output["decision"] == "block"
    assert "'wrong_helper_gate' failed" in result.output["reason"]


def test_async_handler_paths(hooks):
    """Async handlers that return at once, suspend several times, or raise after a wait."""

    @hooks.user_prompt_submit()
    async def immediate(event):
        return "immediate"

    @hooks.user_prompt_submit()
    async def suspends(event):
        for _ in range(3):
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        return "suspended"

    @hooks.user_prompt_submit()
    async def raises_late(event):
        await asyncio.sleep(0)
        raise ValueError("late")

    result = answer(hooks, {"hook_event_name": "UserPromptSubmit"})
    assert [i.status for i in result.invocations] == [Status.OK, Status.OK, Status.ERROR]
    assert result.output["hookSpecificOutput"]["additionalContext"] == "immediate\n\nsuspended"
    only = asyncio.run(
        hooks.answer(
            parse_event({"hook_event_name": "UserPromptSubmit"}), [hooks.by_name["suspends"]]
        )
    )
    assert only.output["hookSpecificOutput"]["additionalContext"] == "suspended"


def test_answer_sync_and_return_value_forms(hooks):

    @hooks.pre_tool_use(matcher="dict_tool")
    def as_dict(event):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}

    @hooks.pre_tool_use(matcher="none_tool")
    def as_none(event):
        return None

    @hooks.pre_tool_use(matcher="bad_tool")
    def as_int(event):
        return 42

    def run(tool):
        return hooks.answer_sync(parse_event({"hook_event_name": "PreToolUse", "tool_name": tool}))

    assert run("dict_tool").output["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert run("none_tool").output == {} and not run("none_tool").failed
    assert run("bad_tool").failed
    assert run("other_tool").output == {} and run("other_tool").invocations == []


# -- decoration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event", ["SessionStart", "PostToolUse", "Stop", "SubagentStop", "Notification"]
)
def test_fail_closed_rejected_where_there_is_no_safe_decision(event, hooks):
    with pytest.raises(ValueError, match=f"fail_closed is not possible on {event}"):
        hooks.on(event, fail_closed=True)


@pytest.mark.parametrize(
    "event", ["PreToolUse", "UserPromptSubmit", "PermissionRequest", "UserPromptExpansion"]
)
def test_fail_closed_accepted_where_there_is_a_safe_decision(event, hooks):

    @hooks.on(event, fail_closed=True)
    def gate(event): ...

    assert hooks.by_name["gate"].fail_closed


def test_decorators_exist_for_every_event(hooks):
    for event in EVENT_MODELS:
        attr = "".join("_" + c.lower() if c.isupper() else c for c in event).lstrip("_")
        decorator = getattr(hooks, attr)

        @decorator(name=f"h_{attr}")
        def handler(event): ...

        assert hooks.by_name[f"h_{attr}"].event == event


def test_decoration_errors_are_clear(hooks):
    with pytest.raises(ValueError, match=r"unknown hook event 'PreToolUsee'.*PreToolUse"):
        hooks.on("PreToolUsee")

    @hooks.on("RunbearSpecialEvent", allow_unknown_event=True)
    def custom(event): ...

    assert hooks.by_name["custom"].event == "RunbearSpecialEvent"

    @hooks.pre_tool_use()
    def taken(event): ...

    with pytest.raises(ValueError, match="'taken' is already registered"):

        @hooks.stop(name="taken")
        def other(event): ...

    with pytest.raises(ValueError, match="'bad name!' must be letters"):

        @hooks.stop(name="bad name!")
        def bad(event): ...

    with pytest.raises(TypeError, match="'no_args': must take the event"):

        @hooks.stop()
        def no_args(): ...

    with pytest.raises(TypeError, match="'two_args': must take the event"):

        @hooks.stop()
        def two_args(event, extra): ...

    for timeout in (0, -1):
        with pytest.raises(ValueError, match="timeout must be a positive"):
            hooks.stop(timeout=timeout)

    with pytest.raises(ValueError, match=r"'gate_with_bad_matcher'.*invalid matcher"):

        @hooks.pre_tool_use(matcher="refund(")
        def gate_with_bad_matcher(event): ...

    assert [h.name for h in hooks.handlers] == ["custom", "taken"]


def test_decorator_returns_the_function_and_keeps_options(hooks):

    @hooks.pre_tool_use(matcher="a|b", timeout=7, fail_closed=True, name="gate-1")
    async def gate(event):
        """Deny things."""

    assert callable(gate) and gate.__name__ == "gate"
    handler = hooks.by_name["gate-1"]
    assert (handler.event, handler.matcher, handler.timeout, handler.fail_closed) == (
        "PreToolUse",
        "a|b",
        7.0,
        True,
    )
    assert handler.is_async and handler.description == "Deny things."


def _failed_answers_app() -> tuple[HookApp, list[tuple[str, dict[str, object]]]]:
    app = HookApp("t")

    @app.pre_tool_use(fail_closed=True)
    def gate(event: PreToolUse):
        return allow()

    @app.pre_tool_use()
    def loose(event: PreToolUse):
        return allow()

    seen: list[tuple[str, dict[str, object]]] = []
    return app.extended(observers=[lambda a, t, c: seen.append((t, c))]), seen


@pytest.mark.parametrize(
    ("method", "closed_reason", "error", "open_status"),
    [
        (
            "answer_timed_out",
            "did not answer in time",
            "handler did not answer in time",
            Status.TIMEOUT,
        ),
        (
            "answer_unrecorded",
            "could not have its decision recorded",
            "the answer's audit record could not be committed in time",
            Status.ERROR,
        ),
    ],
)
def test_answers_given_for_handlers_that_could_not_answer(
    method: str, closed_reason: str, error: str, open_status: Status
) -> None:
    """Each handler failed, answered by its policy, and observed with the caller's transport
    and context ({} for none)."""
    app, seen = _failed_answers_app()
    event = parse_event({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}})
    answer = getattr(app, method)
    closed = answer(event, [app.by_name["gate"]], transport="command", context={"k": 1})
    assert closed.output == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"Blocked by policy: the check 'gate' {closed_reason}, "
            "and it is configured to fail closed.",
        }
    }
    assert [(i.handler.name, i.status, i.error, i.output) for i in closed.invocations] == [
        ("gate", Status.FAIL_CLOSED, error, None)
    ]
    assert not closed.failed
    opened = answer(event, [app.by_name["loose"]])
    assert opened.output == {}
    assert [(i.handler.name, i.status, i.error) for i in opened.invocations] == [
        ("loose", open_status, error)
    ]
    assert opened.failed
    assert seen == [("command", {"k": 1}), ("direct", {})]


def test_a_duplicate_name_points_at_the_first_handler() -> None:
    app = HookApp("t")

    @app.pre_tool_use()
    def gate(event: PreToolUse):
        return allow()

    first = gate.__code__
    with pytest.raises(Exception) as duplicate:
        app.pre_tool_use(name="gate")(lambda event: allow())
    assert (
        f"a handler named 'gate' is already registered (at {first.co_filename}, line "
        f"{first.co_firstlineno}); pass name=... to tell them apart"
    ) in str(duplicate.value)
    # a callable object has no code of its own to point at (and a partial none either)
    app.pre_tool_use(name="called")(functools.partial(lambda event, x: allow(), x=1))
    with pytest.raises(Exception) as again:
        app.pre_tool_use(name="called")(lambda event: allow())
    assert "a handler named 'called' is already registered; pass name=" in str(again.value)


# -- an input that could not be read -------------------------------------------------------


def test_an_unreadable_input_gets_the_safe_decision_of_its_gates(caplog, hooks):
    @hooks.pre_tool_use(fail_closed=True)
    def gate_a(event):
        return allow()

    @hooks.pre_tool_use()
    def note(event):
        return None

    @hooks.pre_tool_use(fail_closed=True)
    def gate_b(event):
        return allow()

    seen = []
    app = hooks.extended(observers=[lambda answer, transport, ctx: seen.append((transport, ctx))])
    caplog.set_level(logging.WARNING, logger="handler_kit")
    known = {"session_id": "s1", "tool_use_id": "t1", "hook_event_name": "Stop", "cwd": 3, "x": "y"}
    result = app.answer_unreadable(
        "PreToolUse", app.by_event["PreToolUse"], "bad JSON", known=known
    )
    assert result is not None
    assert result.output == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Blocked by policy: the check 'gate_a' could not read "
            "the hook input, and it is configured to fail closed.",
        }
    }
    # the ids that could be read, the event's own name, nothing else
    assert (result.event.hook_event_name, result.event.session_id) == ("PreToolUse", "s1")
    assert (result.event.tool_use_id, result.event.cwd, result.event.tool_name) == (
        "t1",
        None,
        None,
    )
    assert [(i.handler.name, i.status, i.error) for i in result.invocations] == [
        ("gate_a", Status.FAIL_CLOSED, "the hook input could not be read (bad JSON)"),
        ("gate_b", Status.FAIL_CLOSED, "the hook input could not be read (bad JSON)"),
    ]
    assert seen == [("direct", {})]
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            logging.WARNING,
            "gate_a, gate_b could not read its PreToolUse input (bad JSON): "
            "answered with its safe decision",
        )
    ]


def test_an_unreadable_input_without_gates_is_left_to_the_transport(caplog, hooks):
    @hooks.pre_tool_use()
    def note(event):
        return None

    caplog.set_level(logging.DEBUG, logger="handler_kit")
    assert hooks.answer_unreadable("PreToolUse", [hooks.by_name["note"]], "bad JSON") is None
    assert caplog.records == []


def test_an_answer_a_transport_could_not_make_is_answered_by_each_handlers_policy(caplog, hooks):
    """``answer_not_made``: every handler given has failed (a bug of the transport's around
    ``answer``), the gate with its safe decision; the event as far as it is known, observed
    with the caller's transport and context (``direct`` when none is named)."""

    @hooks.pre_tool_use(fail_closed=True)
    def gate(event):
        return allow()

    @hooks.pre_tool_use()
    def note(event):
        return None

    seen = []
    app = hooks.extended(observers=[lambda answer, transport, ctx: seen.append((transport, ctx))])
    caplog.set_level(logging.DEBUG, logger="handler_kit")
    known = {"session_id": "s1", "tool_use_id": "t1"}
    named = app.answer_not_made("PreToolUse", app.by_event["PreToolUse"], known=known)
    read = app.answer_not_made(
        PreToolUse(hook_event_name="PreToolUse", session_id="s2", tool_name="Bash"),
        [app.by_name["note"]],
        transport="webhook",
        context={"principal": "token#0"},
    )
    assert named.output == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Blocked by policy: the check 'gate' failed, and it is "
            "configured to fail closed.",
        }
    }
    assert (named.event.session_id, named.event.tool_use_id, named.event.tool_name) == (
        "s1",
        "t1",
        None,
    )
    internal = "the answer could not be made: an internal error (see the server log)"
    assert [(i.handler.name, i.status, i.error) for i in named.invocations] == [
        ("gate", Status.FAIL_CLOSED, internal),
        ("note", Status.ERROR, internal),
    ]
    # no fail-closed handler: the answer has failed, and the transport reports its error
    assert read.failed
    assert (read.event.session_id, read.event.tool_name) == ("s2", "Bash")
    assert [(i.handler.name, i.status, i.error) for i in read.invocations] == [
        ("note", Status.ERROR, internal)
    ]
    assert seen == [("direct", {}), ("webhook", {"principal": "token#0"})]
    assert caplog.records == []  # the transport logs the bug it met


def test_wrappers_run_outermost_first_around_each_handler_with_its_event(hooks):
    @hooks.pre_tool_use()
    def refund_gate(event):
        return deny("no")

    seen = []

    def named(label):
        async def wrapper(handler, event, call):
            seen.append((label, handler.name, event.tool_name, event.tool_input))
            return await call()

        return wrapper

    app = hooks.extended(wrappers=[named("outer"), named("inner")])
    result = answer(app, PRE)
    assert result.output["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert seen == [
        ("outer", "refund_gate", "issue_refund", {"amount": 1}),
        ("inner", "refund_gate", "issue_refund", {"amount": 1}),
    ]


def _returning(value):
    """A wrapper that runs the handler, then answers ``value`` in its place."""

    async def wrapper(handler, event, call):
        await call()
        return value

    return wrapper


SESSION_START = {"hook_event_name": "SessionStart", "source": "startup"}


GATE_DENIED = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Blocked by policy: the check 'gate' failed, and it is "
        "configured to fail closed.",
    }
}


@pytest.mark.parametrize(
    ("data", "value", "status", "output", "error"),
    [
        # an output its event cannot carry: the handler's error, not the runtime's surprise
        (
            SESSION_START,
            deny("no"),
            Status.ERROR,
            {},
            "start returned an answer SessionStart cannot carry: SessionStart cannot carry a "
            "permission decision (deny)",
        ),
        # not an output at all, from a fail-closed gate: its failure policy answers
        (
            PRE,
            ["deny"],
            Status.FAIL_CLOSED,
            GATE_DENIED,
            "gate returned an answer PreToolUse cannot carry: a handler returns None, a str, a "
            "helper's output or a dict, not list",
        ),
        # what a handler may return, a wrapper may too: read as a handler's value is
        (
            SESSION_START,
            "Be brief.",
            Status.OK,
            {
                "hookSpecificOutput": {
                    "hookEventName": "SessionStart",
                    "additionalContext": "Be brief.",
                }
            },
            None,
        ),
        (
            PRE,
            {"hookSpecificOutput": {"permissionDecision": "ask"}},
            Status.OK,
            {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}},
            None,
        ),
    ],
    ids=["cannot-carry", "not-an-output", "text", "claude-code-json"],
)
def test_a_wrappers_answer_is_checked_as_a_handlers_return_value(
    caplog, hooks, data, value, status, output, error
):
    @hooks.session_start()
    def start(event):
        return None

    @hooks.pre_tool_use(fail_closed=True)
    def gate(event):
        return None

    caplog.set_level(logging.DEBUG, logger="handler_kit")
    result = answer(hooks.extended(wrappers=[_returning(value)]), data)
    [invocation] = result.invocations
    assert (result.output, invocation.status, invocation.error) == (output, status, error)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == (
        [(logging.ERROR, error)] if error else []
    )


def test_a_fail_closed_gate_whose_wrapper_answers_nonsense_denies_over_http(hooks):
    @hooks.pre_tool_use(fail_closed=True)
    def gate(event):
        return None

    with (
        running_server(hooks.extended(wrappers=[_returning(["deny"])])) as server,
        server.http(timeout=30) as http,
    ):
        response = http.post("/hooks/gate", json=PRE)
    assert (response.status_code, response.json()) == (200, GATE_DENIED)


def test_an_error_around_the_handlers_is_logged_and_answered_by_their_policy(caplog, hooks):
    """A committer that raises (a bug of handler-kit's would be the same): not the handler's
    failure, but its failure policy answers, and the observers see what is sent, with the
    caller's transport and context."""

    @hooks.pre_tool_use(fail_closed=True)
    def gate(event):
        return allow("fine")

    async def broken(answer, transport, context):
        raise RuntimeError("the committer broke")

    seen = []
    app = hooks.extended(
        observers=[lambda a, t, c: seen.append((a.output, t, c))], committers=[broken]
    )
    caplog.set_level(logging.DEBUG, logger="handler_kit")
    context = {"principal": "p"}
    result = asyncio.run(app.answer(parse_event(PRE), transport="webhook", context=context))
    assert result.output == GATE_DENIED
    assert [(i.handler.name, i.status, i.error) for i in result.invocations] == [
        (
            "gate",
            Status.FAIL_CLOSED,
            "the answer could not be made: an internal error (see the server log)",
        )
    ]
    # the answer first made, then the one sent instead (the audit trail keeps the latest)
    allowed = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "fine",
        }
    }
    assert seen == [(allowed, "webhook", context), (GATE_DENIED, "webhook", context)]
    assert all(c is context for _, _, c in seen)
    assert [(r.levelno, r.getMessage(), r.exc_info[0]) for r in caplog.records] == [
        (logging.ERROR, "the answer to PreToolUse could not be made", RuntimeError)
    ]


def test_an_event_no_handler_takes_is_no_opinion_committed_as_any_answer(caplog, hooks):
    @hooks.stop()
    def not_this_event(event):
        return block("never")

    committed = []

    async def commit(answer, transport, context):
        committed.append((answer.output, answer.invocations, transport))
        return answer

    caplog.set_level(logging.DEBUG, logger="handler_kit")
    result = asyncio.run(
        hooks.extended(committers=[commit]).answer(parse_event(PRE), transport="mcp")
    )
    assert (result.output, result.invocations) == ({}, [])
    assert committed == [({}, [], "mcp")]
    assert caplog.records == []


# -- decoration errors: the handler named, what is wrong said --------------------------------


def test_an_unknown_event_lists_the_known_ones(hooks):
    with pytest.raises(HandlerDefinitionError) as info:
        hooks.on("Nope", name="gate_x")
    assert info.value.handler == "gate_x"
    assert info.value.reason.startswith(
        "unknown hook event 'Nope'; known events: ConfigChange, CwdChanged, DirectoryAdded, "
    )
    assert info.value.reason.endswith(
        ", WorktreeCreate, WorktreeRemove (pass allow_unknown_event=True for a runtime's "
        "own events)"
    )


@pytest.mark.parametrize(
    ("event", "options", "reason"),
    [
        (
            "Notification",
            {"fail_closed": True},
            "fail_closed is not possible on Notification: only PreToolUse, PermissionRequest, "
            "UserPromptSubmit, UserPromptExpansion have a safe decision to fail to",
        ),
        (
            "PreToolUse",
            {"stop_loop_guard": False},
            "stop_loop_guard is not possible on PreToolUse: only Stop, SubagentStop have a stop "
            "loop to guard",
        ),
    ],
)
def test_an_option_the_event_cannot_take_is_refused(hooks, event, options, reason):
    with pytest.raises(HandlerDefinitionError) as info:
        hooks.on(event, name="gate_x", **options)
    assert (info.value.handler, info.value.reason) == ("gate_x", reason)


@pytest.mark.parametrize(
    ("func", "reason"),
    [
        (42, "is not callable"),
        (lambda a, b: None, "must take the event as its one argument: def gate_x(event): ..."),
    ],
)
def test_a_handler_that_cannot_take_the_event_is_refused(hooks, func, reason):
    with pytest.raises(HandlerDefinitionError) as info:
        hooks.on("Stop", name="gate_x")(func)
    assert (info.value.handler, info.value.reason) == ("gate_x", reason)


@pytest.mark.parametrize(
    ("event", "options", "reason"),
    [
        ("PreToolUse", {"timeout": 0}, "timeout must be a positive number of seconds, not 0"),
        (
            "Interrupt",
            {"timeout": 2.5},
            "timeout=2.5 is too long for Interrupt: the runtime waits at most 3 s, and a command "
            "hook is installed with a second more than the handler's timeout; use at most 2",
        ),
        (
            "Stop",
            {"matcher": "Bash"},
            "Stop has no matcher: the runtimes ignore a matcher there and run the handler on "
            "every Stop; remove matcher='Bash'",
        ),
    ],
)
def test_a_timeout_or_matcher_the_event_cannot_take_is_refused(hooks, event, options, reason):
    with pytest.raises(HandlerDefinitionError) as info:
        hooks.on(event, name="gate_y", **options)
    assert (info.value.handler, info.value.reason) == ("gate_y", reason)


def test_the_longest_timeout_an_event_allows_is_taken(hooks):
    hooks.on("Interrupt", name="gate_z", timeout=2)(lambda event: None)
    assert hooks.by_name["gate_z"].timeout == 2.0


def test_a_name_taken_says_where_the_first_handler_is(hooks):
    def first(event):
        return None

    hooks.on("Stop", name="gate_x")(first)
    with pytest.raises(HandlerDefinitionError) as info:
        hooks.on("Stop", name="gate_x")(lambda event: None)
    assert (info.value.handler, info.value.reason) == (
        "gate_x",
        f"a handler named 'gate_x' is already registered (at {__file__}, line "
        f"{first.__code__.co_firstlineno}); pass name=... to tell them apart",
    )


def test_a_handler_name_is_letters_digits_underscores_and_dashes(hooks):
    hooks.on("Stop", name="gate_x-1")(lambda event: None)
    assert "gate_x-1" in hooks.by_name
    for name in ("gate x", "__", "-"):
        with pytest.raises(HandlerDefinitionError) as info:
            hooks.on("Stop", name=name)(lambda event: None)
        assert (info.value.handler, info.value.reason) == (
            name,
            f"handler name {name!r} must be letters, digits, '_' or '-' (it is a URL path "
            "segment and an MCP tool name)",
        )


def test_a_handler_keeps_its_options_and_its_docstring(hooks):
    @hooks.on("PreToolUse", idempotent=True)
    def documented(event):
        """Refunds over $500 need a human."""

    hooks.on("Stop", name="plain")(lambda event: None)
    assert (hooks.by_name["documented"].idempotent, hooks.by_name["plain"].idempotent) == (
        True,
        False,
    )
    assert hooks.by_name["documented"].description == "Refunds over $500 need a human."
    assert hooks.by_name["plain"].description == ""


def test_a_new_app_has_its_defaults():
    app = HookApp(threads=1, calls_per_handler=1)  # one thread is a pool
    assert (app.name, app.description, app.config_errors) == ("handler-kit", "", ())
    assert HookApp("refunds", description="Refund gates").description == "Refund gates"


def test_a_keyboard_interrupt_out_of_a_handler_ends_a_direct_run(hooks):
    """Outside a server a Ctrl-C is the user's, wherever it is raised: it stops the run."""

    @hooks.pre_tool_use()
    async def stopper(event):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        answer(hooks, PRE)
    served = answer(hooks.extended(interrupt_fails=True), PRE)
    assert [(i.status, i.error) for i in served.invocations] == [
        (Status.ERROR, "KeyboardInterrupt: ")
    ]


# -- what the answer path checks, with the values that tell each check apart ----------------


@pytest.mark.parametrize(
    ("value", "error"),
    [
        # pydantic-core writes these as NaN and Infinity, which a runtime's JSON parser refuses
        ({"amount": math.nan}, "NaN and the infinities are not JSON"),
        ({"amount": -math.inf}, "NaN and the infinities are not JSON"),
        # a lone surrogate: pydantic-core cannot write it, the standard library reads the rest
        ({"note": "\ud800", "amount": math.nan}, "Out of range float values are not JSON"),
    ],
)
def test_an_answer_json_cannot_carry_is_the_handlers_failure(hooks, caplog, value, error):
    caplog.set_level(logging.ERROR, logger="handler_kit")

    @hooks.pre_tool_use()
    def note(event):
        return rewrite(value)

    result = answer(hooks, PRE)
    assert result.output == {}
    [invocation] = result.invocations
    assert invocation.status is Status.ERROR and invocation.output is None
    assert invocation.error.startswith(f"note returned a value JSON cannot carry: {error}")
    assert [r.getMessage() for r in caplog.records] == [invocation.error]

    @hooks.pre_tool_use(fail_closed=True)
    def gate(event):
        return rewrite(value)

    result = asyncio.run(hooks.answer(parse_event(PRE), [hooks.by_name["gate"]]))
    assert [i.status for i in result.invocations] == [Status.FAIL_CLOSED]
    assert result.output["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_nan_and_infinity_inside_a_string_are_sent(hooks):
    words = {"note": "NaN, Infinity and -Infinity are words here"}

    @hooks.pre_tool_use()
    def note(event):
        return rewrite({"note": words["note"]})

    @hooks.user_prompt_submit()
    def echo(event):
        return words["note"]

    result = answer(hooks, PRE)
    assert result.output["hookSpecificOutput"]["updatedInput"] == {"note": words["note"]}
    assert [i.status for i in result.invocations] == [Status.OK]
    result = answer(hooks, {"hook_event_name": "UserPromptSubmit", "prompt": "x"})
    assert result.output["hookSpecificOutput"]["additionalContext"] == words["note"]


def test_the_loop_guard_keeps_what_does_not_continue_the_turn_and_says_what_it_held(hooks, caplog):
    caplog.set_level(logging.WARNING, logger="handler_kit")

    @hooks.stop()
    def stops(event):
        return Output(
            decision="block",
            reason="again",
            continue_=False,
            stop_reason="the budget is spent",
            system_message="stopped by policy",
            suppress_output=True,
        )

    @hooks.subagent_stop()
    def reminds(event):
        return "one more thing"

    result = answer(hooks, {"hook_event_name": "Stop", "stop_hook_active": True})
    assert result.output == {
        "continue": False,
        "stopReason": "the budget is spent",
        "systemMessage": "stopped by policy",
        "suppressOutput": True,
    }
    assert [i.status for i in result.invocations] == [Status.OK]
    result = answer(hooks, {"hook_event_name": "SubagentStop", "stop_hook_active": True})
    assert result.output == {}
    [invocation] = result.invocations
    assert (invocation.status, invocation.output, invocation.error) == (
        Status.LOOP_GUARDED,
        None,
        None,
    )
    assert invocation.handler is hooks.by_name["reminds"]
    assert [r.getMessage() for r in caplog.records] == [
        "stops blocked a Stop while stop_hook_active was true: not sent, to avoid a loop",
        "reminds gave context on a SubagentStop while stop_hook_active was true: not sent, "
        "to avoid a loop",
    ]


class _Clock:
    """The answer path's clock (``time`` in handler_kit.core.app), standing still until a
    handler moves it: a latency or a lateness then has one exact value."""

    def __init__(self, now: float) -> None:
        self.now = now

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    from handler_kit.core import app as app_module

    fake = _Clock(1000.0)
    monkeypatch.setattr(app_module, "time", fake)
    return fake


def test_latency_is_counted_from_the_answers_start_in_milliseconds(hooks, clock):

    @hooks.pre_tool_use()
    def sync_gate(event):
        clock.now = 1000.25
        return rewrite({"amount": 2})

    @hooks.pre_tool_use()
    async def never_awaits(event):
        # its own clock move: whether it runs before or after the sync handler's thread moves
        # the clock is the scheduler's choice, not this test's
        clock.now = 1000.25
        return "noted"

    @hooks.stop()
    def reminds(event):
        clock.now = 1000.5
        return "keep going"

    result = answer(hooks, PRE)
    assert [(i.handler, i.status, i.error, i.latency_ms) for i in result.invocations] == [
        (hooks.by_name["sync_gate"], Status.OK, None, 250.0),
        (hooks.by_name["never_awaits"], Status.OK, None, 250.0),
    ]
    clock.now = 1000.0
    result = answer(hooks, {"hook_event_name": "Stop", "stop_hook_active": True})
    assert [(i.status, i.latency_ms) for i in result.invocations] == [(Status.LOOP_GUARDED, 500.0)]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_answer_at_its_deadline_is_on_time_one_after_it_is_late(hooks, clock, caplog, kind):
    caplog.set_level(logging.WARNING, logger="handler_kit")
    clock.now = 0.0  # elapsed is then exactly where the handler puts the clock

    if kind == "sync":

        @hooks.pre_tool_use(timeout=1)
        def answers(event):
            clock.now = hooks.by_name["answers"].deadline + late[0]
            return rewrite({"amount": 2})

    else:

        @hooks.pre_tool_use(timeout=1)
        async def answers(event):
            clock.now = hooks.by_name["answers"].deadline + late[0]
            return rewrite({"amount": 2})

    late = [0.0]
    result = answer(hooks, PRE)
    assert [i.status for i in result.invocations] == [Status.OK]
    assert result.output["hookSpecificOutput"]["updatedInput"] == {"amount": 2}
    assert caplog.records == []

    clock.now = 0.0
    late[0] = 1.0
    result = answer(hooks, PRE)
    assert result.output == {}
    assert [(i.status, i.error) for i in result.invocations] == [
        (Status.TIMEOUT, "handler did not answer in time")
    ]
    [record] = caplog.records
    if kind == "async":
        assert record.getMessage() == (
            "answers blocked the event loop for 1.9 s, through its 0.9 s deadline: its answer "
            "is not sent, its failure policy answers. An async handler must not block; make it "
            "a plain def, or run the blocking call with await asyncio.to_thread(...)"
        )
    else:
        assert record.getMessage().startswith("answers answered 1.9 s after the answer began")


def _does(what: str, clock: _Clock):
    """What a handler of the table below does once it runs: a quarter second passes on the
    answer path's clock, then it answers or raises."""
    clock.now = 1000.25
    if what == "raise":
        raise RuntimeError("database down")
    if what == "deny":
        return deny("no")
    if what == "allow":
        return allow()
    if what == "block":
        return block("not here")
    return "noted" if what == "context" else None


# (event, fail_closed, what the handler does, the answer, and the invocation's status, output
# fields and error, and what is logged): the same whichever way the handler runs
RUNS = [
    (
        "PreToolUse",
        False,
        "deny",
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "no",
            }
        },
        Status.OK,
        {"decision": "deny", "reason": "no"},
        None,
        [],
    ),
    (
        "PreToolUse",
        False,
        "allow",
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}},
        Status.OK,
        {"decision": "allow"},
        None,
        [],
    ),
    ("PreToolUse", False, "nothing", {}, Status.OK, {}, None, []),
    (
        "UserPromptSubmit",
        False,
        "context",
        {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "noted"}},
        Status.OK,
        {"context": "noted"},
        None,
        [],
    ),
    (
        "UserPromptSubmit",
        False,
        "block",
        {"decision": "block", "reason": "not here"},
        Status.OK,
        {"decision": "block", "reason": "not here"},
        None,
        [],
    ),
    (
        "PostToolUse",
        False,
        "raise",
        {},
        Status.ERROR,
        None,
        "RuntimeError: database down",
        [(logging.ERROR, "handler gate failed on PostToolUse")],
    ),
    (
        "PreToolUse",
        True,
        "raise",
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "Blocked by policy: the check 'gate' failed, and it "
                "is configured to fail closed.",
            }
        },
        Status.FAIL_CLOSED,
        None,
        "RuntimeError: database down",
        [(logging.ERROR, "handler gate failed on PreToolUse")],
    ),
]


@pytest.mark.parametrize("kind", ["await-free", "awaiting", "sync"])
@pytest.mark.parametrize(
    ("event", "fail_closed", "what", "expected", "status", "fields", "error", "logged"),
    RUNS,
    ids=[f"{event}-{what}{'-fail_closed' if closed else ''}" for event, closed, what, *_ in RUNS],
)
def test_each_run_of_a_handler_is_answered_timed_and_logged_whichever_way_it_runs(
    hooks, clock, caplog, kind, event, fail_closed, what, expected, status, fields, error, logged
):
    """An async handler that cannot suspend is awaited as it is, any other under a timer; a
    plain answer (a permission decision, no opinion) is sent without the checks a rewrite,
    context or block gets. Each way gives the same answer, the same invocation (its latency
    counted from the answer's start, in milliseconds) and logs the same failure."""
    caplog.set_level(logging.DEBUG, logger="handler_kit")
    if kind == "await-free":

        async def gate(event):
            return _does(what, clock)

    elif kind == "awaiting":

        async def gate(event):
            await asyncio.sleep(0)
            return _does(what, clock)

    else:

        def gate(event):
            return _does(what, clock)

    hooks.on(event, fail_closed=fail_closed)(gate)
    handler = hooks.by_name["gate"]
    assert handler.awaits_nothing is (kind == "await-free")
    result = answer(hooks, {"hook_event_name": event, "tool_name": "issue_refund"})
    assert result.output == expected
    [invocation] = result.invocations
    assert (invocation.handler, invocation.status, invocation.error, invocation.latency_ms) == (
        handler,
        status,
        error,
        250.0,
    )
    assert invocation.output == (None if fields is None else Output(**fields))
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == logged
    for record in caplog.records:  # the traceback is the handler's own
        assert record.exc_info is not None
        assert (type(record.exc_info[1]), record.exc_info[1].args) == (
            RuntimeError,
            ("database down",),
        )


def test_a_deadline_counts_from_the_answers_start_so_a_handler_started_late_has_less(
    hooks, clock, caplog
):
    """Two handlers of one event share the answer's start: when the first holds the event loop
    (an async handler that never awaits) past the second's deadline, the second is cut at its
    first await, its failure policy answers, and nothing is logged for it (it was not late: it
    never answered)."""
    caplog.set_level(logging.DEBUG, logger="handler_kit")
    reached: list[str] = []

    @hooks.user_prompt_submit(timeout=5)
    async def holds_the_loop(event):
        clock.now = 1001.0
        return "computed"

    @hooks.user_prompt_submit(timeout=1, fail_closed=True)
    async def gate(event):
        reached.append("started")
        await asyncio.sleep(0)
        reached.append("past its first await")
        return "fine"

    result = answer(hooks, {"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert [(i.handler.name, i.status, i.error, i.latency_ms) for i in result.invocations] == [
        ("holds_the_loop", Status.OK, None, 1000.0),
        ("gate", Status.FAIL_CLOSED, "handler did not answer in time", 1000.0),
    ]
    assert result.output == {
        "decision": "block",
        "reason": "Blocked by policy: the check 'gate' did not answer in time, and it is "
        "configured to fail closed.",
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "computed",
        },
    }
    assert reached == ["started"]
    assert caplog.records == []


def test_a_failing_observer_is_logged_and_the_answer_stands(hooks, caplog):
    caplog.set_level(logging.ERROR, logger="handler_kit")

    def broken(answer, transport, context):
        raise RuntimeError("observer down")

    app = hooks.extended(observers=[broken])

    @app.pre_tool_use()
    def gate(event):
        return deny("no")

    result = answer(app, PRE)
    assert result.output["hookSpecificOutput"]["permissionDecision"] == "deny"
    [record] = caplog.records
    assert record.getMessage() == f"observer {broken!r} failed"
    assert record.exc_info[1].args == ("observer down",)


def test_an_answer_is_observed_then_committed_with_one_context_and_the_last_commit_is_sent(
    hooks,
):
    """Observers see the answer first, then each committer in turn gets the answer the one
    before it gave back, with the caller's transport ("direct" for none) and one context: the
    caller's dict, or one new dict, so a committer finds what an observer left there."""
    seen: list[tuple[str, object, str, dict]] = []

    def observe(answer, transport, context):
        seen.append(("observer", answer.output, transport, dict(context)))
        context["observed"] = True

    def committer(label):
        async def commit(answer, transport, context):
            seen.append((label, answer.output, transport, dict(context)))
            return Answer(answer.event, {**answer.output, label: True}, answer.invocations)

        return commit

    app = hooks.extended(observers=[observe], committers=[committer("first"), committer("last")])

    @app.pre_tool_use()
    def gate(event):
        return deny("no")

    denied = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no",
        }
    }
    result = answer(app, PRE)
    assert result.output == {**denied, "first": True, "last": True}
    assert [i.handler.name for i in result.invocations] == ["gate"]
    assert seen == [
        ("observer", denied, "direct", {}),
        ("first", denied, "direct", {"observed": True}),
        ("last", {**denied, "first": True}, "direct", {"observed": True}),
    ]

    seen.clear()
    given = {"request": "r-1"}
    result = asyncio.run(app.answer(parse_event(PRE), transport="mcp", context=given))
    assert result.output == {**denied, "first": True, "last": True}
    assert seen == [
        ("observer", denied, "mcp", {"request": "r-1"}),
        ("first", denied, "mcp", {"request": "r-1", "observed": True}),
        ("last", {**denied, "first": True}, "mcp", {"request": "r-1", "observed": True}),
    ]
    assert given == {"request": "r-1", "observed": True}  # the caller's own dict


def test_a_sync_handler_sees_the_callers_context_variables(hooks):
    import contextvars

    request_id = contextvars.ContextVar("request_id", default="unset")

    @hooks.user_prompt_submit()
    def echo(event):
        return f"request {request_id.get()}"

    async def main():
        request_id.set("r-42")
        return await hooks.answer(parse_event({"hook_event_name": "UserPromptSubmit"}))

    result = asyncio.run(main())
    assert result.output["hookSpecificOutput"]["additionalContext"] == "request r-42"


# -- the per-handler slots, counted exactly ------------------------------------------------


def test_slots_given_back_are_counted_once_whoever_waited():
    from handler_kit.core.app import _Slots

    async def main():
        slots = _Slots(1)
        await slots.acquire()
        first = asyncio.create_task(slots.acquire())
        second = asyncio.create_task(slots.acquire())
        await asyncio.sleep(0)
        assert (slots.running, len(slots.waiting)) == (1, 2)
        # the second stops waiting: it leaves the queue, the first still waits its turn
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
        assert (slots.running, [w.cancelled() for _, w in slots.waiting]) == (1, [False])
        # the first is handed the slot and stops waiting in the same step: it passes it on
        slots.release()
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert (slots.running, len(slots.waiting)) == (0, 0)
        # taken and given back again: none held
        await slots.acquire()
        slots.release()
        assert slots.running == 0

    asyncio.run(main())


def test_a_slot_is_not_handed_to_a_waiter_whose_loop_is_closed():
    from handler_kit.core.app import _Slots

    slots = _Slots(1)
    asyncio.run(slots.acquire())
    gone = asyncio.new_event_loop()
    waiting = gone.create_task(slots.acquire())
    gone.run_until_complete(asyncio.sleep(0))
    assert len(slots.waiting) == 1 and not waiting.done()
    gone.close()
    slots.release()
    assert (slots.running, len(slots.waiting)) == (0, 0)
