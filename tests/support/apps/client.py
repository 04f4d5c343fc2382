"""The HookApp of the HookClient tests (tests/testing/test_client.py), served in process and
over HTTPS by the ``clients`` fixture of tests/testing/conftest.py: a rewrite on ``Bash``, a
prompt policy that blocks or adds context, and a handler that raises on ``boom``."""

from __future__ import annotations

from handler_kit import HookApp, PreToolUse, UserPromptSubmit, block, rewrite

app = HookApp("client-tests")


@app.pre_tool_use(matcher="Bash")
def add_flag(event: PreToolUse):
    return rewrite({**(event.tool_input or {}), "safe": True})


@app.user_prompt_submit()
def prompt_policy(event: UserPromptSubmit):
    if "forbidden" in (event.prompt or ""):
        return block("Not here.")
    return f"user: {event.user_name}"


@app.post_tool_use(matcher="boom")
def explodes(event):
    raise RuntimeError("boom")
