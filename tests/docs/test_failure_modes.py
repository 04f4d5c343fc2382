"""docs/failure-modes.md keeps every case: a table per transport, a row per runtime in each, a
cell per failure case in each row, each cell saying what the runtime does and citing a source
the page lists. The tables are read as Markdown, so a lost row, column or citation fails here."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.docs.pages import blocks, page

PAGE = "failure-modes.md"

# the transport -> the heading of its section
TRANSPORTS = {
    "http": "http webhook",
    "mcp_tool": "mcp_tool",
    "command": "command hook",
    "forward": "handler-kit forward",
}
RUNTIMES = ["Runbear", "Claude Code", "Codex", "Posit Assistant", "sandbox runtime"]
CASES = ["crash", "timeout", "outage", "unreadable input", "cannot start"]

# what the runtime does, the first thing each cell says
OUTCOME = re.compile(r"\*\*(open|closed|n/a)\*\*")
CITATION = re.compile(r"\b([RCXPS]\d+)\b")
# a source: a seed document (the runtimes' own pages) or a notes file
SOURCE = re.compile(r"seed 00[0-3]|notes/\w+\.md")


def _sections(text: str, level: int = 2) -> dict[str, str]:
    """The sections of ``level`` in ``text``: heading -> body, up to the next such heading."""
    parts = re.split(rf"^{'#' * level} (.+)$", text, flags=re.M)
    return {heading.strip(): body for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row; ``\\|`` is a pipe inside a cell."""
    inner = line.strip()
    assert inner.startswith("|") and inner.endswith("|"), line
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", inner[1:-1])]


def _tables(text: str) -> list[list[list[str]]]:
    """Every table of ``text``, as rows of cells, the header row first, the rule left out."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            row = _cells(line)
            if not all(re.fullmatch(r":?-+:?", cell) for cell in row):
                current.append(row)
        elif current:
            tables.append(current)
            current = []
    return tables


def _sources() -> dict[str, str]:
    """The Sources table: id -> where it comes from."""
    (table,) = _tables(_sections(page(PAGE))["Sources"])
    assert table[0] == ["id", "source", "what it says"]
    for row in table[1:]:
        assert len(row) == 3, f"source {row[0]} has {len(row)} cells (a pipe in a quote?)"
    return {row[0]: row[1] for row in table[1:]}


def _table(transport: str) -> list[list[str]]:
    sections = _sections(page(PAGE))
    heading = TRANSPORTS[transport]
    assert heading in sections, f"{PAGE} has no '## {heading}' section"
    tables = _tables(sections[heading])
    assert len(tables) == 1, f"the {heading} section has {len(tables)} tables, not one"
    return tables[0]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_table_per_transport_with_a_column_per_case(transport: str) -> None:
    header = _table(transport)[0]
    assert header == ["runtime", *CASES]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_row_per_runtime_and_a_cell_per_case(transport: str) -> None:
    rows = _table(transport)[1:]
    assert [row[0] for row in rows] == RUNTIMES
    for row in rows:
        assert len(row) == 1 + len(CASES), f"{transport}: {row[0]} has {len(row) - 1} cells"
        for case, cell in zip(CASES, row[1:], strict=True):
            assert cell, f"{transport}: {row[0]} / {case} is empty"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_each_cell_says_what_the_runtime_does_and_cites_a_listed_source(transport: str) -> None:
    sources = _sources()
    for row in _table(transport)[1:]:
        for case, cell in zip(CASES, row[1:], strict=True):
            where = f"{transport}: {row[0]} / {case}"
            outcome = OUTCOME.search(cell)
            assert outcome and outcome.start() == 0, f"{where} does not start with its outcome"
            cited = CITATION.findall(cell)
            # an n/a that is handler-kit's own (no server behind a command hook, nothing
            # started per call on a server) has nothing of the runtime to cite
            if outcome.group(1) != "n/a":
                assert cited, f"{where} cites no source"
            for source in cited:
                assert source in sources, f"{where} cites {source}, not in the Sources table"


def test_every_source_names_its_document_and_is_cited() -> None:
    sources = _sources()
    assert sources
    for source, where in sources.items():
        assert SOURCE.search(where), f"source {source} names no seed or notes file: {where}"
    text = page(PAGE).split("\n## Sources\n")[0]
    uncited = [source for source in sources if not re.search(rf"\b{source}\b", text)]
    assert not uncited, f"listed but never cited: {uncited}"


def test_a_way_to_stay_closed_per_runtime() -> None:
    section = _sections(page(PAGE))["How to stay closed"]
    subsections = _sections(section, level=3)
    assert list(subsections) == [*RUNTIMES[:-1], "The sandbox runtime"]
    for runtime, body in subsections.items():
        assert blocks(body, "json") or blocks(body, "python"), f"{runtime} has no snippet"
    assert '"failClosed": true' in subsections["Runbear"]
    assert "forward https://" in subsections["Claude Code"]
    assert "--fail-closed" in subsections["Claude Code"]
    assert "--runtime codex" in subsections["Codex"]
    assert "--runtime posit" in subsections["Posit Assistant"]
    assert '"--runtime", "sandbox"' in subsections["The sandbox runtime"]


def test_the_gate_example_defines_a_fail_closed_gate() -> None:
    section = _sections(page(PAGE))["How to stay closed"]
    code = blocks(section.split("\n### ")[0], "python")
    assert len(code) == 1
    namespace: dict[str, Any] = {"__name__": "docs_failure_modes"}
    exec(compile(code[0], "docs/failure-modes.md:gate", "exec"), namespace)
    (gate,) = namespace["app"].handlers
    assert gate.fail_closed
