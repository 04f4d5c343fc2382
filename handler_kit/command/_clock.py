"""How much of the runtime's timeout a command hook's process has used before it ran.

A runtime's timeout starts when it spawns the process; the interpreter's start and the app's
import come out of it. On a loaded machine they take a second or more, so a deadline counted
from inside the process would land after the runtime had given up and let the call through.
Standard library only: the forwarder imports this and starts at bare Python's pace.
"""

from __future__ import annotations

import os


def since_process_start() -> float:
    """Seconds since this process was spawned (Linux's ``/proc``), else 0."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            # the command name (field 2) may hold spaces and parentheses: count from its end
            start_ticks = int(stat.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as uptime:
            now = float(uptime.read().split()[0])
        return max(0.0, now - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0
