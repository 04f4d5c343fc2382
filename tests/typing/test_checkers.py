"""What a user's type checker says about the typed API: correct uses check clean, each wrong use
gets exactly its expected codes, under the pinned mypy and pyright, both strict."""

from __future__ import annotations

import pytest

from tests.typing.support import (
    FAIL_CASES,
    PASS_CASES,
    CheckerRun,
    describe,
    expected,
    installed_version,
    pinned_version,
)

CHECKERS = ("mypy", "pyright")
# the checkers' runs: seconds each, started once for the module
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("checker", CHECKERS)
def test_the_checker_is_the_pinned_one(checker: str) -> None:
    """Codes are stable within a release; a new one may add or rename some."""
    assert installed_version(checker) == pinned_version(checker)


@pytest.mark.parametrize("checker", CHECKERS)
def test_correct_uses_check_clean(checkers: dict[str, CheckerRun], checker: str) -> None:
    run = checkers[checker]
    report = run.reports[PASS_CASES]
    assert not report, f"{checker} flags correct uses:\n{describe(report, PASS_CASES)}"


@pytest.mark.parametrize("checker", CHECKERS)
def test_each_wrong_use_gets_exactly_its_codes(
    checkers: dict[str, CheckerRun], checker: str
) -> None:
    want = expected(FAIL_CASES, checker)
    assert len(want) >= 15  # the comments were read
    got = checkers[checker].reports[FAIL_CASES]
    assert got == want, (
        f"{checker} reports differ.\nexpected:\n{describe(want, FAIL_CASES)}\n"
        f"got:\n{describe(got, FAIL_CASES)}"
    )
