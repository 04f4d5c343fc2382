"""One HookApp per (case, handler shape) for tests/transports/test_expectations.py.

Each app has a single handler named ``h``, so ``/hooks`` (every matching handler, merged)
and ``/hooks/h`` answer the same event with the same one handler, and a command hook runs it
with ``--handler h``. The apps are module attributes named ``app_<case>_<shape>``, so every
transport loads them as ``tests.support.apps.expectations:app_<case>_<shape>``.

A case is the handler's answer (or its failure) and the input it answers; the expected JSON is
written out by hand in the test module, never derived from handler-kit's own rendering.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from handler_kit import HookApp, Output, ask, block, context, deny, halt, rewrite

# what a handler does: return this value (an Output or None), or raise
Answering = Callable[[], "Output | None"]


def _raise() -> Output | None:
    raise RuntimeError("the check broke")


# case -> (event, handler behaviour, fail_closed)
BEHAVIOURS: dict[str, tuple[str, Answering, bool]] = {
    "pre_deny": ("PreToolUse", lambda: deny("Not on this branch."), False),
    "pre_rewrite": ("PreToolUse", lambda: rewrite({"command": "ls -la"}), False),
    "pre_ask": ("PreToolUse", lambda: ask("Really run it?"), False),
    "pre_halt": ("PreToolUse", lambda: halt("Stopped by policy."), False),
    "pre_halt_bare": ("PreToolUse", lambda: halt(), False),
    "pre_nothing": ("PreToolUse", lambda: None, False),
    "pre_raises_closed": ("PreToolUse", _raise, True),
    "pre_raises_open": ("PreToolUse", _raise, False),
    "prompt_context": ("UserPromptSubmit", lambda: context("The ticket is HK-1."), False),
    "prompt_block": ("UserPromptSubmit", lambda: block("No secrets in prompts."), False),
    "post_block": ("PostToolUse", lambda: block("The output leaked a key."), False),
    "stop_block": ("Stop", lambda: block("Cite the ticket."), False),
    "stop_block_guarded": ("Stop", lambda: block("Cite the ticket."), False),
    "stop_context": ("Stop", lambda: context("Check the tests."), False),
    "stop_context_guarded": ("Stop", lambda: context("Check the tests."), False),
    "stop_halt": ("Stop", lambda: halt("Out of budget."), False),
    "stop_halt_guarded": ("Stop", lambda: halt("Out of budget."), False),
    "prompt_raises_closed": ("UserPromptSubmit", _raise, True),
    "stop_raises": ("Stop", _raise, False),
}

SHAPES = ("sync", "async_plain", "async_await")


def _handler(answering: Answering, shape: str) -> Callable[[Any], Any]:
    if shape == "sync":

        def handler(event: Any) -> Output | None:
            return answering()

    elif shape == "async_plain":

        async def handler(event: Any) -> Output | None:  # never suspends
            return answering()

    else:

        async def handler(event: Any) -> Output | None:
            await asyncio.sleep(0)  # suspends once: the path with a deadline armed
            return answering()

    handler.__name__ = "h"
    return handler


def _app(case: str, shape: str) -> HookApp:
    event, answering, fail_closed = BEHAVIOURS[case]
    app = HookApp(f"expect-{case}-{shape}")
    options: dict[str, Any] = {"name": "h", "fail_closed": fail_closed}
    if event in ("PreToolUse", "PostToolUse"):
        options["matcher"] = "Bash"
    app.on(event, **options)(_handler(answering, shape))
    return app


for _case in BEHAVIOURS:
    for _shape in SHAPES:
        globals()[f"app_{_case}_{_shape}"] = _app(_case, _shape)


# An error around the handlers, not in one: a committer (what the durable audit trail puts
# around the answer path) that raises. The handler itself answers allow; its failure policy
# must answer instead, on every transport.
async def _broken_committer(answer: Any, transport: str, context: Any) -> Any:
    raise RuntimeError("the committer broke")


def _broken(fail_closed: bool) -> HookApp:
    app = HookApp(f"expect-internal-{'closed' if fail_closed else 'open'}")

    @app.pre_tool_use(matcher="Bash", name="h", fail_closed=fail_closed)
    def h(event: Any) -> Output:
        return Output(decision="allow", reason="fine")

    return app.extended(committers=[_broken_committer])


app_internal_error_closed = _broken(fail_closed=True)
app_internal_error_open = _broken(fail_closed=False)


# Handlers that answer, for the tests that inject a bug of handler-kit's into a transport
# itself (outside HookApp.answer): the handler's failure policy must answer all the same.
def _answering(fail_closed: bool) -> HookApp:
    app = HookApp(f"expect-transport-bug-{'closed' if fail_closed else 'open'}")

    @app.pre_tool_use(matcher="Bash", name="h", fail_closed=fail_closed)
    def h(event: Any) -> Output:
        return Output(decision="allow", reason="fine")

    # another handler of the event, whose matcher the input does not match
    @app.pre_tool_use(matcher="Write", name="other")
    def other(event: Any) -> None:
        return None

    return app


app_transport_bug_closed = _answering(fail_closed=True)
app_transport_bug_open = _answering(fail_closed=False)
