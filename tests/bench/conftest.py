"""The benchmark suite under test: ``python -m bench --quick --no-chart`` as a subprocess."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import REPO, Process, process


@pytest.fixture
def quick_bench(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Process]:
    """``python -m bench --quick --no-chart`` started, writing its JSON into ``tmp_path``; the
    test waits for it. Stopped at teardown if it is still running. Its audit section makes
    its PostgreSQL database on the session's server, rather than start one of its own."""
    argv = [sys.executable, "-m", "bench", "--quick", "--no-chart", "--out", str(tmp_path)]
    env = dict(os.environ)
    # without PostgreSQL here the fixture skips: the bench's audit_postgres row is n/a then
    with contextlib.suppress(pytest.skip.Exception):
        env["BENCH_POSTGRES_URL"] = request.getfixturevalue("postgres_server_url")
    # the bench stops its servers on SIGTERM, which the helper sends to its whole group
    with process(argv, env, REPO) as bench:
        yield bench
