"""``/mcp`` under the server's body cap and its refusals as JSON, through real uvicorn: a body
over ``max_body_bytes`` is a 413 on the fast path and through the SDK, declared or streamed,
unless it calls a fail-closed tool whose name and id lie within the cap (that tool's safe
decision, as on its webhook route: tests/server/mcp/test_unreadable.py); the SDK's Host,
Origin and Content-Type refusals keep their status with a JSON error body; JSON-RPC errors
stay the protocol's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from example_servers.refund_gate import app as refund_app
from handler_kit.config import ServerConfig
from handler_kit.testing import RunningServer, running_server
from tests.support.http import error_body

TOKEN = "mcp-limits-token-0123456789abcdef"
CAP = 2048
HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}


def call(padding: int, tool: str = "refund_gate") -> bytes:
    """A tools/call of ``tool`` (the fail-closed refund_gate by default) whose body is
    ``padding`` bytes longer than a plain one."""
    arguments = {"tool_name": "issue_refund", "tool_input": {"amount": 640, "note": "x" * padding}}
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
    ).encode()


@pytest.fixture(scope="module", params=[True, False], ids=["fast-path", "sdk"])
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    config = ServerConfig(tokens=[TOKEN], max_body_bytes=CAP, mcp_fast_path=request.param)
    with running_server(refund_app, config=config) as running:
        assert running.asgi is not None and running.asgi.mcp_mount is not None
        assert running.asgi.mcp_mount.fast_path is request.param
        yield running


def post(server: RunningServer, content: Any, **headers: str) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        return http.post("/mcp", content=content, headers={**HEADERS, **headers})


def test_a_body_under_the_cap_is_answered(server: RunningServer) -> None:
    body = call(CAP // 2)
    assert len(body) < CAP
    response = post(server, body)
    assert response.status_code == 200, response.text
    assert "Refunds over $500" in response.json()["result"]["content"][0]["text"]


@pytest.mark.parametrize("size", [CAP + 1, 3 * CAP, 5 * 1024 * 1024])
def test_a_body_over_the_cap_is_a_json_413(server: RunningServer, size: int) -> None:
    """For a tool that fails open (the fail-closed gate answers its safe decision)."""
    body = call(size, "refund_audit_note")
    assert len(body) > CAP
    body_json = error_body(post(server, body), 413, "body_too_large")
    assert f"{CAP}-byte limit" in body_json["message"]


def test_a_streamed_body_over_the_cap_is_a_json_413(server: RunningServer) -> None:
    body = call(4 * CAP, "refund_audit_note")

    def chunks() -> Iterator[bytes]:  # no Content-Length: sent chunked
        for start in range(0, len(body), 512):
            yield body[start : start + 512]

    response = post(server, chunks())
    error_body(response, 413, "body_too_large")


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"Host": "evil.example"}, 421, "misdirected_request"),
        ({"Origin": "https://evil.example"}, 403, "forbidden"),
        ({"Content-Type": "text/plain"}, 400, "bad_request"),
    ],
)
def test_the_sdks_refusals_are_json_with_their_status(
    server: RunningServer, headers: dict[str, str], status: int, code: str
) -> None:
    response = post(server, call(0), **headers)
    body = error_body(response, status, code)
    assert body["message"]  # the SDK's own words


def test_json_rpc_errors_stay_the_protocols(server: RunningServer) -> None:
    response = post(server, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["jsonrpc"] == "2.0" and "error" in body and "code" in body["error"]
