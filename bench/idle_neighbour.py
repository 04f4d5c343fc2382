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
import ctypes
import os
import signal
import sys


def _spin() -> None:
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)
    while True:
        pass


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m bench.idle_neighbour ARGV...")
    if os.fork() == 0:
        _spin()
    # the server takes this process's place: the loop is its child
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
