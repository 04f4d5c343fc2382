"""The shadow candidate's process: ``python -m handler_kit.shadow MODULE:ATTR``.

It reads batches of answered events on stdin (frames: 4-byte length, then a pickle), answers
each with the candidate app, compares it with the enforced answer, and writes one frame of
results per batch on stdout. Its own process, so that a candidate that spins, blocks or leaks
takes nothing from the server but a core's share: a thread of the server would hold the
server's interpreter lock while it runs, and every answer would wait for it.

Whatever the candidate prints goes to stderr (the server's log); stdout carries frames only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from handler_kit.core.app import HookApp
from handler_kit.core.events import HookEvent
from handler_kit.core.names import Status
from handler_kit.core.vocabulary import Handler, Invocation
from handler_kit.ops.audit.capture import invocation_decision
from handler_kit.ops.audit.process import read_frame, write_frame

# One answered event, as the server sends it: (sequence number, the event (or its model and
# the webhook body it was read from: see received), the route's
# handler name or None for every matching one, the enforced output, whether it failed, each
# enforced handler's view (see handler_view), the monotonic time past which it is given up).
Job = tuple[
    int,
    HookEvent | tuple[type[HookEvent], bytes],
    str | None,
    dict[str, Any],
    bool,
    list[tuple[Any, ...]],
    float,
]
# The result: (sequence number, kind: agree, disagree, timeout, skipped or expired, agrees,
# [(handler, agrees)], the candidate's output, whether it failed, its handlers' values as the
# audit trail records them, time.time_ns() when it answered).
Result = tuple[
    int, str, bool, list[tuple[str, bool]], dict[str, Any], bool, tuple[tuple[Any, ...], ...], int
]

_ANSWERED = (Status.OK, Status.LOOP_GUARDED)


def handler_view(inv: Invocation, event_name: str) -> tuple[Any, ...]:
    """What one handler told the runtime, compared as a decision: (name, decision, reason,
    rendered output or None, failed). Latency and error texts are not compared."""
    decision, reason = invocation_decision(inv, event_name)
    # an empty output is no opinion, as a handler that did not run has
    output = (inv.output.render(event_name) or None) if inv.output is not None else None
    return (inv.handler.name, decision, reason, output, inv.status not in _ANSWERED)


def handler_agreements(
    enforced: Sequence[tuple[Any, ...]], candidate: Sequence[tuple[Any, ...]]
) -> list[tuple[str, bool]]:
    """``(handler name, agrees)`` for every handler of either answer, paired by name: the
    enforced app's in their order, then those only the candidate has; a handler only one app
    has is compared with no opinion."""
    none = (None, None, None, False)
    mine = {view[0]: view[1:] for view in enforced}
    theirs = {view[0]: view[1:] for view in candidate}
    names = [*mine, *(name for name in theirs if name not in mine)]
    return [(name, mine.get(name, none) == theirs.get(name, none)) for name in names]


def handlers_for(candidate: HookApp, route: str | None, event: HookEvent) -> list[Handler]:
    """The candidate's handlers for the request: its handler of the route's name (paired by
    name, as the route would be served by the candidate), or every matching one."""
    if route is None:
        return candidate.matching(event)
    handler = candidate.by_name.get(route)
    if (
        handler is None
        or handler.event != event.hook_event_name
        or not handler.matches(event.matcher_value())
    ):
        return []
    return [handler]


def received(event: HookEvent | tuple[type[HookEvent], bytes]) -> HookEvent:
    """The enforced app's event: sent as is, or as its model and the webhook body it was
    read from, read here again as the webhook read it (in one pass, or, for JSON that
    pydantic-core refuses and the standard library reads, such as a lone surrogate escape,
    from the standard library's reading)."""
    if not isinstance(event, tuple):
        return event
    model, body = event
    try:
        return model.model_validate_json(body)
    except ValidationError:
        return model.model_validate(json.loads(body))


async def answer(candidate: HookApp, job: Job) -> Result:
    seq, sent, route, output, failed, views, deadline = job
    event = received(sent)
    empty: Result = (seq, "", False, [], {}, False, (), time.time_ns())
    left = deadline - time.monotonic()
    if left <= 0:
        return (seq, "expired", *empty[2:])
    handlers = handlers_for(candidate, route, event)
    if any(handler.idempotent for handler in handlers):
        # a handler with side effects (a ticket filed, an approval sent): a shadow must not act
        return (seq, "skipped", *empty[2:])
    try:
        async with asyncio.timeout(left):
            made = await candidate.answer(event, handlers, transport="shadow")
    except TimeoutError:
        return (seq, "timeout", *empty[2:])
    name = event.hook_event_name
    mine = [handler_view(inv, name) for inv in made.invocations]
    per_handler = handler_agreements(views, mine)
    agrees = made.failed == failed and made.output == output
    # as the audit trail records a decision's handlers: the answer is the one handler's output
    single = len(made.invocations) == 1
    values = tuple(
        (
            view[0],
            inv.status.value,
            view[1],
            view[2],
            inv.error,
            inv.latency_ms,
            None if inv.output is None else made.output if single else inv.output.render(name),
            False,
        )
        for view, inv in zip(mine, made.invocations, strict=True)
    )
    kind = "agree" if agrees else "disagree"
    return (seq, kind, agrees, per_handler, made.output, made.failed, values, time.time_ns())


async def answer_all(candidate: HookApp, jobs: list[Job]) -> list[Result]:
    """A batch's answers at once (a candidate waiting on I/O holds up no other)."""
    return list(await asyncio.gather(*(answer(candidate, job) for job in jobs)))


def _stand_back() -> None:
    """Run at the lowest priority an unprivileged process can take, so that the candidate
    only uses CPU the server leaves idle: its process inherits the server's CPU affinity (an
    operator's ``taskset`` or cgroup), and at a normal priority it would share the server's
    core as an equal, every request arriving while it runs waiting for the scheduler's next
    turn. ``SCHED_IDLE`` (Linux) is preempted at once when the server wakes; elsewhere the
    nicest ``nice``. A candidate starved this way falls behind, and the bound sheds its work."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        with contextlib.suppress(OSError):
            os.nice(19)


def main(argv: Sequence[str] | None = None) -> int:
    from handler_kit.core.loader import LoadError, load_app

    args = list(sys.argv[1:] if argv is None else argv)
    _stand_back()
    frames_out = os.dup(1)
    os.dup2(2, 1)  # the candidate's prints go to the log, never into a frame
    try:
        candidate = load_app(args[0]).extended(interrupt_fails=True)
    except LoadError as exc:
        print(f"handler-kit shadow: {exc}", file=sys.stderr, flush=True)
        return 2
    loop = asyncio.new_event_loop()
    try:
        while True:
            jobs = read_frame(0)
            if jobs is None:
                return 0
            write_frame(frames_out, loop.run_until_complete(answer_all(candidate, jobs)))
    except (BrokenPipeError, KeyboardInterrupt):
        return 0
    finally:
        loop.close()
