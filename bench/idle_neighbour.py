"""``python -m bench.idle_neighbour ARGV...``: run ARGV (a server) with a busy loop beside it
at idle priority, the way shadow mode runs its candidate, but doing no work of the server's.

The shadow row's floor: on a small machine, a process at ``SCHED_IDLE`` that only spins
still costs the server's latency something (a core kept busy is woken for the server by a
preemption, and shares its caches), and that part of a shadow candidate's cost is the
machine's, not the candidate's. The loop is a child of the server (it inherits the CPU
affinity the bench pins the server to, as the candidate does) and dies with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator

from bench.procs import children, die_with_parent


def _spin() -> None:
    # SIGKILL, not the default SIGTERM: a stopped process keeps any other signal pending
    die_with_parent(signal.SIGKILL)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)
    # stopped until its side is loaded: the bench continues it (SIGCONT) for that side's runs
    # only, so it costs the other sides nothing (spinning() below)
    os.kill(os.getpid(), signal.SIGSTOP)
    while True:
        pass


@contextlib.contextmanager
def spinning(server_pid: int) -> Iterator[None]:
    """The busy loop beside the server ``server_pid`` runs while the block runs."""
    loops = [pid for pid in children(server_pid) if _is_loop(pid)]
    for pid in loops:
        os.kill(pid, signal.SIGCONT)
    try:
        yield
    finally:
        for pid in loops:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)


def _is_loop(pid: int) -> bool:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        return b"bench.idle_neighbour" in cmdline.read()
    return False


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m bench.idle_neighbour ARGV...")
    if os.fork() == 0:
        _spin()
    # the server takes this process's place: the loop is its child
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
