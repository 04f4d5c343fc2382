"""pytest loads handler-kit's plugins in every run of every project that has it installed: they
must not bring the server stack (starlette, httpx, pydantic) with them."""

from __future__ import annotations

import ast
import subprocess
import sys

HEAVY = ("starlette", "httpx", "pydantic", "uvicorn", "mcp")


def loaded_after(statement: str) -> list[str]:
    code = (
        f"import sys; {statement}; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return list(ast.literal_eval(done.stdout))


def test_the_fixture_plugin_loads_nothing_heavy() -> None:
    assert loaded_after("import handler_kit.testing.pytest_plugin") == []


def test_the_testing_package_loads_its_client_on_first_use() -> None:
    assert loaded_after("import handler_kit.testing") == []
    assert "httpx" in loaded_after("from handler_kit.testing import HookClient")
