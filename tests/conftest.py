"""Suite-wide fixtures: only what every test needs (helpers live in the *_support modules)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point ``XDG_CACHE_HOME`` at a temporary folder for the whole run (subprocesses inherit
    it), so no test writes the user's ~/.cache: the context loader's database, the inspector's
    audit store and the development CA all default to places under it."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous
