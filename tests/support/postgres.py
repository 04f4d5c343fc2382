"""A throw-away PostgreSQL server for the tests: ``initdb`` in a temporary folder, ``postgres``
on a free 127.0.0.1 port with password authentication, stopped (fast shutdown) at the end.

PostgreSQL refuses to run as root: as root, both run as the ``postgres`` user (``runuser``),
the folder given to it. The binaries come from ``PATH`` or ``/usr/lib/postgresql/*/bin`` (the
Debian package ``postgresql``); missing, the tests skip, but fail in CI (CI must install it).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import Process, free_port, process

USER = "postgres"


def postgres_binaries_or_skip() -> Path:
    """The folder holding ``initdb`` and ``postgres``; skip when absent, but fail in CI."""
    found = shutil.which("initdb")
    if found and shutil.which("postgres"):
        return Path(found).parent
    folders = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name or 0)
    )
    for folder in reversed(folders):
        if os.path.exists(os.path.join(folder, "initdb")):
            return Path(folder)
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("PostgreSQL is not installed: CI must install the Debian package postgresql")
    pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")


def _as_postgres(argv: list[str]) -> list[str]:
    """``argv`` run as the ``postgres`` user when we are root (PostgreSQL refuses root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", USER, "--", *argv]
    return argv


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server for the block; yields the URL of its ``postgres`` database (user
    ``postgres``, a random password)."""
    binaries = postgres_binaries_or_skip()
    password = secrets.token_hex(16)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="hk-postgres-") as folder:
        data = os.path.join(folder, "data")
        pwfile = os.path.join(folder, "pw")
        Path(pwfile).write_text(password + "\n")
        if os.geteuid() == 0:
            owner = pwd.getpwnam(USER)
            for path in (folder, pwfile):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        initdb = [
            str(binaries / "initdb"),
            "-D",
            data,
            "-U",
            USER,
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        ]
        done = subprocess.run(_as_postgres(initdb), capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise AssertionError(f"initdb failed:\n{done.stdout}\n{done.stderr}")
        argv = [
            str(binaries / "postgres"),
            "-D",
            data,
            "-p",
            str(port),
            "-h",
            "127.0.0.1",
            "-k",
            folder,
            # a test database: nothing to keep after a crash
            "-c",
            "fsync=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=200",
        ]
        url = f"postgresql://{USER}:{password}@127.0.0.1:{port}/postgres"
        with process(_as_postgres(argv), os.environ.copy(), Path(folder)) as server:
            try:
                _wait_ready(server, url)
                yield url
            finally:
                # fast shutdown: a smart one (SIGTERM) would wait for every client to leave
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(server.proc.pid, signal.SIGINT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    server.proc.wait(timeout=15)


def _wait_ready(server: Process, url: str, timeout: float = 60.0) -> None:
    """Until the server answers a query (listening comes before accepting)."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        if server.proc.poll() is not None:
            raise AssertionError(f"postgres exited at start-up:\n{server.output()}")
        try:
            with psycopg.connect(url, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"postgres not ready within {timeout} s:\n{server.output()}"
                ) from None
            time.sleep(0.05)


def new_database(url: str) -> str:
    """A new empty database on the server of ``url``; its URL."""
    import psycopg

    name = f"hk_{uuid.uuid4().hex[:12]}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
            break
        except psycopg.OperationalError:  # still starting up
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    return url.rsplit("/", 1)[0] + f"/{name}"
