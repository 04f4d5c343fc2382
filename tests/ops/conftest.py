"""Fixtures of the operations tests: the operations test app, and a Redis server for the
stores that keep their state there (the PostgreSQL server is suite-wide: tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from handler_kit import HookApp
from tests.support.apps import ops
from tests.support.processes import redis_server


@pytest.fixture
def ops_app() -> HookApp:
    """A fresh copy of the operations test app (tests/support/apps/ops.py): one outcome per
    tool name, so each test sends the events whose records it checks."""
    return ops.build()


@pytest.fixture(scope="module")
def redis_url() -> Any:
    """A throw-away ``redis-server``, one per test module (skipped where it is not installed,
    outside CI)."""
    with redis_server() as url:
        yield url
