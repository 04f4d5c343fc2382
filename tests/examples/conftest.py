"""The example apps under test: the context loader's database, store and loader (a fresh
SQLite file in the test's ``tmp_path``), and a client of the refund gate served over HTTPS
once per test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from example_servers import refund_gate
from example_servers.context_loader import ContextLoader, ContextStore
from handler_kit.testing import running_server

# -- the context loader ------------------------------------------------------------------


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ctx' / 'context.sqlite3'}"


@pytest.fixture
def store(db_url: str) -> Iterator[ContextStore]:
    store = ContextStore(db_url)
    yield store
    store.close()


@pytest.fixture
def loader(store: ContextStore) -> ContextLoader:
    return ContextLoader(store)


# -- the refund gate ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with running_server(refund_gate.app, tls=True) as server, server.client() as hook_client:
        yield hook_client
