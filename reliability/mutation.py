"""Mutation testing of the answer path: ``make mutation``.

Runs mutmut over the modules of ``[tool.mutmut] only_mutate`` (pyproject.toml). mutmut first
runs the selected test folders once, unmutated, recording which tests call each function; each
mutant then runs only those tests, in a forked worker, stopping at the first failure. The run
prints, per module, the mutants generated, killed, survived, timed out and left without a
covering test, the kill rate and the time, writes ``reliability/results/mutation.json`` and the
mutation section of ``docs/reliability.md`` (between its markers).

Child processes that tests start (``python -m handler_kit``, ``handler-kit serve``, the command
hook) import the mutated tree too: the run puts ``mutants/`` first on ``PYTHONPATH`` and mutmut
names the mutant under test in the environment they inherit. Which tests run for a mutant is
decided in-process only, so a test that reaches a function only through a child is not chosen
for that function's mutants.

A survivor that no test can kill, because it does not change what the code does, is argued in
``tests/mutation/equivalent.txt``, one line per mutant: ``<mutant name>: <why>``. It counts as
equivalent, not as a survivor, and the report says so.

``--report`` reads the results of the last run (``mutants/``) without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reliability.run import RESULTS, ROOT, machine, write_doc

START, END = "<!-- mutation:start -->", "<!-- mutation:end -->"
EQUIVALENT = ROOT / "tests" / "mutation" / "equivalent.txt"
MUTANTS = ROOT / "mutants"
TIMING = MUTANTS / "handler-kit-run.json"
SITE = Path(__file__).resolve().parent / "mutation_site"

# mutmut's exit codes per mutant (mutmut/stats.py), folded into the columns of the report.
KILLED = {1, 3}
SURVIVED = {0}
NO_TESTS = {5, 33}
TIMEOUT = {36, 24, -24, 152, 255}
NOT_CHECKED = {None}


def status(exit_code: int | None) -> str:
    if exit_code in KILLED:
        return "killed"
    if exit_code in SURVIVED:
        return "survived"
    if exit_code in NO_TESTS:
        return "no tests"
    if exit_code in TIMEOUT:
        return "timeout"
    if exit_code in NOT_CHECKED:
        return "not checked"
    return "suspicious"


def module_of(mutant: str) -> str:
    """``handler_kit.core.app.xǁHookAppǁanswer__mutmut_3`` -> ``handler_kit.core.app``."""
    head = mutant.split("__mutmut_")[0]
    return head.rpartition(".")[0]


def read_equivalents(text: str) -> dict[str, str]:
    """``<mutant>: <reason>`` per line; blank lines and ``#`` comments are skipped. A line
    without a reason is an error: an equivalence is an argument, never a bare name."""
    found: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, reason = line.partition(": ")
        if not sep or not reason.strip() or "__mutmut_" not in name:
            raise ValueError(f"{EQUIVALENT.name}:{number}: expected '<mutant>: <reason>'")
        found[name.strip()] = reason.strip()
    return found


@dataclass
class Module:
    name: str
    counts: dict[str, int] = field(default_factory=dict)
    survivors: list[str] = field(default_factory=list)
    equivalent: list[str] = field(default_factory=list)
    # the run this row comes from when it is not the last one: its date, machine, time, tested
    measured: dict[str, Any] | None = None

    @property
    def generated(self) -> int:
        return sum(self.counts.values())

    @property
    def detected(self) -> int:
        """Killed, or hung until mutmut's CPU limit (a test that never ends is a failure)."""
        return self.counts.get("killed", 0) + self.counts.get("timeout", 0)


def tally(exit_codes: Mapping[str, int | None], equivalents: Mapping[str, str]) -> list[Module]:
    """Per module, the mutants of each status; survivors argued equivalent in a column of
    their own."""
    modules: dict[str, Module] = {}
    for mutant, code in sorted(exit_codes.items()):
        module = modules.setdefault(module_of(mutant), Module(module_of(mutant)))
        kind = status(code)
        if kind == "survived" and mutant in equivalents:
            kind = "equivalent"
            module.equivalent.append(mutant)
        elif kind == "survived":
            module.survivors.append(mutant)
        module.counts[kind] = module.counts.get(kind, 0) + 1
    return list(modules.values())


