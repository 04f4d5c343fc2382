"""``handler-kit forward --timeout``: one deadline for the whole call.

The runtime kills a hook at its own timeout and lets the call run, so a fail-closed forwarder
must have answered by then whatever step hangs: the name's lookup (``getaddrinfo`` takes no
timeout), the connection, the TLS handshake, the sending of the input, the answer. Each test
injects one such fault through real sockets and times the real process against the deadline.

The lookup's faults need a resolver of the test's own: the forwarder runs in a network and
mount namespace of its own (``unshare -rmn``) whose /etc/resolv.conf names a resolver the test
runs on that namespace's 127.0.0.1 (see ``netns_driver.py``).
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.command.support import TOKEN
from tests.command.test_forward import PYCACHE, REFUND, deny, outage_reason
from tests.support.processes import REPO, clean_env, free_port, make_tls

DRIVER = Path(__file__).with_name("netns_driver.py")
TIMEOUT = 2.0
# What the forwarder may take past its --timeout: its own start-up and exit, on a busy machine.
MARGIN = 1.2
# glibc's own defaults, written out: a resolver that never answers holds getaddrinfo 10 s.
RESOLV_CONF = "nameserver 127.0.0.1\noptions timeout:5 attempts:2\n"


def forwarder_argv(url: str) -> list[str]:
    return [
        sys.executable,
        "-I",
        "-m",
        "handler_kit",
        "forward",
        url,
        "--fail-closed",
        "--timeout",
        f"{TIMEOUT:g}",
    ]


def forwarder_env(**extra: str) -> dict[str, str]:
    environ = clean_env(PYTHONPYCACHEPREFIX=PYCACHE, HANDLER_KIT_TOKEN=TOKEN, **extra)
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    return environ


def in_namespace(tmp_path: Path, dns: str | float, url: str, **plan: Any) -> dict[str, Any]:
    """The forwarder on ``url`` in a namespace whose resolver behaves as ``dns`` says."""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text(RESOLV_CONF)
    plan = {
        "dns": dns,
        "argv": forwarder_argv(url),
        "stdin": REFUND.decode(),
        "env": forwarder_env(),
        **plan,
    }
    done = subprocess.run(
        [
            "unshare",
            "-rmn",
            "/bin/sh",
            "-c",
            'mount --bind "$1" /etc/resolv.conf && exec "$2" "$3" "$4"',
            "sh",
            str(resolv),
            sys.executable,
            str(DRIVER),
            json.dumps(plan),
        ],
        capture_output=True,
        cwd=REPO,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def assert_denied_in_time(result: dict[str, Any], what: str) -> None:
    assert result["code"] == 0, result
    assert json.loads(result["stdout"]) == deny(outage_reason(what)), result
    assert result["elapsed"] < TIMEOUT + MARGIN, result


def test_a_resolver_that_never_answers(tmp_path: Path) -> None:
    result = in_namespace(tmp_path, "silent", "https://gate.test/hooks/refund_gate")
    assert_denied_in_time(result, f"no address for gate.test within {TIMEOUT:g} s")


def test_a_slow_lookup_then_a_handshake_that_never_finishes(tmp_path: Path) -> None:
    """The lookup's time counts: what is left of the deadline is all the handshake gets."""
    port = 8443
    result = in_namespace(
        tmp_path, 1.6, f"https://gate.test:{port}/hooks/refund_gate", hold_port=port
    )
    assert_denied_in_time(result, f"no TLS handshake within {TIMEOUT:g} s")


class SlowTlsServer:
    """On 127.0.0.1: accepts, completes the TLS handshake ``delay`` seconds after ``spawned``
    (the forwarder's start, which its deadline counts from, so that a start-up slowed by a
    loaded machine does not push the handshake past that deadline), then never reads a byte
    of the request."""

    def __init__(self, cert_file: str, key_file: str, delay: float) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert_file, key_file)
        self.delay = delay
        self.spawned = time.monotonic()
        self.port = free_port()
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.held: list[Any] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        time.sleep(max(0.0, self.spawned + self.delay - time.monotonic()))
        self.held.append(self.context.wrap_socket(conn, server_side=True))

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.listener.close()


def test_a_slow_handshake_then_a_server_that_never_reads() -> None:
    """The handshake's time counts: what is left is all the sending of the input gets."""
    with make_tls() as tls:
        server = SlowTlsServer(tls.cert_file, tls.key_file, delay=1.2)
        try:
            big = json.loads(REFUND)
            big["tool_input"]["note"] = "x" * (16 * 1024 * 1024)  # more than the socket buffers
            start = server.spawned = time.monotonic()
            done = subprocess.run(
                forwarder_argv(f"https://localhost:{server.port}/hooks/refund_gate"),
                input=json.dumps(big).encode(),
                capture_output=True,
                env=forwarder_env(SSL_CERT_FILE=tls.ca_file),
                cwd=REPO,
                timeout=60,
            )
            elapsed = time.monotonic() - start
        finally:
            server.close()
    result = {
        "code": done.returncode,
        "stdout": done.stdout.decode(),
        "stderr": done.stderr.decode(),
        "elapsed": elapsed,
    }
    assert_denied_in_time(result, f"the request was not read within {TIMEOUT:g} s")
    assert server.held, "the handshake did not complete"


def test_the_deadline_counts_from_the_spawn() -> None:
    """The runtime's timeout started when it spawned the forwarder: a slow start (a loaded
    machine, here a sleep before the forwarder runs) comes out of the deadline."""
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (backlog), never answers
    port = listener.getsockname()[1]
    argv = forwarder_argv(f"http://127.0.0.1:{port}/hooks/refund_gate")
    slow_start = (
        "import runpy, sys, time; time.sleep(1.5); "
        f"sys.argv = {['handler_kit', *argv[4:]]!r}; "
        "runpy.run_module('handler_kit', run_name='__main__', alter_sys=True)"
    )
    try:
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-I", "-c", slow_start],
            input=REFUND,
            capture_output=True,
            env=forwarder_env(),
            cwd=REPO,
            timeout=60,
        )
        elapsed = time.monotonic() - start
    finally:
        listener.close()
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert (done.returncode, answer["permissionDecision"]) == (0, "deny"), done.stderr.decode()
    # counted from the forwarder's own start, the answer would come 1.5 s later than this
    assert elapsed < TIMEOUT + 0.9, f"answered {elapsed:.2f} s after the spawn"
