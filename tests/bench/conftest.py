"""The benchmark suite under test: ``python -m bench --quick --no-chart`` as a subprocess."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import REPO, Process, process


@pytest.fixture
def quick_bench(tmp_path: Path) -> Iterator[Process]:
    """``python -m bench --quick --no-chart`` started, writing its JSON into ``tmp_path``; the
    test waits for it. Stopped at teardown if it is still running."""
    argv = [sys.executable, "-m", "bench", "--quick", "--no-chart", "--out", str(tmp_path)]
    # the bench stops its servers on SIGTERM, which the helper sends to its whole group
    with process(argv, dict(os.environ), REPO) as bench:
        yield bench