def read_meta(folder: Path) -> dict[str, int | None]:
    """Every mutant's exit code from mutmut's ``*.meta`` files under ``folder``."""
    codes: dict[str, int | None] = {}
    for meta in sorted(folder.rglob("*.py.meta")):
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    return codes


COLUMNS = ("killed", "timeout", "survived", "equivalent", "no tests", "not checked", "suspicious")


def rate(detected: int, generated: int) -> str:
    return f"{100 * detected / generated:.1f}%" if generated else "-"


def earlier(run: Mapping[str, Any]) -> str:
    """An earlier run, as a row carried from it is labelled."""
    return (
        f"measured {run['date']} on {run['machine']} by `make mutation` "
        f"({run['seconds'] / 60:.1f} min; tested: {run['tested']})"
    )


def run_of(report: Mapping[str, Any]) -> dict[str, Any]:
    """A run as a row names it: its date, machine, time, whether stopped (what it tested is
    added as ``tested``, one line, rather than all its patterns)."""
    return {k: v for k, v in report.items() if k not in ("modules", "patterns", "files", "tests")}


def carried(modules: list[Module], before: Mapping[str, Any], files: Iterable[str]) -> list[Module]:
    """``modules`` and, after them, the rows of the last report (``before``) for the modules of
    ``files`` this run did not test, each with the run it was measured in: the table covers
    every module, and says which row comes from which run."""
    names = {Path(f).with_suffix("").as_posix().replace("/", ".") for f in files}
    names -= {m.name for m in modules}
    kept = [
        Module(
            row["name"],
            dict(row["counts"]),
            list(row["survivors"]),
            measured=row.get("measured")
            or {**run_of(before), "tested": tested(before["patterns"])},
        )
        for row in before.get("modules", ())
        if row["name"] in names
    ]
    return modules + kept


def render(modules: Iterable[Module], seconds: float | None, header: str) -> str:
    modules = list(modules)
    lines = [
        header,
        "",
        "| module | generated | " + " | ".join(COLUMNS) + " | kill rate |",
        "|---|" + "---|" * (len(COLUMNS) + 2),
    ]
    total = Module("all")
    for module in modules:
        cells = [str(module.counts.get(c, 0)) for c in COLUMNS]
        mark = " *" if module.measured else ""
        lines.append(
            f"| `{module.name}`{mark} | {module.generated} | "
            + " | ".join(cells)
            + f" | {rate(module.detected, module.generated)} |"
        )
        for kind, count in module.counts.items():
            total.counts[kind] = total.counts.get(kind, 0) + count
        total.survivors += module.survivors
    cells = [str(total.counts.get(c, 0)) for c in COLUMNS]
    lines.append(
        f"| all | {total.generated} | "
        + " | ".join(cells)
        + f" | {rate(total.detected, total.generated)} |"
    )
    lines.append("")
    took = f" in {seconds / 60:.1f} min" if seconds is not None else ""
    lines.append(
        f"Kill rate{took}: {rate(total.detected, total.generated)} of the generated mutants "
        f"killed or timed out; {total.counts.get('equivalent', 0)} argued equivalent "
        f"(tests/mutation/equivalent.txt)."
    )
    runs = {earlier(m.measured): m.measured["seconds"] for m in modules if m.measured}
    for label in runs:
        lines.append("")
        lines.append(f"\\* Not tested in this run, the row of an earlier one: {label}.")
    if runs and seconds is not None:
        lines.append("")
        together = (seconds + sum(runs.values())) / 60
        lines.append(f"This run and the earlier ones together: {together:.1f} min.")
    if total.survivors:
        lines.append("")
        lines.append("Survivors without a test or an argument yet (`mutmut show NAME`):")
        lines.append("")
        lines += [f"- `{name}`" for name in total.survivors]
    return "\n".join(lines)


def child_environment(base: Mapping[str, str]) -> dict[str, str]:
    """mutmut's environment, inherited by every process a test starts: the mutated tree first
    on the path, then the start-up file that keeps those children out of stats mode."""
    env = dict(base)
    parts = (str(MUTANTS), str(SITE), env.get("PYTHONPATH", ""))
    env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return env


