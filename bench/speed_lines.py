"""Library lines that exist only for speed, counted from the modules whose names say so.

Code that exists only to make an answer cheaper (a second way to do what the general path
already does) lives in a module whose file name starts with ``_fast``: the fenced MCP fast path,
``handler_kit/server/mcp/_fast_path.py``, and ``handler_kit/core/_fast_coroutines.py`` (an
async handler that cannot suspend is awaited without a timer; a command hook's answer that
cannot suspend is driven without an event loop). ``python -m bench.speed_lines`` lists each
such module with its physical lines and its source lines (radon's raw SLOC: no blank, comment
or docstring line), then one line, the total against the target, which ``make bench`` prints
too.

The count is only as good as the convention: code written for speed outside a ``_fast`` module
is not seen here, which is why every such module says what it duplicates and why.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "handler_kit"
PREFIX = "_fast"
# physical lines over every speed-only module
TARGET = 700


def speed_modules(package: Path = PACKAGE) -> list[Path]:
    """Every module of ``package`` whose name says it exists for speed."""
    return sorted(path for path in package.rglob(f"{PREFIX}*.py"))


def counted(package: Path = PACKAGE) -> list[tuple[str, int, int | None]]:
    """(module relative to the repository, physical lines, source lines or None without
    radon) of every speed-only module."""
    try:
        from radon.raw import analyze
    except ImportError:
        analyze = None
    found: list[tuple[str, int, int | None]] = []
    for path in speed_modules(package):
        text = path.read_text(encoding="utf-8")
        sloc = analyze(text).sloc if analyze is not None else None
        found.append((path.relative_to(ROOT).as_posix(), len(text.splitlines()), sloc))
    return found


def summary(found: list[tuple[str, int, int | None]] | None = None) -> str:
    """One line: the speed-only lines in total, against :data:`TARGET`."""
    if found is None:
        found = counted()
    lines = sum(item[1] for item in found)
    slocs = [item[2] for item in found]
    sloc = "n/a" if None in slocs else f"{sum(s for s in slocs if s is not None):,}"
    verdict = "PASS" if lines < TARGET else "MISS"
    return (
        f"  {verdict}  library lines that exist only for speed     {lines:,} "
        f"({sloc} source lines; {len(found)} modules named {PREFIX}*; target < {TARGET})"
    )


def main() -> int:
    found = counted()
    for module, lines, sloc in found:
        print(f"{lines:5d} lines {sloc if sloc is not None else 'n/a':>5} sloc  {module}")
    print(summary(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
