"""Fixtures of the deployment tests: the parsed manifests and compose file."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.support import COMPOSE_FILE, GATE_NAME, documents, find


@pytest.fixture(scope="module")
def deployment() -> dict[str, Any]:
    return find("Deployment", GATE_NAME)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    docs = documents(COMPOSE_FILE)
    assert len(docs) == 1
    return docs[0]
