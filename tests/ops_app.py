"""A HookApp for the operations tests (audit, metrics, idempotency, shutdown), served by
``handler-kit serve ops_app:app`` from the tests folder.

Environment: ``OPS_RUN_LOG`` (a file: one line ``pid tool_use_id`` per real run of the
idempotent ``open_approval``), ``OPS_STARTED`` (a file written when ``slow_tool`` starts),
``OPS_RELEASE`` (a file: ``slow_tool`` answers once it exists, so a test decides how long a
request stays in flight; without it ``slow_tool`` takes ``OPS_SLOW_SECONDS``, default 1.5).
"""

from __future__ import annotations

import asyncio
import os
import uuid

from handler_kit import HookApp, PreToolUse, allow, deny

app = HookApp("ops-test")


@app.pre_tool_use(matcher="open_approval", idempotent=True, fail_closed=True, timeout=5)
async def open_approval(event: PreToolUse):
    """Opens an approval request (a side effect that must happen once per tool call)."""
    log = os.environ.get("OPS_RUN_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {event.tool_use_id}\n")
    await asyncio.sleep(0.05)  # long enough for concurrent duplicates to overlap
    return deny(f"Approval request {uuid.uuid4().hex[:12]} opened: a human must approve.")


@app.pre_tool_use(matcher="whoami")
async def whoami(event: PreToolUse):
    """Says which worker process answered."""
    return allow(reason=f"pid={os.getpid()}")


@app.pre_tool_use(matcher="slow_tool", timeout=8)
async def slow_tool(event: PreToolUse):
    """Takes a while: an in-flight request when the server is told to stop."""
    started = os.environ.get("OPS_STARTED")
    if started:
        with open(started, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
    release = os.environ.get("OPS_RELEASE")
    if release:
        for _ in range(350):  # bounded by the deadline (7.5 s)
            if os.path.exists(release):
                break
            await asyncio.sleep(0.02)
    else:
        await asyncio.sleep(float(os.environ.get("OPS_SLOW_SECONDS", "1.5")))
    return allow(reason="slow but done")
