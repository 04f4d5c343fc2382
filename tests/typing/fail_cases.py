"""Wrong uses of the typed API, each flagged by the type checkers (mypy and pyright, both
strict): the line after ``# expect mypy: CODE, ...`` and ``# expect pyright: RULE, ...``
comments gets exactly those error codes, and no other line gets any
(tests/typing/test_checkers.py). Codes, not messages: the wording changes from release to
release, the codes do not. A decorator that refuses its function leaves it untyped, which
strict mode reports as well (untyped-decorator, reportUntypedFunctionDecorator).

Never imported: several of these also fail at run time, which is the point of catching them
before.
"""

from __future__ import annotations

from handler_kit import HookApp, HookEvent, Output, PreToolUse, Stop, SubagentStop, deny

app = HookApp("typing-fail-cases")


# -- a handler of another event --------------------------------------------------------------


# expect mypy: type-var
# expect pyright: reportArgumentType, reportUntypedFunctionDecorator
@app.pre_tool_use
def stop_handler_as_gate(event: Stop) -> None: ...


# expect mypy: type-var
# expect pyright: reportArgumentType, reportUntypedFunctionDecorator
@app.pre_tool_use(matcher="Bash")
def stop_handler_as_gate_with_options(event: Stop) -> None: ...


# expect mypy: type-var
# expect pyright: reportArgumentType, reportUntypedFunctionDecorator
@app.stop
def narrower_event(event: SubagentStop) -> None:
    """A SubagentStop handler cannot take every Stop."""


# -- a return value no event takes ----------------------------------------------------------


# expect mypy: type-var
# expect pyright: reportArgumentType, reportUntypedFunctionDecorator
@app.pre_tool_use
def returns_int(event: PreToolUse) -> int:
    return 1


# expect mypy: type-var
# expect pyright: reportArgumentType, reportUntypedFunctionDecorator
@app.pre_tool_use(name="async_returns_int")
async def async_returns_int(event: PreToolUse) -> int:
    return 1


# expect mypy: type-var
# expect pyright: reportArgumentType, reportUntypedFunctionDecorator
@app.stop(timeout=2)
def returns_a_list(event: Stop) -> list[str]:
    return []


# expect mypy: type-var
# expect pyright: reportArgumentType, reportUntypedFunctionDecorator
@app.post_tool_use
def returns_int_sometimes(event: HookEvent) -> Output | int:
    return 0


# -- not a handler's signature ----------------------------------------------------------------


# expect mypy: type-var
# expect pyright: reportArgumentType, reportUntypedFunctionDecorator
@app.user_prompt_submit
def no_event() -> None: ...


# expect mypy: type-var
# expect pyright: reportArgumentType, reportUntypedFunctionDecorator
@app.user_prompt_submit()
def two_arguments(event: HookEvent, extra: str) -> None: ...


# -- an option misspelt, or one the event cannot use -----------------------------------------


# expect mypy: call-overload, untyped-decorator
# expect pyright: reportCallIssue, reportUntypedFunctionDecorator
@app.pre_tool_use(matchr="Bash")
def misspelt_option(event: PreToolUse) -> Output:
    return deny("no")


# expect mypy: call-overload, untyped-decorator
# expect pyright: reportCallIssue, reportUntypedFunctionDecorator
@app.stop(matcher="*")
def matcher_on_stop(event: Stop) -> None:
    """Stop has no matcher field."""


# expect mypy: call-overload, untyped-decorator
# expect pyright: reportCallIssue, reportUntypedFunctionDecorator
@app.post_tool_use(fail_closed=True)
def fail_closed_after_the_call(event: HookEvent) -> None:
    """PostToolUse has no safe decision to fail to."""


# expect mypy: call-overload, untyped-decorator
# expect pyright: reportCallIssue, reportUntypedFunctionDecorator
@app.pre_tool_use(stop_loop_guard=False)
def loop_guard_on_a_gate(event: PreToolUse) -> None: ...


# expect mypy: call-overload, untyped-decorator
# expect pyright: reportArgumentType
@app.session_start(timeout="5")
def timeout_as_text(event: HookEvent) -> None: ...


# -- the decorated function keeps its type ----------------------------------------------------


@app.pre_tool_use
def gate(event: PreToolUse) -> Output | None:
    return None


# expect mypy: arg-type
# expect pyright: reportArgumentType
gate(Stop())
# expect mypy: assignment
# expect pyright: reportAssignmentType
answer: Output = gate(PreToolUse())


# -- event models built in code ---------------------------------------------------------------

# expect mypy: arg-type
# expect pyright: reportArgumentType
wrong_type = PreToolUse(tool_name=1)
# expect mypy: assignment
# expect pyright: reportAssignmentType
not_a_stop: Stop = PreToolUse()
# expect mypy: assignment
# expect pyright: reportAssignmentType
flag: bool = Stop().stop_hook_active
