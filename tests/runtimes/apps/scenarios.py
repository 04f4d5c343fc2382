"""The app every runtime scenario installs: each handler acts only on a word in the command,
prompt or reply, so that one install serves every scenario and the others see no opinion.

Copied into a throwaway project as ``scenarios.py`` and installed as ``scenarios:app``.
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
    allow,
    ask,
    block,
    context,
    deny,
    rewrite,
)

app = HookApp("runtime-scenarios")


def command_of(event: PreToolUse | PostToolUse) -> str:
    return str((event.tool_input or {}).get("command", ""))


# One gate for every PreToolUse scenario: each hook is a process per tool call, and one
# fail-closed gate is what an app that no longer imports must keep closed.
@app.pre_tool_use(matcher="Bash", fail_closed=True)
def gate(event: PreToolUse):
    command = command_of(event)
    if "deny-me" in command:
        return deny("DENIED-BY-GATE: deny-me commands are not allowed.")
    if "allow-me" in command:
        return allow("ALLOWED-BY-GATE")
    if "ask-me" in command:
        return ask("ASKED-BY-GATE: a human must confirm.")
    if "rewrite-me" in command:
        rewritten = command.replace("rewrite-me", "rewritten")
        return rewrite({**(event.tool_input or {}), "command": rewritten})
    if "raise-me" in command:
        raise RuntimeError("the policy service is down")
    if "hang-me" in command:
        time.sleep(60)
    return None


@app.post_tool_use(matcher="Bash")
def after_tool(event: PostToolUse):
    command = command_of(event)
    if "post-context-me" in command:
        return context("POST-CONTEXT: the audit log noted this call.")
    if "post-block-me" in command:
        return block("POST-BLOCKED: this output is withheld.")
    return None


@app.session_start()
def session_context(event: SessionStart) -> str:
    return "SESSION-CONTEXT: returns policy version 7."


@app.user_prompt_submit()
def prompt_gate(event: UserPromptSubmit):
    prompt = event.prompt or ""
    if "blocked-prompt" in prompt:
        return block("PROMPT-BLOCKED: this request is not allowed.")
    if "context-prompt" in prompt:
        return context("PROMPT-CONTEXT: the ticket is #4821.")
    return None


@app.stop()
def stop_check(event: Stop):
    reply = event.last_assistant_message or ""
    if "stop-block-me" in reply:
        return block("STOP-BLOCKED: the reply must cite the ticket.")
    if "stop-context-me" in reply:
        return context("STOP-CONTEXT: remember to cite the ticket.")
    return None
