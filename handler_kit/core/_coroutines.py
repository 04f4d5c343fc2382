"""Driving coroutines without paying for what they do not use.

Most gates are ``async def`` functions that decide without awaiting anything. Two things follow,
and both are here so there is one place that steps coroutines by hand:

- on a server, such a handler is run inline, and its deadline is armed only if it suspends
  (:class:`Resume` finishes a coroutine stepped once);
- in a command hook, a new process per tool call, :func:`run_without_loop` drives a coroutine
  that cannot suspend with one ``send(None)``: importing asyncio is a large share of that
  process's start-up, and :func:`never_suspends` tells from the bytecode when it is certain.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine, Generator
from time import perf_counter
from types import FunctionType, MethodType
from typing import Any, TypeVar

T = TypeVar("T")

_SUSPENDING_OPS: frozenset[int] | None = None


class Resume:
    """Awaitable that finishes a coroutine already stepped once.

    It hands what the coroutine yielded (the future it waits on) to the task driving us and
    forwards results and exceptions (cancellation included) back, as ``await`` would have.

    With a ``deadline`` (a :func:`time.perf_counter` value), it also notes a step that began
    before the deadline and ended after it: the coroutine held the event loop through its
    deadline, where no timer could interrupt it. ``late_step`` is that step's duration.
    """

    __slots__ = ("coro", "deadline", "late_step", "yielded")

    def __init__(
        self, coro: Coroutine[Any, Any, Any], yielded: Any, deadline: float | None = None
    ) -> None:
        self.coro = coro
        self.yielded = yielded
        self.deadline = deadline
        self.late_step: float | None = None

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, yielded = self.coro, self.yielded
        while True:
            try:
                sent = yield yielded
            except BaseException as exc:  # cancellation or deadline: deliver it inside
                began = perf_counter()
                try:
                    yielded = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
                finally:
                    self._timed(began)
                continue
            began = perf_counter()
            try:
                yielded = coro.send(sent)
            except StopIteration as stop:
                return stop.value
            finally:
                self._timed(began)

    def _timed(self, began: float) -> None:
        deadline = self.deadline
        if deadline is not None and self.late_step is None and began < deadline:
            now = perf_counter()
            if now > deadline:
                self.late_step = now - began


def never_suspends(func: Callable[..., Any]) -> bool:
    """True when ``func``'s own code cannot suspend: no await, ``async for``/``async with``.

    Read from the bytecode (2-byte units since 3.6; inline caches are units of opcode 0).
    Anything but a plain Python function or a method of one (a callable instance, a partial,
    a C or Cython function) is "may suspend", which only means it runs on a loop.
    """
    global _SUSPENDING_OPS
    if _SUSPENDING_OPS is None:
        import opcode

        names = ("GET_AWAITABLE", "GET_AITER", "GET_ANEXT", "BEFORE_ASYNC_WITH", "SEND")
        _SUSPENDING_OPS = frozenset(opcode.opmap[n] for n in names if n in opcode.opmap)
    # only a Python function's code is the code that runs: a callable instance, a compiled
    # (Cython) function or any object may carry a ``__code__`` that is not what its call runs
    if type(func) is MethodType:
        func = func.__func__
    if type(func) is not FunctionType:
        return False
    raw = func.__code__.co_code
    ops = _SUSPENDING_OPS
    return not any(raw[i] in ops for i in range(0, len(raw), 2))


def stops_the_run(exc: BaseException) -> bool:
    """Whether ``exc``, a :class:`BaseException` that is not an :class:`Exception`, raised out
    of a handler's run, must go on up rather than be the handler's failure: an interrupt
    (Ctrl-C reaches a command hook's main thread wherever it runs) or the cancellation of
    the task answering (a server shutting down). Anything else, ``SystemExit``,
    ``GeneratorExit``, a ``CancelledError`` of the handler's own (a task of its own
    cancelled) or a ``BaseException`` subclass of its own, is its failure, answered by its
    failure policy: a handler owns neither the process nor the request, and the exception
    would otherwise reach the transport as a bare 500 or an exit with no answer, where a
    fail-closed gate fails open."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    asyncio = sys.modules.get("asyncio")  # not imported: no task to cancel
    if asyncio is None or not isinstance(exc, asyncio.CancelledError):
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop
        return False
    return task is not None and task.cancelling() > 0


def run_without_loop(coro: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine the caller knows cannot suspend, with no event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()  # the caller's proof was wrong: say so rather than guess
    raise RuntimeError("a coroutine expected not to suspend did suspend")