def run_mutmut(patterns: list[str], children: int, where: str) -> dict[str, Any]:
    """Run mutmut; what it ran, on what and how long, as the report reads it later."""
    command = [str(Path(sys.executable).parent / "mutmut"), "run", "--max-children", str(children)]
    started = time.monotonic()
    env = child_environment(os.environ)
    # mutants/ must exist when mutmut's interpreter starts: a path entry that is not a folder
    # yet gets no finder (None in sys.path_importer_cache), and the mutated tree copied there
    # later stays unimportable in that process, so its first pytest run cannot load
    # tests/conftest.py ("No module named 'tests'") and stops with a usage error.
    MUTANTS.mkdir(exist_ok=True)
    try:
        subprocess.run([*command, *patterns], cwd=ROOT, env=env, check=True)
        stopped = False
    except KeyboardInterrupt:
        # Ctrl-C: mutmut saved each mutant's result as it came; the report shows those, the
        # others as not checked, and says that the run was stopped
        stopped = True
    run = {
        "seconds": time.monotonic() - started,
        "stopped": stopped,
        "date": time.strftime("%Y-%m-%d"),
        "machine": where,
        "patterns": patterns,
        **settings((ROOT / "pyproject.toml").read_text()),
    }
    if patterns and TIMING.exists():
        run = joined(json.loads(TIMING.read_text()), run)
    TIMING.write_text(json.dumps(run) + "\n")
    return run


def joined(before: Mapping[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """A run of some modules (patterns) after runs of others: the report covers them all, so
    their times add up and their patterns are listed together."""
    if not before.get("patterns"):
        return run
    patterns = [*before["patterns"], *(p for p in run["patterns"] if p not in before["patterns"])]
    stopped = bool(before.get("stopped")) or bool(run.get("stopped"))
    seconds = before["seconds"] + run["seconds"]
    return {**run, "seconds": seconds, "patterns": patterns, "stopped": stopped}


def settings(pyproject: str) -> dict[str, list[str]]:
    config = tomllib.loads(pyproject)["tool"]["mutmut"]
    return {"files": config["only_mutate"], "tests": config["pytest_add_cli_args_test_selection"]}


def tested(patterns: list[str]) -> str:
    """The patterns of the runs, with mutants named one by one (survivors run again after
    their tests were written) counted rather than listed."""
    named = [p for p in patterns if "__mutmut_" in p]
    shown = [f"`{p}`" for p in patterns if "__mutmut_" not in p]
    if named:
        shown.append(f"{len(named)} survivors run again by name")
    return ", ".join(shown) or "all"


STOPPED = ", stopped before its end: the mutants not checked were not run"


def header(run: Mapping[str, Any]) -> str:
    mutants = tested(run["patterns"])
    return (
        f"Measured {run['date']} on {run['machine']} by `make mutation` "
        f"({run['seconds'] / 60:.1f} min{STOPPED if run.get('stopped') else ''}): mutants of "
        f"{', '.join(f'`{f}`' for f in run['files'])} (tested: {mutants}), each against the "
        f"tests of {', '.join(f'`{t}`' for t in run['tests'])} that call its function."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reliability.mutation", description=__doc__)
    parser.add_argument(
        "patterns",
        nargs="*",
        help="mutant name patterns for mutmut (e.g. 'handler_kit.core.merge*'); default: all",
    )
    parser.add_argument("--report", action="store_true", help="report the last run, run nothing")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/reliability.md")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    options = parser.parse_args(argv)
    if options.report:
        run = json.loads(TIMING.read_text())
    else:
        run = run_mutmut(options.patterns, options.max_children, machine())
    equivalents = read_equivalents(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {}
    # a run of some modules only (patterns) leaves the others' mutants not checked: not shown
    modules = [
        m
        for m in tally(read_meta(MUTANTS / "handler_kit"), equivalents)
        if m.counts.get("not checked", 0) < m.generated
    ]
    report = RESULTS / "mutation.json"
    if report.exists():
        modules = carried(modules, json.loads(report.read_text()), run["files"])
    text = render(modules, run["seconds"], header(run))
    print(text)
    RESULTS.mkdir(exist_ok=True)
    this_run = {**run_of(run), "tested": tested(run["patterns"])}
    report.write_text(
        json.dumps(
            {
                **run,
                "modules": [
                    {
                        "name": m.name,
                        "counts": m.counts,
                        "survivors": m.survivors,
                        "measured": m.measured or this_run,
                    }
                    for m in modules
                ],
            },
            indent=2,
        )
        + "\n"
    )
    if not options.no_doc:
        write_doc(text, START, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
