"""No function of the package above a cyclomatic complexity of 25 (radon), but the fenced MCP
fast path: a function that long has more paths than its tests walk."""

from __future__ import annotations

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
