"""A gate whose reason quotes the caller's tool name, as many real ones do: what the attack
tests on log lines send control characters and long names through."""

from __future__ import annotations

from handler_kit import HookApp, PreToolUse, deny

app = HookApp("echoing")


@app.pre_tool_use()
def quote_tool(event: PreToolUse) -> object:
    return deny(f"{event.tool_name} is not allowed")
