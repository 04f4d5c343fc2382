"""The clients under test of tests/testing: HookClient in both of its modes, on the HookClient
tests' app (tests/support/apps/client.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from handler_kit.testing import HookClient, running_server
from tests.support.apps.client import app


@pytest.fixture(scope="module")
def clients() -> Iterator[tuple[HookClient, HookClient]]:
    """Both modes, compared answer for answer: the in-process one reads a crash as the 500 the
    server sends, as the URL one must, rather than raising it."""
    with (
        running_server(app, tls=True) as server,
        server.client() as over_https,
        HookClient.for_app(app, raise_handler_exceptions=False) as in_process,
    ):
        yield in_process, over_https
