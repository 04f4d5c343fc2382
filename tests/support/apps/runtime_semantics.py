"""The HookApp of the core's runtime-semantics tests (tests/core/test_runtime_semantics.py),
served by the ``http`` fixture of tests/core/conftest.py: a startup-only SessionStart handler,
and handlers that return the dict the test sends them."""

from __future__ import annotations

from handler_kit import HookApp

POLICY = "Returns are accepted within 30 days of delivery."

app = HookApp("runtime-semantics")


@app.session_start(matcher="startup")
def returns_policy(event):
    return POLICY


# Each handler returns the dict it is sent in tool_input["answer"] (or the prompt's), as a
# handler with a typo in its dict would.
@app.pre_tool_use(matcher="closed_gate", fail_closed=True)
def closed_gate(event):
    return (event.tool_input or {})["answer"]


@app.pre_tool_use(matcher="open_gate")
def open_gate(event):
    return (event.tool_input or {})["answer"]


@app.post_tool_use(matcher="open_note")
def open_note(event):
    return (event.tool_input or {})["answer"]


@app.user_prompt_submit(fail_closed=True)
def prompt_gate(event):
    return {"additionalContext": event.prompt}  # belongs in hookSpecificOutput
