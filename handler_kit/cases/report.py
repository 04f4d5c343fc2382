"""Running case files against a target, and the two reports: text for a terminal (one line a
case, the differences under a failed one, a summary) and JUnit XML for CI."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from handler_kit.cases.comparison import Mismatch, compare
from handler_kit.cases.files import CaseFile
from handler_kit.cases.model import Case
from handler_kit.cases.targets import Target

# ``not_played``: a case a real agent cannot be driven to play (``handler-kit test --runtime``);
# never counted as passed
Verdict = Literal["passed", "failed", "error", "not_played"]
_WORDS: dict[str, str] = {
    "passed": "PASS",
    "failed": "FAIL",
    "error": "ERROR",
    "not_played": "NOT PLAYED",
}


@dataclass(frozen=True)
class CaseResult:
    """One case's verdict: ``failed`` when the answer differs from the expectation, ``error``
    when there was no answer to compare, ``not_played`` when the case could not be played
    through a real agent (the mismatch then says why)."""

    file: CaseFile
    case: Case
    verdict: Verdict
    mismatches: tuple[Mismatch, ...] = ()
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"

    @property
    def failed(self) -> bool:
        """Whether the case fails a run: ``failed`` or ``error`` (``not_played`` does not,
        unless the caller is strict)."""
        return self.verdict in ("failed", "error")

    @property
    def label(self) -> str:
        return f"{self.file.path}::{self.case.name}"

    def diff(self) -> list[str]:
        """The differences, one line each, in case order."""
        return [str(m) for m in self.mismatches]


def run_case(case_file: CaseFile, case: Case, target: Target) -> CaseResult:
    started = time.perf_counter()
    answer = target.answer(case)
    mismatches = tuple(compare(case.expect, answer))
    verdict: Verdict = "error" if answer.error else "failed" if mismatches else "passed"
    return CaseResult(case_file, case, verdict, mismatches, time.perf_counter() - started)


def run_file(case_file: CaseFile, target: Target) -> list[CaseResult]:
    return [run_case(case_file, case, target) for case in case_file.cases]


@dataclass
class Summary:
    results: list[CaseResult] = field(default_factory=list)

    def count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.results if r.verdict == verdict)

    @property
    def ok(self) -> bool:
        return all(r.passed for r in self.results)


def text_report(results: Iterable[CaseResult]) -> str:
    """``PASS``/``FAIL``/``ERROR`` and the case, the differences indented under it, then the
    totals."""
    summary = Summary(list(results))
    lines: list[str] = []
    for result in summary.results:
        lines.append(f"{_WORDS[result.verdict]:<5} {result.label}")
        lines.extend(f"      {line}" for line in result.diff())
    files = len({id(r.file) for r in summary.results})
    total = len(summary.results)
    counts = [f"{summary.count('passed')} passed", f"{summary.count('failed')} failed"]
    errors = summary.count("error")
    if errors:
        counts.append(f"{errors} error{'s' * (errors != 1)}")
    not_played = summary.count("not_played")
    if not_played:
        counts.append(f"{not_played} not played")
    lines.append("")
    lines.append(
        f"{', '.join(counts)} ({total} case{'s' * (total != 1)} in {files} "
        f"file{'s' * (files != 1)})"
    )
    return "\n".join(lines) + "\n"


def junit_report(results: Iterable[CaseResult], *, name: str = "handler-kit test") -> bytes:
    """JUnit XML: one ``testsuite`` per file, one ``testcase`` per case, a ``failure`` or an
    ``error`` element carrying the differences."""
    summary = Summary(list(results))
    root = ET.Element("testsuites", name=name)
    suites: dict[int, tuple[ET.Element, list[CaseResult]]] = {}
    for result in summary.results:
        key = id(result.file)
        if key not in suites:
            suite = ET.SubElement(root, "testsuite", name=str(result.file.path))
            suites[key] = (suite, [])
        suite, members = suites[key]
        members.append(result)
        testcase = ET.SubElement(
            suite,
            "testcase",
            classname=result.file.path.stem,
            name=result.case.name,
            file=str(result.file.path),
            time=f"{result.seconds:.3f}",
        )
        if not result.passed:
            diff = result.diff()
            tag = {"failed": "failure", "error": "error", "not_played": "skipped"}[result.verdict]
            problem = ET.SubElement(testcase, tag, message=diff[0])
            problem.text = "\n".join(diff)
    for suite, members in suites.values():
        _counts(suite, members)
    _counts(root, summary.results)
    ET.indent(root)
    xml: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return xml + b"\n"


def _counts(element: ET.Element, results: list[CaseResult]) -> None:
    element.set("tests", str(len(results)))
    element.set("failures", str(sum(1 for r in results if r.verdict == "failed")))
    element.set("errors", str(sum(1 for r in results if r.verdict == "error")))
    element.set("skipped", str(sum(1 for r in results if r.verdict == "not_played")))
    element.set("time", f"{sum(r.seconds for r in results):.3f}")
