"""Attacks on the secrets an audit sink holds: a database URL's password never reaches the
console, the log or the unauthenticated ``/readyz``, whatever is wrong with the URL or the
sink."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from handler_kit import HookApp, PreToolUse, allow
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.testing import running_server
from tests.support.http import TOKEN
from tests.support.payloads import pre_tool_use
from tests.support.processes import HANDLER_KIT, REPO, clean_env, free_port

PASSWORD = "pw-Zq81-never-shown"


@pytest.mark.parametrize(
    "url",
    [
        # libpq quotes what it cannot read: here the whole URL, password included
        f"postgresql://audit:{PASSWORD}@[::1/handler_kit",
        # here the password itself (a bad %-escape)
        f"postgresql://audit:{PASSWORD}%zz@db.internal/handler_kit",
        # a mistyped scheme: not a Postgres URL, but still a password
        f"Postgres://audit:{PASSWORD}@db.internal/handler_kit",
        f"postgresq://audit:{PASSWORD}@db.internal/handler_kit",
    ],
)
def test_a_bad_database_url_is_refused_at_start_up_without_its_password(url: str) -> None:
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_AUDIT=url, HANDLER_KIT_AUDIT_DURABLE="1")
    argv = [str(HANDLER_KIT), "serve", "example_servers.refund_gate:app"]
    done = subprocess.run(
        [*argv, "--port", str(free_port())],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert PASSWORD not in output
    assert "Traceback" not in output
    assert "audit sink" in output


class FailingSink:
    """A durable sink whose error names what it writes to, as a driver's errors do."""

    def __init__(self) -> None:
        self.broken = threading.Event()

    def open(self) -> None:
        pass

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        if self.broken.is_set():
            raise OSError(f"cannot reach postgresql://audit:{PASSWORD}@10.1.2.3/handler_kit")

    def close(self) -> None:
        pass


def test_readyz_says_the_sinks_are_down_without_their_error() -> None:
    app = HookApp("secrets")

    @app.pre_tool_use()
    def gate(event: PreToolUse) -> Any:
        return allow("fine")

    sink = FailingSink()
    operations = OperationsConfig(audit_sinks=[sink], audit_durable=True)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    with running_server(app, config=config) as server, server.http(timeout=30) as client:
        sink.broken.set()
        client.post("/hooks/gate", json=pre_tool_use("Bash", "t-1", command="ls"))
        # no token: what a load balancer (or anyone) reads
        down = client.get("/readyz", headers={"Authorization": ""})
        assert down.status_code == 503, down.text
        assert down.json()["reason"] == "audit_unavailable"
        assert PASSWORD not in down.text
        assert "10.1.2.3" not in down.text
