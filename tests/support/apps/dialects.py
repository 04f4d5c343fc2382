"""The HookApp tests/command/test_dialects.py runs through ``handler-kit command --runtime``:
one handler per answer that some runtime cannot carry as Claude Code spells it. No handler has
a matcher; each test picks one with ``--handler NAME``.
"""

from __future__ import annotations

from typing import Any

from handler_kit import (
    HookApp,
    PermissionRequest,
    PostToolUse,
    PreToolUse,
    SessionStart,
    Stop,
    UserPromptSubmit,
    ask,
    block,
    context,
    halt,
    rewrite,
)

ASK_REASON = "A refund over $500 needs a human's yes."
HALT_REASON = "Maintenance window."
NOTE = "Reviewed by the policy bot."
POST_REASON = "The result holds a secret."
POST_NOTE = "Rotate the key."
KEEP_GOING = "Run the tests before stopping."
POLICY = "Returns are accepted within 30 days."
PROMPT_BLOCK = "No secrets in prompts."
BELL = "\a"

app = HookApp("dialects")
# Every handler here answers at once: its tests read each runtime's dialect, not deadlines. A
# command hook's deadline counts from its spawn, so with the default 3 s a start-up slowed to
# seconds on a loaded machine would leave the answer to the watchdog's failure policy.
TIMEOUT = 30


@app.pre_tool_use(fail_closed=True, timeout=TIMEOUT)
def gate_ask(event: PreToolUse):
    return ask(ASK_REASON)


@app.pre_tool_use(timeout=TIMEOUT)
def open_ask(event: PreToolUse):
    return ask(ASK_REASON)


@app.pre_tool_use(fail_closed=True, timeout=TIMEOUT)
def gate_rewrite(event: PreToolUse):
    return rewrite({**(event.tool_input or {}), "amount": 500})


@app.pre_tool_use(timeout=TIMEOUT)
def open_rewrite(event: PreToolUse):
    return rewrite({**(event.tool_input or {}), "amount": 500})


@app.pre_tool_use(timeout=TIMEOUT)
def halt_call(event: PreToolUse):
    return halt(HALT_REASON)


@app.pre_tool_use(timeout=TIMEOUT)
def halt_quiet(event: PreToolUse):
    return halt()


@app.pre_tool_use(timeout=TIMEOUT)
def defer_call(event: PreToolUse):
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer"}}


@app.pre_tool_use(timeout=TIMEOUT)
def quiet_deny(event: PreToolUse):
    return {
        "suppressOutput": True,
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": ASK_REASON,
        },
    }


@app.pre_tool_use(timeout=TIMEOUT)
def quiet_note(event: PreToolUse):
    return {"systemMessage": NOTE, "suppressOutput": True, "terminalSequence": BELL}


@app.pre_tool_use(timeout=TIMEOUT)
def note_call(event: PreToolUse):
    return context(NOTE)


@app.post_tool_use(timeout=TIMEOUT)
def post_note(event: PostToolUse):
    return context(POST_NOTE)


def block_with_context(event: str, reason: str, note: str) -> dict[str, Any]:
    """A block and additional context in one answer, as a handler writes it by hand."""
    return {
        "decision": "block",
        "reason": reason,
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": note},
    }


@app.post_tool_use(timeout=TIMEOUT)
def post_both(event: PostToolUse):
    return block_with_context("PostToolUse", POST_REASON, POST_NOTE)


@app.post_tool_use(timeout=TIMEOUT)
def post_halt(event: PostToolUse):
    return halt(HALT_REASON)


@app.post_tool_use(timeout=TIMEOUT)
def post_replace(event: PostToolUse):
    return {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedMCPToolOutput": {"content": [{"type": "text", "text": "redacted"}]},
        }
    }


@app.stop(timeout=TIMEOUT)
def keep_going(event: Stop):
    return context(KEEP_GOING)


@app.stop(timeout=TIMEOUT)
def stop_halt(event: Stop):
    return halt(HALT_REASON)


@app.stop(timeout=TIMEOUT)
def stop_none(event: Stop):
    return None


@app.session_start(timeout=TIMEOUT)
def start_note(event: SessionStart):
    return POLICY


@app.session_start(timeout=TIMEOUT)
def start_halt(event: SessionStart):
    return halt(HALT_REASON)


@app.user_prompt_submit(timeout=TIMEOUT)
def prompt_block(event: UserPromptSubmit):
    return block(PROMPT_BLOCK)


@app.user_prompt_submit(timeout=TIMEOUT)
def prompt_both(event: UserPromptSubmit):
    return block_with_context("UserPromptSubmit", PROMPT_BLOCK, NOTE)


@app.permission_request(timeout=TIMEOUT)
def permission_deny(event: PermissionRequest):
    verdict = {
        "behavior": "deny",
        "message": ASK_REASON,
        "updatedPermissions": [{"type": "setMode", "mode": "plan"}],
    }
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": verdict}}
