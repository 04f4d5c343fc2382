"""Worker processes that end with the process that started them.

``handler-kit serve --workers N`` runs uvicorn's supervisor in the ``serve`` process and the app
in N workers it starts with :mod:`multiprocessing`. The supervisor stops its workers when it is
asked to stop, but a supervisor that is killed (``kill -9``, the OOM killer) asks nothing: its
workers would go on serving on the shared socket with the configuration they started with (the
old tokens, after an operator restarted the server with new ones), with nothing left to restart
or stop them.

So each worker watches its parent and, once it is gone, shuts down as on SIGTERM: it stops
accepting, in-flight requests get the graceful timeout, the audit trail is flushed. The watch
is :mod:`multiprocessing`'s own: a process it starts holds the read end of a pipe whose write
end only its parent has, so the kernel wakes the watch when the parent dies, however it died.
There is no polling, no platform-specific call, and no window in which the parent can die
unseen (a parent already gone is seen at once).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from multiprocessing import parent_process
from multiprocessing.process import BaseProcess

logger = logging.getLogger("handler_kit.server")

_watching = False


def end_with_parent() -> None:
    """In a process started by :mod:`multiprocessing` (a uvicorn worker), start the thread
    that shuts it down when its parent dies. Anywhere else (a single ``serve`` process, whose
    parent is a shell or a process manager; gunicorn's workers, which watch their arbiter
    themselves), nothing."""
    global _watching
    parent = parent_process()
    if parent is None or _watching:
        return
    _watching = True
    threading.Thread(
        target=_watch, args=(parent,), name="handler-kit-parent-watch", daemon=True
    ).start()


def _watch(parent: BaseProcess) -> None:
    parent.join()  # returns when the parent has exited
    logger.warning(
        "the serve process (pid %s) is gone: worker %s shuts down", parent.pid, os.getpid()
    )
    # uvicorn's own graceful shutdown, exactly as when the supervisor stops a worker
    os.kill(os.getpid(), signal.SIGTERM)
