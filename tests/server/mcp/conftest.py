"""The refund gate served once per test module: the server most MCP tests talk to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from example_servers import refund_gate
from handler_kit.testing import RunningServer, running_server
from tests.server.mcp.support import TOKEN


@pytest.fixture(scope="module")
def gate() -> Iterator[RunningServer]:
    with running_server(refund_gate.app, tokens=[TOKEN]) as server:
        yield server
