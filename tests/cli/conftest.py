"""The CLI tests' subjects: the ``handler-kit serve`` and ``make run`` processes (started
together, once per test module: started one after the other, their imports would dominate
the suite), and a user's project for ``handler-kit install``.

``handler-kit dispatch`` runs against the dispatcher tests' scripted endpoint and MCP server:
their fixtures are shared from tests/dispatcher/conftest.py rather than restated."""

from __future__ import annotations

import ssl
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import trustme

from tests.cli.support import GATE_APP, SERVE_TOKEN, TARGET, Served
from tests.dispatcher.conftest import (  # noqa: F401 (fixtures, found by name)
    dispatch_tls,
    dispatcher_for,
    mcp_test_server,
    script_server,
    scripted,
)
from tests.support.processes import clean_env, free_port, process, serve_argv

# -- handler-kit serve (test_serve.py) ---------------------------------------------------------


@pytest.fixture(scope="module")
def servers(tmp_path_factory) -> Iterator[dict[str, Served]]:
    tmp = tmp_path_factory.mktemp("serve")
    token_env = clean_env(HANDLER_KIT_TOKENS=SERVE_TOKEN)

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file = tmp / "cert.pem", tmp / "key.pem"
    for index, pem in enumerate(cert.cert_chain_pems):
        pem.write_to_path(cert_file, append=index > 0)
    cert.private_key_pem.write_to_path(key_file)
    trust = ssl.create_default_context()
    ca.configure_trust(trust)

    plans: dict[str, tuple[list[str], dict[str, str], dict[str, Any]]] = {}
    names = ("dev_tls", "trustme", "workers", "make_run", "make_run_context")
    ports = {name: free_port() for name in names}
    plans["dev_tls"] = (
        serve_argv(TARGET, ports["dev_tls"], "--dev-tls"),
        {**token_env, "HANDLER_KIT_DEV_TLS_DIR": str(tmp / "dev-tls")},
        {"dir": tmp / "dev-tls"},
    )
    plans["trustme"] = (
        serve_argv(
            TARGET, ports["trustme"], "--tls-cert", str(cert_file), "--tls-key", str(key_file)
        ),
        token_env,
        {"trust": trust},
    )
    # --no-mcp: each worker re-imports the app, MCP is not what that test is about, and its
    # import time makes uvicorn's 5 s worker health check restart workers on a loaded machine
    plans["workers"] = (
        serve_argv(TARGET, ports["workers"], "--workers", "2", "--no-mcp"),
        token_env,
        {},
    )
    # `make run` runs exactly this, with HOST/PORT from make and no token configured
    plans["make_run"] = (
        [sys.executable, "-m", "example_servers.run"],
        clean_env(HOST="127.0.0.1", PORT=str(ports["make_run"])),
        {},
    )
    # `make run APP=context_loader`, its database in the test's folder
    plans["make_run_context"] = (
        [sys.executable, "-m", "example_servers.run", "context_loader"],
        clean_env(
            HOST="127.0.0.1",
            PORT=str(ports["make_run_context"]),
            CONTEXT_LOADER_DB_URL=f"sqlite:///{tmp / 'context.sqlite3'}",
        ),
        {},
    )
    with ExitStack() as stack:
        started = {
            name: Served(stack.enter_context(process(argv, env)), ports[name], extra)
            for name, (argv, env, extra) in plans.items()
        }
        yield started


# -- handler-kit install (test_install.py) -----------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose path has a space, holding the gate app; and a directory elsewhere."""
    root = tmp_path / "refund project"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "myhooks.py").write_text(GATE_APP)
    (tmp_path / "elsewhere").mkdir()
    return root
