"""No function of the command hook, the CLI or the MCP mount is more complex than radon's
cyclomatic complexity 25 (the fenced MCP fast path excepted: it mirrors the SDK's request
handling on purpose, pinned by its own tests). A function past it is split along what its
parts mean."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit

PACKAGE = Path(__file__).resolve().parents[1] / "handler_kit"
FOLDERS = ("command", "cli", "server/mcp")
EXCEPTED = {"server/mcp/_fast_path.py"}
LIMIT = 25


def test_no_function_above_the_limit() -> None:
    over = [
        f"{path.relative_to(PACKAGE)}:{block.lineno} {block.fullname} ({block.complexity})"
        for folder in FOLDERS
        for path in sorted((PACKAGE / folder).rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in EXCEPTED
        for block in cc_visit(path.read_text())
        if block.complexity > LIMIT
    ]
    assert over == []
