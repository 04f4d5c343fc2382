"""``handler-kit serve --log-level``: uvicorn's ``trace`` level is a level like the others, and a
level that does not exist is the one-line usage error naming the levels, never a traceback."""

from __future__ import annotations

import subprocess

import httpx
import pytest

from tests.support.apps import OPS_APP
from tests.support.http import TOKEN
from tests.support.processes import clean_env, free_port, process, serve, serve_argv


def test_trace_level_serves_and_logs_connections() -> None:
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN)
    with serve(OPS_APP, port=port, env=env, options=("--log-level", "trace")) as server:
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
        output = server.wait_for_output("HTTP connection made")
        assert "TRACE" in output
        assert "Traceback" not in output
        assert server.terminate()


def test_trace_level_from_the_environment() -> None:
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_LOG_LEVEL="trace")
    with process(serve_argv(OPS_APP, port), env) as server:
        server.wait_healthy(f"http://127.0.0.1:{port}")
        assert "TRACE" in server.wait_for_output("HTTP connection made")
        assert server.terminate()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--log-level", "loud", "--log-level must be one of critical, error, warning, info, "
         "debug, trace, got 'loud'"),
        ("--port", "http", "--port must be an integer"),
    ],
)  # fmt: skip
def test_a_bad_value_is_one_usage_line(option: str, value: str, message: str) -> None:
    argv = serve_argv(OPS_APP, free_port(), option, value)
    result = subprocess.run(
        argv, env=clean_env(HANDLER_KIT_TOKENS=TOKEN), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stdout == ""
    # one line: the usage is not printed first
    assert result.stderr.startswith(f"handler-kit serve: {message}"), result.stderr
    assert result.stderr.endswith(" (see handler-kit serve --help)\n"), result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "<lambda>" not in result.stderr
