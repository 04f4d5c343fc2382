"""The servers the MCP tests talk to, each started once per test module: the refund gate (the
server most tests use), the refund gate twice with the fast path on and off, and an app whose
handlers fail."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from example_servers import refund_gate
from handler_kit import HookApp, HookEvent, PostToolUse, PreToolUse, Stop, block, deny
from handler_kit.config import ServerConfig
from handler_kit.core.names import EVENT_NAMES
from handler_kit.testing import RunningServer, running_server
from tests.server.mcp.support import TOKEN, PathCounter


@pytest.fixture(scope="module")
def gate() -> Iterator[RunningServer]:
    with running_server(refund_gate.app, tokens=[TOKEN]) as server:
        yield server


@pytest.fixture(scope="module")
def twin_servers() -> Iterator[tuple[RunningServer, RunningServer, PathCounter]]:
    """The refund gate twice: fast path on, and off (every request through the SDK)."""
    counter = PathCounter()
    counted = refund_gate.app.extended(observers=[counter])
    config = ServerConfig(tokens=[TOKEN])
    without = ServerConfig(tokens=[TOKEN], mcp_fast_path=False)
    with (
        running_server(counted, config=config) as fast,
        running_server(counted, config=without) as sdk,
    ):
        assert fast.asgi is not None and fast.asgi.mcp_mount is not None
        assert sdk.asgi is not None and sdk.asgi.mcp_mount is not None
        assert fast.asgi.mcp_mount.fast_path and not sdk.asgi.mcp_mount.fast_path
        yield fast, sdk, counter


def failing_app() -> HookApp:
    hooks = HookApp("failing")

    @hooks.post_tool_use()
    def crashes(event: PostToolUse) -> None:
        """Always raises."""
        raise RuntimeError("secret database password hunter2")

    @hooks.pre_tool_use(matcher="issue_refund", fail_closed=True)
    def crashing_gate(event: PreToolUse) -> None:
        """A policy gate that raises."""
        raise RuntimeError("secret detail")

    # short deadlines: the handlers always sleep past them (a slower machine only later)
    @hooks.pre_tool_use(name="slow_gate", timeout=0.3, fail_closed=True)
    async def slow_gate(event: PreToolUse) -> Any:
        await asyncio.sleep(5)
        return deny("too late")

    @hooks.stop(timeout=0.3)
    async def slow_check(event: Stop) -> Any:
        await asyncio.sleep(3)
        return block("too late")

    return hooks


@pytest.fixture(scope="module")
def failing() -> Iterator[RunningServer]:
    with running_server(failing_app(), tokens=[TOKEN]) as server:
        yield server


def every_event_app() -> HookApp:
    """One handler per hook event, each listed as a tool with its event's schema."""
    hooks = HookApp("every-event")
    for event in EVENT_NAMES:
        hooks.on(event, name=f"on_{event}")(_no_opinion)
    return hooks


def _no_opinion(event: HookEvent) -> None:
    """Has no opinion."""


@pytest.fixture(scope="module")
def every_event() -> Iterator[RunningServer]:
    with running_server(every_event_app(), tokens=[TOKEN]) as server:
        yield server
