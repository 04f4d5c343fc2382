"""The HookApp of the operations tests (audit, metrics, tracing, idempotency, shutdown): in
process through the ``ops_app`` fixture (a fresh app per test, from :func:`build`), and served
by ``handler-kit serve tests.support.apps.ops:app`` from the repository root.

Its handlers give every outcome the operations record, each on its own tool name, so a test
names the outcome it wants by the event it sends:

- ``issue_refund``: the refund gate (fail closed; denies over $500, no opinion otherwise);
  ``orders__refund`` runs it and ``refund_logger`` too, two handlers on one event;
- ``Bash``: a rewrite; ``explode``: raises (fail open); ``crash_gate``: raises, fail closed;
  ``sleepy``: misses its deadline, fail closed; a ``UserPromptSubmit`` with no opinion; a
  ``Stop`` that blocks (so its continuation is loop-guarded);
- served: ``open_approval`` (idempotent), ``whoami``, ``slow_tool``.

Environment of the served handlers: ``OPS_RUN_LOG`` (a file: one line ``pid tool_use_id`` per
real run of the idempotent ``open_approval``), ``OPS_STARTED`` (a file written when
``slow_tool`` starts), ``OPS_RELEASE`` (a file: ``slow_tool`` answers once it exists, so a test
decides how long a request stays in flight; without it ``slow_tool`` takes
``OPS_SLOW_SECONDS``, default 1.5).
"""

from __future__ import annotations

import asyncio
import os
import uuid

from handler_kit import (
    HookApp,
    PreToolUse,
    Stop,
    UserPromptSubmit,
    allow,
    block,
    deny,
    rewrite,
)

REFUND_DENY = "Refunds over $500 need a human approver."


def build() -> HookApp:
    """A new app with every handler below registered (tests that turn operations on get an
    app no other test has served)."""
    hooks = HookApp("ops-test")

    @hooks.pre_tool_use(matcher="issue_refund|orders__refund", fail_closed=True)
    async def refund_gate(event: PreToolUse):
        if (event.tool_input or {}).get("amount", 0) > 500:
            return deny(REFUND_DENY)
        return None

    @hooks.pre_tool_use(matcher="orders__refund")
    async def refund_logger(event: PreToolUse):
        return None

    @hooks.pre_tool_use(matcher="Bash")
    def bash_rewrite(event: PreToolUse):
        return rewrite({**(event.tool_input or {}), "timeout": 30})

    @hooks.pre_tool_use(matcher="explode")
    def explode(event: PreToolUse):
        raise RuntimeError("boom")

    @hooks.pre_tool_use(matcher="crash_gate", fail_closed=True)
    async def crash_gate(event: PreToolUse):
        raise RuntimeError("boom")

    @hooks.pre_tool_use(matcher="sleepy", timeout=0.2, fail_closed=True)
    async def sleepy(event: PreToolUse):
        await asyncio.sleep(5)

    @hooks.user_prompt_submit()
    def prompt_gate(event: UserPromptSubmit):
        return None

    @hooks.stop()
    def cite(event: Stop):
        return block("cite the ticket")

    @hooks.pre_tool_use(matcher="open_approval", idempotent=True, fail_closed=True, timeout=5)
    async def open_approval(event: PreToolUse):
        """Opens an approval request (a side effect that must happen once per tool call)."""
        log = os.environ.get("OPS_RUN_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()} {event.tool_use_id}\n")
        await asyncio.sleep(0.05)  # long enough for concurrent duplicates to overlap
        return deny(f"Approval request {uuid.uuid4().hex[:12]} opened: a human must approve.")

    @hooks.pre_tool_use(matcher="whoami")
    async def whoami(event: PreToolUse):
        """Says which worker process answered."""
        return allow(reason=f"pid={os.getpid()}")

    @hooks.pre_tool_use(matcher="slow_tool", timeout=8)
    async def slow_tool(event: PreToolUse):
        """Takes a while: an in-flight request when the server is told to stop."""
        started = os.environ.get("OPS_STARTED")
        if started:
            with open(started, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
        release = os.environ.get("OPS_RELEASE")
        if release:
            for _ in range(350):  # bounded by the handler's deadline
                if os.path.exists(release):
                    break
                await asyncio.sleep(0.02)
        else:
            await asyncio.sleep(float(os.environ.get("OPS_SLOW_SECONDS", "1.5")))
        return allow(reason="slow but done")

    return hooks


app = build()
