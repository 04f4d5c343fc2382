"""The core's subjects: a fresh HookApp for each test that registers its own handlers, and the
runtime-semantics app (tests/support/apps/runtime_semantics.py) behind the real webhook."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from handler_kit import HookApp
from handler_kit.testing import running_server
from tests.support.apps import runtime_semantics


@pytest.fixture
def hooks(request: pytest.FixtureRequest) -> HookApp:
    """A new HookApp named for the test, with no handlers: the test registers the ones it is
    about."""
    return HookApp(request.node.name)


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    """A client of the runtime-semantics app, served on a free port once per test module."""
    with running_server(runtime_semantics.app) as server, server.http(timeout=10) as client:
        yield client
