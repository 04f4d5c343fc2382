"""``handler-kit serve`` and ``make run`` as real subprocesses: dev TLS, a trustme certificate,
several workers, the refusals, and the printed curl command run as printed.

The servers of this module start together (the ``servers`` fixture, conftest.py), each test then
waits for its own one. Every process is stopped at teardown (terminate, then kill) and every
wait is bounded.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
import shutil
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from handler_kit.server.dev_tls import ensure_dev_certificate
from tests.cli.support import SERVE_TOKEN, TARGET, Served
from tests.support.payloads import REFUND_DENY, REFUND_EVENT
from tests.support.processes import (
    HANDLER_KIT,
    REPO,
    clean_env,
    free_port,
)

HEADERS = {"Authorization": f"Bearer {SERVE_TOKEN}", "X-Runbear-Hook-Event": "PreToolUse"}
START_TIMEOUT = 60.0  # bounded, and generous: a loaded 2-core machine imports slowly


def ask_refund(url: str, verify: Any) -> None:
    response = httpx.post(
        f"{url}/hooks", json=REFUND_EVENT, headers=HEADERS, verify=verify, timeout=10
    )
    assert response.status_code == 200, response.text
    assert response.json() == REFUND_DENY


def test_dev_tls_prints_its_ca_and_curl_with_it_works(servers):
    served = servers["dev_tls"]
    server, port, folder = served.proc, served.port, served.extra["dir"]
    printed = server.wait_for_output("--cacert", timeout=START_TIMEOUT)
    ca_file = Path(re.search(r"--cacert (\S+)", printed).group(1))
    assert ca_file.parent == folder and ca_file.is_file()
    url = f"https://127.0.0.1:{port}"
    trust = ssl.create_default_context(cafile=ca_file)
    server.wait_healthy(url, verify=trust, timeout=START_TIMEOUT)
    assert f"refund-gate: {url}" in server.output()
    # what `curl --cacert CA` does: trust exactly that CA, for 127.0.0.1 and localhost
    ask_refund(url, trust)
    ask_refund(f"https://localhost:{port}", trust)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/healthz")  # not trusted without the CA
    curl = shutil.which("curl")
    if curl:
        result = subprocess.run(
            [
                curl,
                "-s",
                "--cacert",
                str(ca_file),
                f"{url}/hooks",
                "-H",
                f"Authorization: Bearer {SERVE_TOKEN}",
                "-H",
                "Content-Type: application/json",
                "-d",
                json.dumps(REFUND_EVENT),
            ],
            capture_output=True,
            timeout=20,
            check=True,
        )
        assert json.loads(result.stdout) == REFUND_DENY
    # the key is private, and the CA is cached: asking again gives the same files, so the CA
    # a client was told to trust stays valid across restarts
    assert (folder / "key.pem").stat().st_mode & 0o777 == 0o600
    before = ca_file.read_bytes()
    again = ensure_dev_certificate(folder)
    assert again.ca_file == ca_file and ca_file.read_bytes() == before


def test_tls_cert_and_key_from_trustme(servers):
    served = servers["trustme"]
    url = f"https://127.0.0.1:{served.port}"
    trust = served.extra["trust"]
    served.proc.wait_healthy(url, verify=trust, timeout=START_TIMEOUT)
    assert f"refund-gate: {url}" in served.proc.output()
    ask_refund(url, trust)
    ask_refund(f"https://localhost:{served.port}", trust)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/healthz")


def test_workers_2_serves(servers):
    served = servers["workers"]
    server = served.proc
    url = f"http://127.0.0.1:{served.port}"
    server.wait_healthy(url, timeout=START_TIMEOUT)
    # both worker processes come up (bounded wait), then every request is answered
    deadline = time.monotonic() + START_TIMEOUT
    pids: set[str] = set()
    while time.monotonic() < deadline:
        pids = set(re.findall(r"Started server process \[(\d+)\]", server.output()))
        if len(pids) >= 2:
            break
        time.sleep(0.1)
    assert len(pids) >= 2, server.output()
    assert str(server.proc.pid) not in pids  # the parent supervises, workers serve
    for _ in range(10):
        ask_refund(url, True)


def _curl_command(printed: str) -> str:
    """The curl command of ``make run``'s banner, continuation lines joined."""
    start = printed.index("curl ")
    lines = []
    for line in printed[start:].splitlines():
        lines.append(line.strip().removesuffix("\\").strip())
        if not line.rstrip().endswith("\\"):
            break
    return " ".join(lines)


