"""Running the pinned type checkers on the case files, and reading what they report.

Both run strict, on the two case files only (the project's own ``make lint`` checks
handler_kit), with handler_kit's types read but its own errors not reported: what a user of
the package sees. Reports are ``{line: {code, ...}}`` per file, from each checker's JSON
output: codes, never message text.

mypy runs with ``make lint``'s own configuration (pyproject.toml) and cache: its cache entry for
a module holds only while the module's options are the same, so the run ``make test`` makes
right after ``make lint`` reads handler_kit and its dependencies from that cache and checks the
two case files alone, where a configuration of its own would check them all again. handler_kit's
errors are left out of the reports instead (``make lint`` fails on them).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PASS_CASES = HERE / "pass_cases.py"
FAIL_CASES = HERE / "fail_cases.py"
CASE_FILES = (PASS_CASES, FAIL_CASES)
BIN = Path(sys.executable).parent
PACKAGE = REPO / "handler_kit"
# `make lint`'s: mypy run from the repository's root with no --cache-dir writes it there
MYPY_CACHE = REPO / ".mypy_cache"
CHECKER_TIMEOUT = 300
PYRIGHT_CONFIG = {
    "typeCheckingMode": "strict",
    "pythonVersion": "3.11",
    "pythonPlatform": "Linux",
    "extraPaths": [str(REPO)],
}

Report = dict[int, set[str]]
EXPECT = re.compile(r"^\s*# expect (mypy|pyright): (.+)$")


@dataclass
class CheckerRun:
    """One run of a checker over both case files: its reports per file and its raw output."""

    reports: dict[Path, Report]
    output: str


def pinned_version(package: str) -> str:
    """The version the dev extra of pyproject.toml pins ``package`` to (``package==X``)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    for requirement in project["project"]["optional-dependencies"]["dev"]:
        name, _, pinned = requirement.partition("==")
        if name.strip() == package and pinned:
            return pinned.strip()
    raise AssertionError(f"{package} is not pinned (==) in the dev extra of pyproject.toml")


def installed_version(package: str) -> str:
    return version(package)


def expected(path: Path, checker: str) -> Report:
    """``{line: codes}`` from the ``# expect <checker>: CODE, ...`` comments of ``path``; each
    applies to the next line that is not a comment."""
    report: Report = {}
    pending: set[str] = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = EXPECT.match(line)
        if match:
            if match.group(1) == checker:
                pending |= {code.strip() for code in match.group(2).split(",")}
            continue
        if line.strip().startswith("#"):
            continue
        if pending:
            report[number] = pending
            pending = set()
    return report


def start_mypy() -> subprocess.Popen[str]:
    # strict, Python 3.11: the settings of [tool.mypy], whose `packages` apply only when no
    # file is named
    argv = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")]
    argv += ["--cache-dir", str(MYPY_CACHE), "--output", "json", *map(str, CASE_FILES)]
    return subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def start_pyright(workdir: Path) -> subprocess.Popen[str]:
    config = workdir / "pyrightconfig.json"
    config.write_text(json.dumps(PYRIGHT_CONFIG))
    argv = [str(BIN / "pyright"), "-p", str(config), "--pythonpath", sys.executable]
    argv += ["--outputjson", *map(str, CASE_FILES)]
    return subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish_mypy(process: subprocess.Popen[str]) -> CheckerRun:
    output, _ = process.communicate(timeout=CHECKER_TIMEOUT)
    # 0: no error, 1: errors found; anything else is mypy failing to run
    assert process.returncode in (0, 1), f"mypy did not run ({process.returncode}):\n{output}"
    reports: dict[Path, Report] = {path: defaultdict(set) for path in CASE_FILES}
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        error = json.loads(line)
        if error["severity"] != "error":
            continue
        path = (REPO / error["file"]).resolve()
        if path.is_relative_to(PACKAGE):  # handler_kit's own: not what its user sees
            continue
        assert path in reports, f"mypy reported on another file: {line}"
        reports[path][error["line"]].add(error["code"])
    return CheckerRun({path: dict(report) for path, report in reports.items()}, output)


def finish_pyright(process: subprocess.Popen[str]) -> CheckerRun:
    output, errors = process.communicate(timeout=CHECKER_TIMEOUT)
    assert process.returncode in (0, 1), (
        f"pyright did not run ({process.returncode}); it needs Node.js (Debian: nodejs):\n"
        f"{errors}\n{output}"
    )
    reports: dict[Path, Report] = {path: defaultdict(set) for path in CASE_FILES}
    for diagnostic in json.loads(output)["generalDiagnostics"]:
        if diagnostic["severity"] != "error":
            continue
        path = Path(diagnostic["file"]).resolve()
        assert path in reports, f"pyright reported on another file: {diagnostic}"
        line = diagnostic["range"]["start"]["line"] + 1
        reports[path][line].add(diagnostic.get("rule", "(no rule)"))
    return CheckerRun({path: dict(report) for path, report in reports.items()}, output)


def describe(report: Report, path: Path) -> str:
    lines = path.read_text().splitlines()
    return "\n".join(
        f"  {number}: {sorted(codes)}  {lines[number - 1].strip()}"
        for number, codes in sorted(report.items())
    )
