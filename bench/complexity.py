"""Cyclomatic complexity of the package's functions (radon), as ``make bench`` reports it.

``python -m bench.complexity`` prints every function of ``handler_kit/`` above the limit, and
one line: the worst function outside the fenced MCP fast path and how many are above the
limit. The fenced module (a private copy of the SDK's request handling, pinned to its version
and disabled on any other) is left out: its one long function mirrors the SDK's own.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "handler_kit"
LIMIT = 25
# the one module allowed above the limit (see the module docstring)
FENCED = "handler_kit/server/mcp/_fast_path.py"


def complexities(package: Path = PACKAGE) -> list[tuple[str, str, int]]:
    """(module path relative to the repository, function's qualified name, complexity) of
    every function and method of ``package``, the fenced module left out; worst first."""
    from radon.complexity import cc_visit

    found: list[tuple[str, str, int]] = []
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        if module == FENCED:
            continue
        for block in cc_visit(path.read_text(encoding="utf-8")):
            if type(block).__name__ == "Class":
                # a class's methods are listed on their own; its own figure is their mean
                for method in block.methods:
                    found.append((module, f"{block.name}.{method.name}", method.complexity))
            else:
                found.append((module, block.name, block.complexity))
    found.sort(key=lambda item: -item[2])
    return found


def summary(limit: int = LIMIT) -> str:
    """One line: the worst function and the count above ``limit``."""
    try:
        found = complexities()
    except ImportError:
        return "complexity: n/a (radon is not installed: pip install -e '.[dev]')"
    module, name, worst = found[0]
    over = sum(1 for *_, value in found if value > limit)
    verdict = "PASS" if worst <= limit else "MISS"
    return (
        f"  {verdict}  cyclomatic complexity, worst function        {worst} "
        f"({module}:{name}; target <= {limit}, {FENCED} left out), {over} above {limit}"
    )


def main() -> int:
    for module, name, value in complexities():
        if value > LIMIT:
            print(f"{value:4d}  {module}:{name}")
    print(summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
