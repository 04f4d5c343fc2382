"""Which files are case files: standard library only, since the pytest plugin asks for every
file of every project that has handler-kit installed."""

from __future__ import annotations

from pathlib import Path

PREFIX = "hookcases_"
SUFFIXES = (".json", ".jsonl", ".yaml", ".yml")


def is_case_file(path: str | Path) -> bool:
    """Whether pytest collects ``path``: ``hookcases_*.json``, ``.jsonl``, ``.yaml`` or
    ``.yml``."""
    name = Path(path).name
    return name.startswith(PREFIX) and name.endswith(SUFFIXES)
