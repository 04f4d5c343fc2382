"""pytest collects case files: every ``hookcases_*.json``, ``.jsonl``, ``.yaml`` or ``.yml``
file is a test file, each of its cases a test item named by the case's name, run in process
against a HookApp (as ``handler-kit test --app`` runs it) and failed with the same differences.

The app is, in order: the file's own ``app`` key (a file that is a mapping with ``app`` and
``cases``), the ``--hookcases-app MODULE:ATTR`` option, the ``hookcases_app`` ini option
(``[tool.pytest.ini_options]`` in pyproject.toml, or pytest.ini).

Installed with handler-kit (a ``pytest11`` entry point of its own, beside the fixtures' one:
this plugin sits above :mod:`handler_kit.testing`, whose client it runs cases with). pytest
loads it in every run of every project that has handler-kit installed and asks it about every
file, so it imports nothing but the standard library's name check until a case file is
collected.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from handler_kit.cases.patterns import is_case_file

if TYPE_CHECKING:
    from handler_kit.cases.files import CaseFile
    from handler_kit.cases.model import Case
    from handler_kit.cases.report import CaseResult
    from handler_kit.cases.targets import ClientTarget

INI_APP = "hookcases_app"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_APP,
        "MODULE:ATTR of the HookApp that hookcases_* files are run against",
        default="",
    )
    parser.getgroup("handler-kit").addoption(
        "--hookcases-app",
        dest="hookcases_app",
        metavar="MODULE:ATTR",
        default=None,
        help="the HookApp hookcases_* files without an 'app' key are run against "
        "(default: the hookcases_app ini option)",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> HookCasesFile | None:
    if is_case_file(file_path):
        return HookCasesFile.from_parent(parent, path=file_path)
    return None


class CaseFailed(Exception):
    """A case whose answer is not the expected one (or that got none)."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.label)
        self.result = result


class NoApp(Exception):
    """No app to run a case file against, or one that cannot be loaded."""


class HookCasesFile(pytest.File):
    """One case file; the app it is run against is loaded when its first case runs, and its
    client closed when its last case is done."""

    case_file: CaseFile
    _target: ClientTarget | None = None

    def collect(self) -> Iterator[HookCaseItem]:
        from handler_kit.cases.files import CaseFileError, load_case_file

        try:
            self.case_file = load_case_file(self.path)
        except CaseFileError as exc:
            # pytest shows a CollectError's message alone, without a traceback
            raise self.CollectError(str(exc)) from None
        for case in self.case_file.cases:
            yield HookCaseItem.from_parent(self, name=case.name, case=case)

    def app_spec(self) -> str:
        spec = (
            self.case_file.app
            or self.config.getoption("hookcases_app")
            or str(self.config.getini(INI_APP) or "")
        )
        if not spec:
            raise NoApp(
                f"{self.path.name}: no app to run the cases against: give the file an 'app' "
                f"key, or set {INI_APP} = MODULE:ATTR in the pytest configuration, or pass "
                "--hookcases-app MODULE:ATTR"
            )
        return spec

    def target(self) -> ClientTarget:
        if self._target is None:
            from handler_kit.cases.targets import ClientTarget
            from handler_kit.core.loader import LoadError, load_app

            try:
                hook_app = load_app(self.app_spec())
            except LoadError as exc:
                raise NoApp(f"{self.path.name}: {exc}") from None
            self._target = ClientTarget.for_app(hook_app)
        return self._target

    def teardown(self) -> None:
        target, self._target = self._target, None
        if target is not None:
            target.close()


class HookCaseItem(pytest.Item):
    """One case of a case file."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        from handler_kit.cases.report import run_case

        parent = self.parent
        assert isinstance(parent, HookCasesFile)
        result = run_case(parent.case_file, self.case, parent.target())
        if not result.passed:
            raise CaseFailed(result)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> Any:
        error = excinfo.value
        if isinstance(error, CaseFailed):
            result = error.result
            word = "no answer" if result.verdict == "error" else "the answer differs"
            return "\n".join(
                [f"case {self.case.name!r} ({self.case.hook_event_name}): {word}"]
                + [f"    {line}" for line in result.diff()]
            )
        if isinstance(error, NoApp):
            return str(error)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"hook case {self.case.name}"
