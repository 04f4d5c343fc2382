"""Suite-wide fixtures: what tests in several folders need (helpers live in tests/support/)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from example_servers.refund_gate import app as refund_gate_app
from handler_kit import HookApp


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


@pytest.fixture(scope="session")
def refund_app() -> HookApp:
    """The example refund gate (example_servers/refund_gate.py), for every test that needs
    "a refund gate": over $500 denied, fail closed; a Stop without a ticket number sent back."""
    return refund_gate_app
