"""The HookApp of the webhook tests (tests/server/test_webhook.py), served in process by the
``server`` and ``strict_server`` fixtures of tests/server/conftest.py.

One handler per outcome the webhook contract names, each on its own tool name or event, so a
test names the outcome it wants by the event it sends: a fail-closed refund gate, a handler
only its named route runs, handlers that raise or hang (fail open and fail closed), helpers
their event cannot carry, a dict JSON cannot carry, and a context echo.
"""

from __future__ import annotations

import asyncio

from handler_kit import HookApp, block, context, deny, rewrite

SECRET_DETAIL = "db-password-hunter2 at /srv/secret/config.py"
HANG_OPEN_TIMEOUT = 1.0
HANG_CLOSED_TIMEOUT = 2.0

app = HookApp("webhook-tests")


@app.pre_tool_use(matcher="issue_refund|orders__refund", fail_closed=True)
async def gate(event):
    if (event.tool_input or {}).get("amount", 0) > 500:
        return deny("Refunds over $500 need a human approver.")
    return None


@app.pre_tool_use(matcher="special_tool")
def named_only(event):
    return deny("special")


@app.post_tool_use(matcher="crash_tool")
def raises(event):
    raise RuntimeError(SECRET_DETAIL)


@app.post_tool_use(matcher="hang_tool", timeout=HANG_OPEN_TIMEOUT)
async def hangs_open(event):
    await asyncio.sleep(30)


@app.pre_tool_use(matcher="hang_gate", timeout=HANG_CLOSED_TIMEOUT, fail_closed=True)
async def hangs_closed(event):
    await asyncio.sleep(30)


@app.pre_tool_use(matcher="crash_gate", fail_closed=True)
def crashes_closed(event):
    raise RuntimeError(SECRET_DETAIL)


@app.session_start(matcher="resume")
def wrong_helper_open(event):
    return deny("SessionStart cannot deny")


@app.pre_tool_use(matcher="wrong_gate", fail_closed=True)
def wrong_helper_closed(event):
    return block("PreToolUse has no block")


@app.user_prompt_expansion(fail_closed=True)
def wrong_helper_expansion(event):
    return rewrite({"not": "on this event"})


@app.post_tool_use(matcher="weird_tool")
def unserializable(event):
    # a field PostToolUse has, holding a value JSON cannot carry
    return {"hookSpecificOutput": {"additionalContext": "x", "updatedToolOutput": object()}}


@app.user_prompt_submit()
def echo_prompt(event):
    return context(f"You said: {event.prompt}")


@app.stop()
def stop_context(event):
    return "reply checked"
