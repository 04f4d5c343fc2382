"""Speed only: not paying for a deadline or an event loop a coroutine cannot use.

Most gates are ``async def`` functions that decide without awaiting anything
(:func:`never_suspends` tells from the bytecode when that is certain). Such a coroutine cannot
be interrupted, so nothing is lost by not arming what could interrupt it:

- on a server, ``HookApp`` awaits such a handler as it is, without the timer that every other
  handler runs under for its deadline (:attr:`~handler_kit.core.vocabulary.Handler.awaits_nothing`);
- in a command hook, a new process per tool call, :func:`run_without_loop` drives an answer
  that cannot suspend with one ``send(None)``: importing asyncio is a large share of that
  process's start-up.

Without this module both would take the general path (a timer per answer, an event loop per
command hook) and answer the same.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from types import FunctionType, MethodType
from typing import Any, TypeVar

T = TypeVar("T")

_SUSPENDING_OPS: frozenset[int] | None = None


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


def run_without_loop(coro: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine the caller knows cannot suspend, with no event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()  # the caller's proof was wrong: say so rather than guess
    raise RuntimeError("a coroutine expected not to suspend did suspend")
