"""HookApps run by tests/command/test_hook.py and tests/claude_code/test_settings.py through
the real ``handler-kit`` console script (``tests.support.apps.command:app`` from the repository
root).

``app`` has one handler per interesting outcome on each of the five common events, each
deciding from fields that the captured payloads under ../shared/hook-payloads actually carry;
tests/command/test_hook.py mirrors the same rules in ``expected()``. ``crashy`` holds failing
handlers: fail-closed or not, raising or stuck past their deadline, printing to stdout.
"""

from __future__ import annotations

import time

from handler_kit import (
    HookApp,
    PostToolUse,
    PreToolUse,
    SessionStart,
    Stop,
    UserPromptSubmit,
    block,
    context,
    deny,
    rewrite,
)

REFUND_DENY = "Refunds over $500 need a human approver."
NPM_DENY = "Use the make targets, not npm, in this repository."
CITE_BLOCK = "The reply does not cite the ticket number."
MENTION_BLOCK = "@-mentions of files are not allowed in prompts here."
WRITE_BLOCK = "Do not write generated files under .playwright-cli."
RETURNS_POLICY = "Returns are accepted within 30 days of delivery."

app = HookApp("command-test")


@app.pre_tool_use(matcher="issue_refund|orders__refund", fail_closed=True)
async def refund_gate(event: PreToolUse):
    if (event.tool_input or {}).get("amount", 0) > 500:
        return deny(REFUND_DENY)
    return None


@app.pre_tool_use(matcher="Bash")
def no_npm(event: PreToolUse):
    command = str((event.tool_input or {}).get("command", ""))
    if command.startswith("npm"):
        return deny(NPM_DENY)
    return None


@app.pre_tool_use(matcher="mcp__.*")
def mcp_note(event: PreToolUse) -> str:
    return f"MCP call: {event.tool_name}"


@app.pre_tool_use(matcher="Grep")
def grep_rewrite(event: PreToolUse):
    return rewrite({**(event.tool_input or {}), "head_limit": 50})


@app.post_tool_use()
def post_audit(event: PostToolUse):
    path = str((event.tool_input or {}).get("file_path", ""))
    if event.tool_name == "Write" and ".playwright-cli" in path:
        return block(WRITE_BLOCK)
    if (event.tool_name or "").startswith("mcp__"):
        return context(f"Audited {event.tool_name}.")
    return None


@app.user_prompt_submit(fail_closed=True)
def prompt_policy(event: UserPromptSubmit):
    if "@" in (event.prompt or ""):
        return block(MENTION_BLOCK)
    return "Cite the ticket number in every reply."


@app.stop()
def cite_ticket(event: Stop):
    if "#" not in (event.last_assistant_message or ""):
        return block(CITE_BLOCK)
    return None


@app.session_start(matcher="startup|resume")
def returns_policy(event: SessionStart) -> str:
    return RETURNS_POLICY


crashy = HookApp("crashy")


@crashy.pre_tool_use(matcher="issue_refund", fail_closed=True)
def crashing_gate(event: PreToolUse):
    print("chatter from a handler: must not reach stdout")
    raise RuntimeError("database unreachable")


@crashy.pre_tool_use(matcher="slow_refund", fail_closed=True, timeout=1)
def stuck_gate(event: PreToolUse):
    time.sleep(30)  # a sync call that never returns in time


@crashy.user_prompt_submit()
def crashing_context(event: UserPromptSubmit):
    raise ValueError("policy file missing")


@crashy.stop(stop_loop_guard=False)
def unreasoned_block(event: Stop):
    return {"decision": "block"}


@crashy.session_start()
def chatty(event: SessionStart):
    import os

    print("print() to stdout")
    os.system("echo child process writing to fd 1")
    return {"continue": False, "stopReason": "Maintenance window."}


@crashy.pre_tool_use(matcher="async_refund", fail_closed=True)
async def crashing_async_gate(event: PreToolUse):
    """Never awaits: answered without an event loop, crash and all."""
    raise RuntimeError("ledger down")


@crashy.pre_tool_use(matcher="slow_async_refund", fail_closed=True, timeout=1)
async def slow_async_gate(event: PreToolUse):
    import asyncio  # here, not at the top: this module must not import asyncio

    await asyncio.sleep(30)


@crashy.post_tool_use()
async def awaiting_note(event: PostToolUse) -> str:
    import asyncio

    await asyncio.sleep(0)
    return f"awaited on a loop for {event.tool_name}"
