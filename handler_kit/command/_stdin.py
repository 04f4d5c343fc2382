"""The hook input a command hook reads from its stdin.

Standard library only: the forwarder imports this and starts at bare Python's pace.
"""

from __future__ import annotations

import sys


def read_stdin() -> bytes:
    """The hook input; empty when there is none to read (stdin closed, a directory, a read
    error), which a gate answers as an input it cannot read, with its safe decision: a crash
    here would exit 1, which every runtime lets through."""
    try:
        return sys.stdin.buffer.read()
    except (AttributeError, OSError, ValueError):  # sys.stdin is None when fd 0 is closed
        return b""
