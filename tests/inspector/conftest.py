"""The servers under test of tests/inspector, the inspector on and an SQLite audit trail in
the test's ``tmp_path``: the refund gate (``inspected``, started by the test with the
configuration it needs) and a support desk of the two example apps (``desk_server``, for the
browser)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from example_servers import context_loader, refund_gate
from handler_kit import HookApp
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.testing import RunningServer, running_server
from tests.inspector.support import TOKEN, Inspected


@pytest.fixture
def inspected(tmp_path: Path, refund_app: HookApp) -> Inspected:
    """``with inspected(tls=..., **config) as (server, app)``: the refund gate served with the
    inspector on and an SQLite audit trail in ``tmp_path``."""

    @contextmanager
    def start(*, tls: bool = False, **config: Any) -> Iterator[tuple[RunningServer, HookApp]]:
        options: dict[str, Any] = {
            "tokens": [TOKEN],
            "inspector": True,
            "operations": OperationsConfig(audit=[f"sqlite:{tmp_path / 'audit.sqlite3'}"]),
        }
        options.update(config)
        with running_server(refund_app, tls=tls, config=ServerConfig(**options)) as server:
            yield server, refund_app

    return start


def support_desk(db_url: str) -> HookApp:
    """The two example apps as one server, as a support team would deploy them."""
    desk = HookApp("support-desk")
    for source in (refund_gate.app, context_loader.create_app(db_url)):
        for h in source.handlers:
            desk.on(
                h.event,
                matcher=h.matcher,
                name=h.name,
                timeout=h.timeout,
                fail_closed=h.fail_closed,
                stop_loop_guard=h.stop_loop_guard,
            )(h.func)
    return desk


@pytest.fixture
def desk_server(tmp_path: Path) -> Any:
    app = support_desk(f"sqlite:///{tmp_path / 'ctx.sqlite3'}")
    config = ServerConfig(
        tokens=[TOKEN],
        inspector=True,
        operations=OperationsConfig(
            audit=[f"sqlite:{tmp_path / 'audit.sqlite3'}"], audit_text=True
        ),
    )
    with running_server(app, tls=True, config=config) as server:
        yield server, app
