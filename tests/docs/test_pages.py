"""The docs pages' examples run as written, and the large examples they include from
docs/examples/ are what handler-kit generates today."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.docs.pages import DOCS, EXAMPLES, REPO, blocks, included, page, section

BASE = "https://hooks.example.com"


def _refund_gate_runbear_mcp() -> Any:
    from example_servers import refund_gate
    from handler_kit.runbear.generate import runbear_document

    return runbear_document(
        refund_gate.app, transport="mcp", mcp_server="refund-gate", base_url=BASE
    ).document


def _refund_gate_claude_code() -> Any:
    from example_servers import refund_gate
    from handler_kit.claude_code.settings import claude_code_hooks

    warnings: list[str] = []
    hooks = claude_code_hooks(
        refund_gate.app,
        "example_servers.refund_gate:app",
        base_url=BASE,
        # command entries name the interpreter that runs handler-kit: the page shows a sample one
        python="/home/dana/refunds/.venv/bin/python",
        warn=warnings.append,
    )
    assert len(warnings) == 1  # SessionStart is written as a command hook, and says so
    return hooks


def _context_loader_runbear() -> Any:
    from example_servers import context_loader
    from handler_kit.runbear.generate import runbear_document

    return runbear_document(context_loader.app, base_url=BASE).document


# docs/examples/NAME -> what makes it: the function behind the `handler-kit document` command
# the page quotes
GENERATED: dict[str, Callable[[], Any]] = {
    "refund-gate-runbear-mcp.json": _refund_gate_runbear_mcp,
    "refund-gate-claude-code.json": _refund_gate_claude_code,
    "context-loader-runbear.json": _context_loader_runbear,
}


def test_handlers_section_examples_run() -> None:
    code = blocks(section("handlers", "handlers.md"), "python")
    assert len(code) == 2
    namespace: dict[str, object] = {"__name__": "docs_handlers"}
    # the first block defines an app; the test-client block imports the example module's
    # app, so run it against the page's own app instead
    exec(compile(code[0], "docs/handlers.md:handlers[0]", "exec"), namespace)
    client_block = code[1].replace("from example_servers.refund_gate import app\n", "")
    assert client_block != code[1]
    exec(compile(client_block, "docs/handlers.md:handlers[1]", "exec"), namespace)


def test_testing_section_example_runs() -> None:
    (code,) = blocks(section("testing", "handlers.md"), "python")
    namespace: dict[str, Any] = {"__name__": "docs_testing"}
    exec(compile(code, "docs/handlers.md:testing", "exec"), namespace)
    assert namespace["server"].url.startswith("http://127.0.0.1:")


def test_configuration_examples_run() -> None:
    (code,) = blocks(page("configuration.md"), "python")
    namespace: dict[str, Any] = {"__name__": "docs_configuration"}
    exec(compile(code, "docs/configuration.md", "exec"), namespace)
    assert namespace["config"].operations.metrics is True
    assert namespace["asgi"] is not None


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_example_file_is_what_the_command_prints(name: str) -> None:
    # the command prints ``json.dumps(..., indent=2)`` and a newline: the file is that, byte for
    # byte, so regenerating it with the command shown on the page changes nothing
    expected = json.dumps(GENERATED[name](), indent=2, ensure_ascii=False) + "\n"
    assert (EXAMPLES / name).read_text(encoding="utf-8") == expected, (
        f"docs/examples/{name} is not what handler-kit generates: regenerate it with the "
        "command its page shows"
    )


def test_every_example_is_shown_and_every_include_exists() -> None:
    shown: set[Path] = set()
    for path in DOCS.glob("*.md"):
        for include in included(path.read_text(encoding="utf-8")):
            assert include.is_file(), f"{path.name} includes {include}, which does not exist"
            shown.add(include)
    examples = set(EXAMPLES.iterdir())
    assert examples == set(REPO / "docs" / "examples" / name for name in GENERATED)
    assert examples <= shown, f"not included by any page: {sorted(examples - shown)}"