def _run_printed_curl(served: Served) -> bytes:
    """Wait for ``make run``'s server, then run the curl command it printed, as printed."""
    url = f"http://127.0.0.1:{served.port}"
    served.proc.wait_healthy(url, timeout=START_TIMEOUT)
    printed = served.proc.output()
    token = re.search(r"Bearer token: (\S+)", printed).group(1)
    assert len(token) >= 16
    command = _curl_command(printed)
    assert f"Bearer {token}" in command and f"{url}/hooks" in command
    words = shlex.split(command)
    assert words[0] == "curl"
    curl = shutil.which("curl")
    if curl:
        result = subprocess.run([curl, *words[1:]], capture_output=True, timeout=20, check=True)
        return result.stdout
    # no curl binary: replay the same request with httpx
    headers = dict(w.split(": ", 1) for i, w in enumerate(words) if i and words[i - 1] == "-H")
    data = words[words.index("-d") + 1]
    target = next(w for w in words if w.startswith("http"))
    return httpx.post(target, content=data, headers=headers, timeout=10).content


def test_make_run_prints_a_token_and_a_curl_that_works(servers):
    assert json.loads(_run_printed_curl(servers["make_run"])) == REFUND_DENY


def test_make_run_context_loader_prints_a_curl_for_its_own_app(servers):
    answer = json.loads(_run_printed_curl(servers["make_run_context"]))
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert context.startswith("Order #4821 shipped")


def test_make_run_refuses_an_unknown_app():
    result = subprocess.run(
        [sys.executable, "-m", "example_servers.run", "no_such_app"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert result.returncode == 2
    assert "APP is one of: refund_gate, context_loader" in result.stderr


def test_refusals_are_clear_and_non_zero():
    """No token and a bad MODULE:ATTR, as real processes: a one-line message on stderr, no
    traceback, a non-zero exit, and nothing served. Started together."""
    port = str(free_port())
    cases = {
        "no token": (TARGET, clean_env(), "no authentication configured: set HANDLER_KIT_TOKENS"),
        "bad module": (
            "no_such_module_xyz:app",
            clean_env(HANDLER_KIT_TOKENS=SERVE_TOKEN),
            "cannot import 'no_such_module_xyz'",
        ),
    }
    procs = {
        name: subprocess.Popen(
            [str(HANDLER_KIT), "serve", target, "--port", port],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, (target, env, _) in cases.items()
    }
    try:
        for name, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=60)
            assert proc.returncode != 0, (name, stdout, stderr)
            assert stderr.startswith("handler-kit serve: "), (name, stderr)
            assert cases[name][2] in stderr, (name, stderr)
            assert len(stderr.strip().splitlines()) == 1, (name, stderr)
            assert "Traceback" not in stderr + stdout, name
            assert "Uvicorn running" not in stderr + stdout, name
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["example_servers.refund_gate:nope"], "has no attribute 'nope'"),
        (["example_servers.refund_gate"], "expected MODULE:ATTR"),
        (["example_servers.refund_gate:REFUND_TOOLS"], "is a str, not a HookApp"),
        ([TARGET, "--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
        (
            [TARGET, "--tls-cert", "missing-c.pem", "--tls-key", "missing-k.pem"],
            "TLS file not found",
        ),
        ([TARGET, "--dev-tls", "--tls-cert", "c.pem", "--tls-key", "k.pem"], "exclude each other"),
    ],
)
def test_more_refusals_in_process(args, message, monkeypatch, capsys):
    """The same command line, run in-process (the serve command sets HANDLER_KIT_* variables:
    monkeypatch restores them)."""
    from handler_kit.cli import main

    for name in ("HANDLER_KIT_APP", "HANDLER_KIT_TOKENS"):
        monkeypatch.setenv(name, "placeholder-token-0123456789")
    assert main(["serve", *args, "--port", str(free_port())]) != 0
    err = capsys.readouterr().err
    assert err.startswith("handler-kit serve: ") and message in err
    assert "Traceback" not in err


def test_after_the_in_process_runs_no_logger_writes_to_a_closed_file() -> None:
    """The runs above configured logging as ``serve`` does in its own process, on the
    ``sys.stderr`` of their test: pytest's capture, closed since. The suite's
    ``logging_left_as_found`` put the loggers back; left in place, any later record (from a
    test or a background thread) was a "Logging error: I/O operation on closed file"."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    stale = [
        (getattr(lg, "name", "root"), handler)
        for lg in loggers
        for handler in getattr(lg, "handlers", [])
        if getattr(getattr(handler, "stream", None), "closed", False)
    ]
    assert not stale, stale
