"""The HookApp of the policy case tests (tests/cases/), named ``tests.support.apps.cases:app``
on their command lines: a shell policy that denies, asks or rewrites; a second handler on the
same tool that only adds context (so a case routed to one handler differs from the merge); a
prompt handler with context and a system message; and a handler that raises."""

from __future__ import annotations

from typing import Any

from handler_kit import HookApp, PostToolUse, PreToolUse, UserPromptSubmit, ask, deny, rewrite

app = HookApp("cases-tests")


@app.pre_tool_use(matcher="Bash")
def sandbox(event: PreToolUse):
    command = str((event.tool_input or {}).get("command", ""))
    if "rm -rf" in command:
        return deny("Destructive command: rm -rf is not allowed.")
    if command.startswith("sudo"):
        return ask("sudo needs a human.")
    return rewrite({**(event.tool_input or {}), "sandbox": True, "limits": {"cpu": 1}})


@app.pre_tool_use(matcher="Bash")
def shell_note(event: PreToolUse) -> str:
    return "Shell commands are logged."


@app.user_prompt_submit()
def prompt_context(event: UserPromptSubmit) -> dict[str, Any]:
    return {
        "systemMessage": "Prompts are checked.",
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": f"The user is {event.user_name}.",
        },
    }


@app.post_tool_use(matcher="boom")
def explodes(event: PostToolUse) -> None:
    raise RuntimeError("boom in the handler")
