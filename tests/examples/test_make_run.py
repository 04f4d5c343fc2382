"""``make run`` (``python -m example_servers.run``) on a port it cannot listen on: refused before
anything is printed (no curl for a server that never starts), in ``make``'s terms, since
``make run`` cannot take serve's ``--port``. The port is held by another process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support.processes import REPO, clean_env, free_port

HOLDER = """
import socket, sys
sock = socket.socket()
sock.bind(("127.0.0.1", int(sys.argv[1])))
sock.listen()
print("listening", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another process listens on, until the test ends."""
    port = free_port()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "listening\n"
        yield port
    finally:
        holder.kill()
        holder.wait(timeout=10)


def make_run(port: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "example_servers.run", *argv],
        capture_output=True,
        text=True,
        env=clean_env(HOST="127.0.0.1", PORT=port),
        cwd=REPO,
        timeout=60,
    )


@pytest.mark.parametrize("app", ["refund_gate", "context_loader"])
def test_a_port_in_use_is_refused_before_anything_is_printed(held_port, app):
    done = make_run(str(held_port), app)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"make run: port {held_port} is in use; choose another: make run PORT=9000\n"
    )


@pytest.mark.parametrize(
    ("port", "message"),
    [
        ("abc", "PORT must be an integer, got 'abc'; choose one: make run PORT=9000"),
        (
            "70000",
            "PORT must be a port number (0-65535), got '70000'; choose one: make run PORT=9000",
        ),
    ],
)
def test_a_port_that_is_no_port_is_refused_in_makes_terms(port, message):
    done = make_run(port)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"make run: {message}\n")
