"""The checkers' runs over the case files: mypy and pyright side by side, once per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.typing.support import (
    CheckerRun,
    finish_mypy,
    finish_pyright,
    start_mypy,
    start_pyright,
)


@pytest.fixture(scope="module")
def checkers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, CheckerRun]]:
    """``{"mypy": run, "pyright": run}``, the two started together (each takes seconds)."""
    workdir = tmp_path_factory.mktemp("checkers")
    mypy, pyright = start_mypy(), start_pyright(workdir)
    try:
        yield {"mypy": finish_mypy(mypy), "pyright": finish_pyright(pyright)}
    finally:
        for process in (mypy, pyright):
            if process.poll() is None:
                process.kill()
                process.wait()
