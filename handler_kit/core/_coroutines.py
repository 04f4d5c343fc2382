"""What a handler's run may raise that is not the handler's to fail with."""

from __future__ import annotations

import sys


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
