"""The mount itself, in process: its lifespan, and which code answers in which mode."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest

from example_servers import refund_gate
from handler_kit.server.mcp import create_mcp_mount
from tests.server.mcp.support import (
    DENY_640,
    DENY_ARGS,
    JSON_HEADERS,
    PathCounter,
    in_process,
    run,
)

CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "refund_gate", "arguments": DENY_ARGS},
}


def test_lifespan_can_run_again_and_requires_entry() -> None:
    mount = create_mcp_mount(refund_gate.app)

    async def cycle() -> None:
        for _ in range(2):
            async with mount.lifespan():  # noqa: SIM117 - nested on purpose
                async with mount.lifespan():  # nested: shares the running manager
                    assert mount._manager is not None
            assert mount._manager is None

    run(cycle())

    async def unstarted() -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"{}"}

        async def send(message: MutableMapping[str, Any]) -> None:
            pass

        scope = {"type": "http", "method": "POST", "headers": [], "path": "/mcp"}
        await mount.asgi(scope, receive, send)

    with pytest.raises(RuntimeError, match="lifespan"):
        run(unstarted())


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({}, "fast"),
        ({"fast_path": True}, "fast"),
        ({"fast_path": False}, "sdk"),
    ],
    ids=["default", "on", "off"],
)
def test_fast_path_is_chosen_by_the_constructor(options: dict[str, Any], path: str) -> None:
    counter = PathCounter()
    mount = create_mcp_mount(refund_gate.app.extended(observers=[counter]), **options)
    assert mount.fast_path is (path == "fast")

    async def tool_call() -> Any:
        async with in_process(mount) as http:
            return await http.post("/mcp", json=CALL, headers=JSON_HEADERS)

    response = run(tool_call())
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["content"] == [{"type": "text", "text": DENY_640}]
    assert counter.paths == [path]


@pytest.mark.parametrize("options", [{"stateless": False}, {"json_response": False}])
def test_sessions_and_streaming_have_no_fast_path(options: dict[str, Any]) -> None:
    """The fast path mirrors the stateless JSON mode only; the other modes are the SDK's."""
    assert create_mcp_mount(refund_gate.app, **options).fast_path is False
    assert create_mcp_mount(refund_gate.app, fast_path=True, **options).fast_path is False
