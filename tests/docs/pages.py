"""Reading the README and the docs pages the way their tests need: a marked section, and the
fenced code blocks of one language in it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
EXAMPLES = DOCS / "examples"
# `--8<-- "docs/examples/NAME"`: pymdownx.snippets includes the file when the site is built
INCLUDE = re.compile(r'^--8<-- "([^"]+)"$', re.M)


def page(name: str) -> str:
    """The text of ``docs/NAME`` (or of README.md)."""
    path = README if name == "README.md" else DOCS / name
    return path.read_text(encoding="utf-8")


def section(name: str, page_name: str) -> str:
    """The text between ``<!-- section:NAME -->`` and ``<!-- /section:NAME -->`` of a page."""
    match = re.search(
        rf"<!-- section:{name} -->(.*?)<!-- /section:{name} -->", page(page_name), re.S
    )
    assert match, f"{page_name} has no {name} section"
    return match.group(1)


def blocks(text: str, language: str) -> list[str]:
    """The contents of the fenced code blocks of ``language`` in ``text``, in order."""
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def included(text: str) -> list[Path]:
    """The files that ``text`` includes with snippets, as paths."""
    return [REPO / name for name in INCLUDE.findall(text)]
