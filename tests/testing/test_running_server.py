"""Stopping :func:`running_server`: prompt (it waits on none of uvicorn's timers) and graceful
(a request in flight is still answered, then the lifespan shuts down, then the thread ends).

Promptness is checked without a clock: uvicorn's own sleeps (its main loop's tick, its
shutdown's fixed wait, its drain's poll) are stretched to a minute for the test, so a stop that
waited on any of them would outlast the thread's join and leave the lifespan running."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import socket
import sys
import threading
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import httpx
import pytest
import uvicorn

from handler_kit import HookApp, Output, PreToolUse, deny
from handler_kit.auth import generate_token
from handler_kit.config import Extension, ServerConfig
from handler_kit.testing import running_server
from handler_kit.testing._server import PromptServer

STRETCHED = 60.0

slow = HookApp("slow-stop")
entered = threading.Event()
release = threading.Event()


@slow.pre_tool_use(matcher="Slow")
async def held(event: PreToolUse) -> Output:
    entered.set()
    # off the event loop: the server goes on running its stop while the answer is held
    await asyncio.to_thread(release.wait, 30)
    return deny("answered after the stop began")


@pytest.fixture
def uvicorn_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every ``asyncio.sleep`` uvicorn's server module makes, each stretched to a minute."""
    real = asyncio.sleep
    made: list[float] = []

    def sleep(delay: float, result: Any = None) -> Awaitable[Any]:
        if sys._getframe(1).f_globals.get("__name__") == "uvicorn.server":
            made.append(delay)
            delay = STRETCHED
        return real(delay, result)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    return made


def lifespan_config(phases: list[str]) -> ServerConfig:
    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        phases.append("startup")
        yield
        phases.append("shutdown")

    return ServerConfig(tokens=[generate_token()], extensions=[Extension(lifespan=lifespan)])


def refused(port: int) -> bool:
    """Whether the server has stopped accepting: the first step of its shutdown."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError:
        return True
    return False


def test_a_stop_waits_on_no_uvicorn_timer(uvicorn_sleeps: list[float]) -> None:
    phases: list[str] = []
    with running_server(slow, config=lifespan_config(phases)) as server:
        with server.client() as client:
            assert client.send({"hook_event_name": "PreToolUse", "tool_name": "x"}).no_opinion
        assert phases == ["startup"]
    # the thread was joined: the lifespan shut down and no uvicorn sleep was waited on
    assert phases == ["startup", "shutdown"]
    assert uvicorn_sleeps == []


def test_an_in_flight_request_is_answered_during_the_stop(uvicorn_sleeps: list[float]) -> None:
    entered.clear()
    release.clear()
    phases: list[str] = []
    answers: list[httpx.Response] = []
    with contextlib.ExitStack() as stack:
        # the stack holds the server alone: closing it is the stop, run in a thread of its own
        server = stack.enter_context(running_server(slow, config=lifespan_config(phases)))
        http = server.http(timeout=30)
        event = {"hook_event_name": "PreToolUse", "tool_name": "Slow", "tool_input": {}}
        asking = threading.Thread(target=lambda: answers.append(http.post("/hooks", json=event)))
        asking.start()
        assert entered.wait(30), "the handler was not called"
        stopping = threading.Thread(target=stack.close)
        stopping.start()
        try:
            for _ in range(300):
                if refused(server.port):
                    break
                threading.Event().wait(0.05)
            else:
                pytest.fail("the server did not begin to stop")
            # stopping, and held by the request in flight: the lifespan has not shut down
            assert phases == ["startup"]
            assert stopping.is_alive()
        finally:
            release.set()
        asking.join(30)
        stopping.join(30)
        http.close()
    (answer,) = answers
    assert answer.status_code == 200
    assert answer.json()["hookSpecificOutput"]["permissionDecisionReason"] == (
        "answered after the stop began"
    )
    assert phases == ["startup", "shutdown"]
    assert uvicorn_sleeps == []


# PromptServer replaces these two methods of uvicorn.Server with copies whose waits are prompt;
# a change to uvicorn's must be looked at (and the copy brought in line) before this is updated
COPIED = {
    "main_loop": "afccb353a119333f206ffa120abc9efdc46a1ac60fe93485acfda2a271d75a62",
    "shutdown": "9b33c50562992b1e3cef2a9611408ece6c01d46ee17eaae2091b6091bf826eab",
}


@pytest.mark.parametrize("method", sorted(COPIED))
def test_the_copied_uvicorn_methods_are_unchanged(method: str) -> None:
    source = inspect.getsource(getattr(uvicorn.Server, method))
    digest = hashlib.sha256(source.encode()).hexdigest()
    assert digest == COPIED[method], (
        f"uvicorn.Server.{method} changed: bring PromptServer.{method} "
        f"(handler_kit/testing/_server.py) in line, then pin {digest}"
    )
    assert method in vars(PromptServer)
