"""``python -m tests.fuzz``: the property-based tests of tests/fuzz, run long (``make fuzz``).

Runs pytest on tests/fuzz with the ``fuzz`` profile (tests/fuzz/conftest.py) from a fresh
seed, prints per property how many examples were tried, how many failures were found and how
long it took, and writes the same as JSON for the reliability report::

    python -m tests.fuzz [--examples N] [--seed S] [--summary PATH] [PYTEST ARGS...]

``--examples`` is per property (default 20,000; the properties that send a request through
the app take a share of it, see ``examples()`` in tests/fuzz/support.py). ``--summary``
(or ``HANDLER_KIT_FUZZ_SUMMARY``) is where the JSON goes; without one it is not written.
A failure prints the seed and a ``@reproduce_failure`` blob to replay it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

FOLDER = Path(__file__).resolve().parent


class FuzzReport:
    """A pytest plugin: hypothesis's statistics of every property, kept as numbers."""

    def __init__(self) -> None:
        self.stats: dict[str, dict[str, Any]] = {}
        self.outcomes: dict[str, tuple[str, float]] = {}

    # innermost wrapper, inside hypothesis's own: it sets the statistics collector we chain to
    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        from hypothesis.statistics import collector

        outer = collector.value

        def note(stats: dict[str, Any]) -> None:
            self.stats[item.nodeid] = stats
            if outer is not None:
                outer(stats)

        with collector.with_value(note):
            yield

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self.outcomes[report.nodeid] = (report.outcome, report.duration)

    def properties(self) -> list[dict[str, Any]]:
        rows = []
        for nodeid, (outcome, seconds) in self.outcomes.items():
            stats = self.stats.get(nodeid, {})
            valid = invalid = shrinks = failures = 0
            for phase in ("reuse", "generate", "target", "shrink"):
                data = stats.get(f"{phase}-phase") or {}
                cases = data.get("test-cases", [])
                failures = max(failures, data.get("distinct-failures", 0))
                if phase == "shrink":
                    shrinks += len(cases)
                    continue
                valid += sum(case["status"] == "valid" for case in cases)
                invalid += sum(case["status"] in ("invalid", "overrun") for case in cases)
            if outcome == "failed":
                failures = max(failures, 1)
            rows.append(
                {
                    "property": nodeid.removeprefix("tests/fuzz/"),
                    "outcome": outcome,
                    # examples run to the end (passing, or the failing ones); "invalid" are
                    # draws the strategies threw away before the test ran
                    "examples": valid + failures,
                    "invalid": invalid,
                    "failures": failures,
                    "shrink_steps": shrinks,
                    "seconds": round(seconds, 2),
                    "stopped_because": stats.get("stopped-because"),
                }
            )
        return rows

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        rows = self.properties()
        write = terminalreporter.write_line
        terminalreporter.section("fuzz summary")
        width = max((len(r["property"]) for r in rows), default=10)
        write(f"{'property':<{width}}  {'examples':>9}  {'failures':>8}  {'seconds':>8}")
        for r in rows:
            write(
                f"{r['property']:<{width}}  {r['examples']:>9}  {r['failures']:>8}  "
                f"{r['seconds']:>8.1f}"
            )
        write(
            f"{'total':<{width}}  {sum(r['examples'] for r in rows):>9}  "
            f"{sum(r['failures'] for r in rows):>8}  {sum(r['seconds'] for r in rows):>8.1f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fuzz", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--examples", type=int, default=20_000, help="examples per property")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random)")
    parser.add_argument(
        "--summary",
        default=os.environ.get("HANDLER_KIT_FUZZ_SUMMARY") or None,
        help="write the JSON summary here",
    )
    args, pytest_args = parser.parse_known_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    # read by tests/fuzz/conftest.py when it registers and loads the profiles
    os.environ["HANDLER_KIT_FUZZ_PROFILE"] = "fuzz"
    os.environ["HANDLER_KIT_FUZZ_EXAMPLES"] = str(args.examples)

    report = FuzzReport()
    started = time.perf_counter()
    when = datetime.now(UTC).isoformat(timespec="seconds")
    code = pytest.main(
        [
            str(FOLDER),
            "-q",
            "-p",
            "no:cacheprovider",
            f"--hypothesis-seed={seed}",
            *pytest_args,
        ],
        plugins=[report],
    )
    seconds = time.perf_counter() - started
    print(f"fuzz: seed {seed}, {args.examples} examples per property, {seconds:.0f} s")
    if args.summary:
        import hypothesis

        rows = report.properties()
        summary = {
            "started": when,
            "profile": "fuzz",
            "seed": seed,
            "examples_per_property": args.examples,
            "hypothesis": hypothesis.__version__,
            "python": platform.python_version(),
            "seconds": round(seconds, 1),
            "exit_code": int(code),
            "totals": {
                "properties": len(rows),
                "examples": sum(r["examples"] for r in rows),
                "failures": sum(r["failures"] for r in rows),
            },
            "properties": rows,
        }
        path = Path(args.summary)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary, indent=2) + "\n")
        print(f"fuzz: summary written to {path}")
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
