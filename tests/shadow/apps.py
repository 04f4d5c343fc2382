"""The apps the shadow tests serve: an enforced gate, and candidates that crash, hang, are
slow, or decide otherwise. Served by name (``handler-kit serve tests.shadow.apps:enforced
--shadow tests.shadow.apps:crashing``)."""

from __future__ import annotations

import asyncio
import threading
import time

from handler_kit import HookApp, deny
from handler_kit.core.events import PreToolUse
from handler_kit.core.outputs import Output

# what the enforced gate takes to answer: the latency every answer must keep
GATE_SECONDS = 0.02


def _gate_decision(event: PreToolUse) -> Output | None:
    command = str((event.tool_input or {}).get("command", ""))
    if "rm -rf" in command:
        return deny("rm -rf is not allowed")
    return None


enforced = HookApp("enforced")


@enforced.pre_tool_use(matcher="Bash")
async def bash_gate(event: PreToolUse) -> Output | None:
    await asyncio.sleep(GATE_SECONDS)
    return _gate_decision(event)


@enforced.pre_tool_use(matcher="Bash")
def audit_note(event: PreToolUse) -> Output | None:
    return None


crashing = HookApp("crashing")


@crashing.pre_tool_use(matcher="Bash", name="bash_gate")
async def crashing_gate(event: PreToolUse) -> Output | None:
    raise RuntimeError("the candidate crashed")


@crashing.pre_tool_use(matcher="Bash", name="audit_note")
def crashing_note(event: PreToolUse) -> Output | None:
    raise KeyboardInterrupt  # not the end of the server either


hanging = HookApp("hanging")


@hanging.pre_tool_use(matcher="Bash", name="bash_gate")
async def hanging_gate(event: PreToolUse) -> Output | None:
    # holds its process outright: no deadline can cut it off
    time.sleep(30)
    return None


@hanging.pre_tool_use(matcher="Bash", name="audit_note")
def hanging_note(event: PreToolUse) -> Output | None:
    threading.Event().wait(30)
    return None


slow = HookApp("slow")


@slow.pre_tool_use(matcher="Bash", name="bash_gate", timeout=2)
async def slow_gate(event: PreToolUse) -> Output | None:
    await asyncio.sleep(0.4)
    return _gate_decision(event)


@slow.pre_tool_use(matcher="Bash", name="audit_note")
def slow_note(event: PreToolUse) -> Output | None:
    time.sleep(0.2)
    return None


# the candidate of a change: denies every rm, not only rm -rf
stricter = HookApp("stricter")


@stricter.pre_tool_use(matcher="Bash", name="bash_gate")
async def stricter_gate(event: PreToolUse) -> Output | None:
    await asyncio.sleep(GATE_SECONDS)
    if "rm " in str((event.tool_input or {}).get("command", "")):
        return deny("rm is not allowed")
    return None


@stricter.pre_tool_use(matcher="Bash", name="audit_note")
def stricter_note(event: PreToolUse) -> Output | None:
    return None


@stricter.pre_tool_use(matcher="Bash")
async def stricter_extra(event: PreToolUse) -> Output:
    # a handler only the candidate has, with no opinion: it agrees with no handler at all
    return Output()


# a candidate whose process dies on one input (a crash in native code, out of memory)
dying = HookApp("dying")


@dying.pre_tool_use(matcher="Bash", name="bash_gate")
async def dying_gate(event: PreToolUse) -> Output | None:
    if "git" in str((event.tool_input or {}).get("command", "")):
        import os

        os._exit(3)
    return _gate_decision(event)
