"""Policy tests as data: case files (an event and the answer expected to it) run against a
HookApp in process, a server at a URL, or a hooks document through the reference dispatcher.

``handler-kit test`` runs them from a shell; the pytest plugin
(:mod:`handler_kit.cases.pytest_plugin`) collects ``hookcases_*`` files as test items.

Names are imported on first use (PEP 562): the pytest plugin imports this package in every
pytest run of every project that has handler-kit installed, and needs none of it until a case
file is collected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handler_kit.cases.comparison import Answer, Mismatch, compare
    from handler_kit.cases.files import CaseFile, CaseFileError, find_case_files, load_case_file
    from handler_kit.cases.model import Case, Expect
    from handler_kit.cases.patterns import is_case_file
    from handler_kit.cases.report import (
        CaseResult,
        junit_report,
        run_case,
        run_file,
        text_report,
    )
    from handler_kit.cases.targets import ClientTarget, DocumentTarget, Target

_LAZY = {
    "Answer": "handler_kit.cases.comparison",
    "Mismatch": "handler_kit.cases.comparison",
    "compare": "handler_kit.cases.comparison",
    "CaseFile": "handler_kit.cases.files",
    "CaseFileError": "handler_kit.cases.files",
    "find_case_files": "handler_kit.cases.files",
    "load_case_file": "handler_kit.cases.files",
    "Case": "handler_kit.cases.model",
    "Expect": "handler_kit.cases.model",
    "is_case_file": "handler_kit.cases.patterns",
    "CaseResult": "handler_kit.cases.report",
    "junit_report": "handler_kit.cases.report",
    "run_case": "handler_kit.cases.report",
    "run_file": "handler_kit.cases.report",
    "text_report": "handler_kit.cases.report",
    "ClientTarget": "handler_kit.cases.targets",
    "DocumentTarget": "handler_kit.cases.targets",
    "Target": "handler_kit.cases.targets",
}

__all__ = [
    "Answer",
    "Case",
    "CaseFile",
    "CaseFileError",
    "CaseResult",
    "ClientTarget",
    "DocumentTarget",
    "Expect",
    "Mismatch",
    "Target",
    "compare",
    "find_case_files",
    "is_case_file",
    "junit_report",
    "load_case_file",
    "run_case",
    "run_file",
    "text_report",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'handler_kit.cases' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
