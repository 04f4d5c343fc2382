"""The HookApp of the interrupt tests (tests/server/test_handler_interrupts.py), served by
``handler-kit serve tests.support.apps.interrupts:app``: handlers that raise
``KeyboardInterrupt``, of every shape a server runs (a sync handler on a thread, an async one
that raises at once, one that raises after it suspended), each fail closed on PreToolUse and
fail open on PostToolUse, each named by the tool name it matches.

``PreToolUse`` on any tool also runs ``no_opinion``, so ``POST /hooks`` runs two handlers at
once (the path that runs each in a task of its own); ``PostToolUse`` runs one.
"""

from __future__ import annotations

import asyncio

from handler_kit import HookApp, PostToolUse, PreToolUse, deny

app = HookApp("interrupts")


@app.pre_tool_use(matcher="^sync$", fail_closed=True)
def sync_gate(event: PreToolUse) -> None:
    raise KeyboardInterrupt


@app.pre_tool_use(matcher="^async$", fail_closed=True)
async def async_gate(event: PreToolUse) -> None:
    raise KeyboardInterrupt


@app.pre_tool_use(matcher="^stepped$", fail_closed=True)
async def stepped_gate(event: PreToolUse) -> None:
    await asyncio.sleep(0)
    raise KeyboardInterrupt


@app.pre_tool_use(matcher="^calm$", fail_closed=True)
async def calm_gate(event: PreToolUse) -> object:
    """The next request: answered as usual."""
    return deny("calm")


@app.pre_tool_use()
async def no_opinion(event: PreToolUse) -> None:
    return None


@app.post_tool_use(matcher="^sync$")
def sync_note(event: PostToolUse) -> None:
    raise KeyboardInterrupt


@app.post_tool_use(matcher="^async$")
async def async_note(event: PostToolUse) -> None:
    raise KeyboardInterrupt


@app.post_tool_use(matcher="^stepped$")
async def stepped_note(event: PostToolUse) -> None:
    await asyncio.sleep(0)
    raise KeyboardInterrupt
