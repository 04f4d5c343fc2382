"""What the processes of one test run share: ``make test`` runs the suite in several workers
(pytest-xdist), each a session of its own, so a session fixture that builds something costly
(the checkout's wheel, the sources' bytecode) would build it once per worker, each build
competing with the other workers' tests for the same cores. :func:`run_wide` gives such a
fixture one folder for the whole run and the lock that lets one worker build while the others
wait for its result."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def run_wide(factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """The folder ``name`` of this run, held locked for the block: in a worker, beside the
    workers' own temporary folders (pytest-xdist puts them all in the run's); in a run
    without workers, in the session's."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    with (base / f"{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released as the file closes
        folder = base / name
        folder.mkdir(exist_ok=True)
        yield folder
