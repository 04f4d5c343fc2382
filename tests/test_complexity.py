"""No function of the package above a cyclomatic complexity of 25 (radon), but the fenced MCP
fast path: a function that long has more paths than its tests walk."""

from __future__ import annotations

from bench import speed_lines
from bench.complexity import FENCED, LIMIT, complexities


def test_no_function_above_the_limit() -> None:
    over = [
        f"{module}:{name} has {value}" for module, name, value in complexities() if value > LIMIT
    ]
    assert over == [], f"cyclomatic complexity above {LIMIT} (split them): {over}"


def test_the_fenced_module_is_the_only_one_left_out() -> None:
    modules = {module for module, _, _ in complexities()}
    assert FENCED not in modules
    assert "handler_kit/core/app.py" in modules
    assert "handler_kit/server/webhook.py" in modules


def test_the_speed_only_lines_are_counted_from_the_fast_modules() -> None:
    found = {module: lines for module, lines, _ in speed_lines.counted()}
    assert FENCED in found
    assert "handler_kit/core/_fast_coroutines.py" in found
    assert all(lines > 0 for lines in found.values())
    total = sum(found.values())
    assert total < speed_lines.TARGET, f"{total} speed-only lines: {found}"
    assert f"{total:,}" in speed_lines.summary()
