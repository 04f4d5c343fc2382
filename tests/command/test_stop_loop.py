"""The stop-loop guard holds for what a dialect renders, through ``command`` and ``forward``.

A Stop handler that returns context keeps the agent going: Codex, Posit and the sandbox
runtime read no context on Stop, so their dialects carry it as a block (exit 2 in the sandbox
dialect). On an input with ``stop_hook_active: true`` the agent is already going on because
of a Stop hook: that block would come again on every stop, and Codex has no cap of its own.
There the context is dropped and the agent stops (exit 0, no block), with a warning.

Each case runs the real console script: ``handler-kit command`` on the app, and ``handler-kit
forward`` in front of a real ``handler-kit serve`` of the same app.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from tests.command.support import TOKEN, Run, run_many
from tests.support.apps import DIALECTS_APP
from tests.support.apps import dialects as app
from tests.support.processes import clean_env, free_port, serve

RUNTIMES = ("codex", "posit", "sandbox")
TOKEN_ENV = "STOP_LOOP_TEST_TOKEN"
KEPT_GOING = {"decision": "block", "reason": app.KEEP_GOING}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    with serve(DIALECTS_APP, port=port, env=clean_env(HANDLER_KIT_TOKENS=TOKEN)):
        yield f"http://127.0.0.1:{port}"


def stop_input(active: bool) -> bytes:
    return json.dumps(
        {"hook_event_name": "Stop", "stop_hook_active": active, "last_assistant_message": "done"}
    ).encode()


@pytest.fixture(scope="module")
def runs(server: str) -> dict[tuple[str, str, bool], Run]:
    jobs = {}
    for runtime in RUNTIMES:
        for active in (True, False):
            stdin = stop_input(active)
            command = ["command", DIALECTS_APP, "--handler", "keep_going", "--runtime", runtime]
            forward = [
                "forward",
                f"{server}/hooks/keep_going",
                "--runtime",
                runtime,
                "--token-env",
                TOKEN_ENV,
            ]
            jobs[("command", runtime, active)] = (command, stdin)
            jobs[("forward", runtime, active)] = (forward, stdin)
    os.environ[TOKEN_ENV] = TOKEN  # the runs inherit it (they drop only HANDLER_KIT_*)
    try:
        return run_many(jobs)
    finally:
        del os.environ[TOKEN_ENV]


@pytest.mark.parametrize("transport", ["command", "forward"])
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_no_block_while_stop_hook_active(
    transport: str, runtime: str, runs: dict[tuple[str, str, bool], Run]
) -> None:
    result = runs[(transport, runtime, True)]
    assert result.code == 0, result
    # Codex needs JSON on Stop: no opinion is {}; Posit reads {} the same; sandbox: nothing
    assert result.stdout == (b"" if runtime == "sandbox" else b"{}\n"), result
    if transport == "command":  # forward: the server held it back and logged it there
        assert "stop_hook_active was true" in result.stderr, result.stderr
    assert app.KEEP_GOING not in result.stderr


@pytest.mark.parametrize("transport", ["command", "forward"])
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_block_as_before_on_a_first_stop(
    transport: str, runtime: str, runs: dict[tuple[str, str, bool], Run]
) -> None:
    result = runs[(transport, runtime, False)]
    if runtime == "sandbox":
        assert (result.code, result.stdout, result.stderr) == (2, b"", f"{app.KEEP_GOING}\n")
    else:
        assert result.code == 0, result
        assert json.loads(result.stdout) == KEPT_GOING
