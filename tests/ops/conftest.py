"""Fixtures of the operations tests."""

from __future__ import annotations

import pytest

from handler_kit import HookApp
from tests.support.apps import ops


@pytest.fixture
def ops_app() -> HookApp:
    """A fresh copy of the operations test app (tests/support/apps/ops.py): one outcome per
    tool name, so each test sends the events whose records it checks."""
    return ops.build()
