"""Suite-wide fixtures: what tests in several folders need (helpers live in tests/support/)."""

from __future__ import annotations

import logging
import os
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from example_servers.refund_gate import app as refund_gate_app
from handler_kit import HookApp
from tests.support.processes import REPO
from tests.support.shared import run_wide
from tests.support.wheel import build_wheel


@pytest.fixture(autouse=True, scope="session")
def private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point ``XDG_CACHE_HOME`` at a temporary folder for the whole run (subprocesses inherit
    it), so no test writes the user's ~/.cache: the context loader's database, the inspector's
    audit store and the development CA all default to places under it."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous


# the loggers a process's logging set-up configures: the root (``handler-kit serve``'s
# dictConfig, ``dispatch``'s basicConfig) and uvicorn's (every ``uvicorn.Config``)
CONFIGURED_LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access")


@pytest.fixture(autouse=True)
def logging_left_as_found() -> Iterator[None]:
    """Put the loggers a test's in-process run configured back as they were.

    ``main(["serve", ...])`` run in a test configures logging as it does in its own process:
    a handler on the root logger writing to the ``sys.stderr`` of that moment, which in a test
    is pytest's capture, closed when the test ends. Left in place, every later record (at the
    level it set) would be written to a closed file, by whichever later test or background
    thread logs it: a "Logging error ... I/O operation on closed file" in the run's output."""
    loggers = [logging.getLogger(name) for name in CONFIGURED_LOGGERS]
    saved = [(lg, list(lg.handlers), lg.level, lg.propagate, lg.disabled) for lg in loggers]
    yield
    for lg, handlers, level, propagate, disabled in saved:
        for handler in list(lg.handlers):
            # pytest's own capturing handlers on the root come and go with each phase
            if handler not in handlers and not type(handler).__module__.startswith("_pytest"):
                lg.removeHandler(handler)
        for handler in handlers:
            if handler not in lg.handlers and not type(handler).__module__.startswith("_pytest"):
                lg.addHandler(handler)
        lg.setLevel(level)
        lg.propagate = propagate
        lg.disabled = disabled


# Set once the sources are compiled: a process that runs several sessions (mutmut runs one per
# mutant, each in a fork of the process that ran the first) compiles them once, not per session.
_compiled: list[bool] = []


@pytest.fixture(autouse=True, scope="session")
def compiled_sources(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Compile the repository's sources to bytecode once, where Python looks for it: with
    ``PYTHONDONTWRITEBYTECODE=1`` in the environment (as in CI) and a fresh clone, each of the
    suite's hundreds of child processes (servers, the CLI, hooks, the bench) would otherwise
    compile every handler-kit module it imports anew, as an installed package never does. The
    children still write nothing: a file a test writes and rewrites is never read stale.
    Once for the whole run: the first worker compiles while the others wait."""
    if _compiled:
        return
    _compiled.append(True)
    with run_wide(tmp_path_factory, "compiled-sources") as shared:
        if (shared / "done").exists():
            return
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        folders = [
            str(REPO / name) for name in ("handler_kit", "example_servers", "tests", "bench")
        ]
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "-j", "0", *folders],
            env=env,
            stdout=subprocess.DEVNULL,
            check=False,  # a file that does not compile fails its own tests, with a clear message
            timeout=300,
        )
        (shared / "done").touch()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files that hold a test marked ``slow`` first, each file's tests kept together and in
    order: ``make test`` hands whole files to its workers in this order (``--dist loadfile``),
    so the long ones start early, beside the short ones, rather than one of them being left
    to run alone on one worker at the end."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Let pytest keep each test module it has rewritten (its asserts, made to explain a
    failure) in ``__pycache__``, as it does unless ``PYTHONDONTWRITEBYTECODE`` is set (as in
    CI and on the team's machines): otherwise every run rewrites all of them anew, the largest
    part of collecting the suite. pytest checks the source's size and time before using one,
    and writes each atomically. Only while the suite's own modules are collected: a module a
    test writes (pytester's, an app in a temporary folder) is imported later, and stays
    without bytecode, as ``compiled_sources`` explains."""
    if not isinstance(collector, pytest.Module):
        return (yield)
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = saved


@pytest.fixture(autouse=True, scope="session")
def one_default_tls_context() -> Iterator[None]:
    """httpx builds a new TLS context for every client made with the default
    ``verify=True`` (the whole CA bundle read and parsed, even for an http:// URL), and the
    suite makes hundreds of clients: those share one context, built by httpx the same way
    (for the same environment). A client given a context, a CA or a certificate of its own
    gets what it asked for, as before."""
    from httpx._transports import default as transports

    build = transports.create_ssl_context
    built: dict[tuple[bool, str | None, str | None], ssl.SSLContext] = {}

    def create(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
        if verify is not True or cert:
            return build(verify=verify, cert=cert, trust_env=trust_env)
        key = (trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        if key not in built:
            built[key] = build(verify=True, cert=None, trust_env=trust_env)
        return built[key]

    transports.create_ssl_context = create
    yield
    transports.create_ssl_context = build


@pytest.fixture(scope="session")
def refund_app() -> HookApp:
    """The example refund gate (example_servers/refund_gate.py), for every test that needs
    "a refund gate": over $500 denied, fail closed; a Stop without a ticket number sent back."""
    return refund_gate_app


@pytest.fixture(scope="session")
def checkout_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout (tests/support/wheel.py), built once for the whole run, by
    whichever worker asks first: each build is a pip isolated build environment and three
    build-backend processes, the same work whichever test asks first."""
    with run_wide(tmp_path_factory, "wheel") as shared:
        built = sorted(shared.glob("*/dist/*.whl"))
        if built:
            return built[0]
        # a folder of its own: one a failed build left behind is not reused
        return build_wheel(Path(tempfile.mkdtemp(dir=shared)))


@pytest.fixture(scope="session")
def postgres_server_url() -> Any:
    """A throw-away PostgreSQL server (tests/support/postgres.py), one per session, shared by
    the audit tests and the replay tests: each test makes its own database with
    ``new_database`` (skipped where PostgreSQL is not installed, outside CI)."""
    from tests.support.postgres import postgres_server

    with postgres_server() as url:
        yield url
