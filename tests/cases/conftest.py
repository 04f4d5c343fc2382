"""The policy case tests' servers: the cases app and the refund gate on real uvicorn
(127.0.0.1, a free port, plain HTTP), one each per module, for ``--url`` and ``--document``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from example_servers.refund_gate import app as gate_app
from handler_kit.testing import RunningServer, running_server
from tests.support.apps.cases import app as cases_app


@pytest.fixture(scope="module")
def cases_server() -> Iterator[RunningServer]:
    with running_server(cases_app) as server:
        yield server


@pytest.fixture(scope="module")
def gate_server() -> Iterator[RunningServer]:
    with running_server(gate_app) as server:
        yield server
