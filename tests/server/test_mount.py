"""A HookApp mounted under a prefix inside a Starlette and a FastAPI app, served by real
uvicorn: health, the webhook, MCP and /openapi.json under the prefix, with the host's lifespan
running ours, and the host's own routes untouched."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from example_servers import refund_gate
from handler_kit.config import ServerConfig
from tests.server.support import TOKEN
from tests.support.processes import serve_asgi

DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Refunds over $500 need a human approver.",
    }
}
REFUND = {
    "hook_event_name": "PreToolUse",
    "tool_name": "issue_refund",
    "tool_input": {"amount": 640},
}
AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def host_page(request: Any) -> PlainTextResponse:
    return PlainTextResponse("the host's own page")


@pytest.fixture(scope="module")
def starlette_host() -> Iterator[str]:
    """The documented one line for Starlette: the HookApp itself as the mounted app and its
    lifespan as the host's, configured from the environment."""
    hooks = refund_gate.app.extended()  # a fresh server of the same handlers
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HANDLER_KIT_TOKENS", TOKEN)
        app = Starlette(
            routes=[Route("/", host_page), Mount("/agent", app=hooks)], lifespan=hooks.lifespan
        )
        with serve_asgi(app, None) as port:
            yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def fastapi_host() -> Iterator[str]:
    """FastAPI, with the server built from an explicit config (``hooks.asgi(config)``)."""
    server = refund_gate.app.asgi(ServerConfig(tokens=[TOKEN]))
    app = FastAPI(lifespan=server.lifespan)

    @app.get("/ping")
    def ping() -> dict[str, str]:
        return {"host": "fastapi"}

    app.mount("/agent", server)
    with serve_asgi(app, None) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def no_lifespan_host() -> Iterator[str]:
    """Mounted without passing its lifespan: MCP cannot run, and says why."""
    server = refund_gate.app.asgi(ServerConfig(tokens=[TOKEN]))
    app = Starlette(routes=[Mount("/agent", app=server)])
    with serve_asgi(app, None) as port:
        yield f"http://127.0.0.1:{port}"


HOSTS = ["starlette_host", "fastapi_host"]


async def _mcp_call(url: str) -> tuple[list[str], str]:
    """List the tools and call the refund gate with the real MCP client."""
    async with (
        httpx2.AsyncClient(headers=AUTH, timeout=httpx2.Timeout(30)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = await client.list_tools()
        result = await client.call_tool("refund_gate", REFUND)
    text: str = result.content[0].text  # type: ignore[union-attr]
    return [tool.name for tool in tools.tools], text


@pytest.mark.parametrize("host", HOSTS)
def test_health_under_the_prefix_needs_no_token(host: str, request: pytest.FixtureRequest) -> None:
    base = request.getfixturevalue(host)
    response = httpx.get(f"{base}/agent/healthz", timeout=10)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "ok"
    assert "refund_gate" in [h["name"] for h in response.json()["handlers"]]


@pytest.mark.parametrize("host", HOSTS)
def test_webhook_under_the_prefix(host: str, request: pytest.FixtureRequest) -> None:
    base = request.getfixturevalue(host)
    with httpx.Client(base_url=f"{base}/agent", timeout=10) as http:
        refused = http.post("/hooks/refund_gate", json=REFUND)
        assert refused.status_code == 401
        assert refused.json()["error"] == "unauthorized"
        answered = http.post("/hooks/refund_gate", json=REFUND, headers=AUTH)
        assert answered.status_code == 200, answered.text
        assert answered.json() == DENY
        assert http.post("/hooks", json=REFUND, headers=AUTH).json() == DENY
        missing = http.post("/hooks/nobody", json=REFUND, headers=AUTH)
        assert missing.status_code == 404
        assert missing.json()["error"] == "unknown_handler"


@pytest.mark.parametrize("host", HOSTS)
def test_mcp_under_the_prefix_runs_in_the_hosts_lifespan(
    host: str, request: pytest.FixtureRequest
) -> None:
    base = request.getfixturevalue(host)
    names, text = asyncio.run(_mcp_call(f"{base}/agent/mcp"))
    assert "refund_gate" in names
    assert text == (
        '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
        '"permissionDecisionReason":"Refunds over $500 need a human approver."}}'
    )
    refused = httpx.post(f"{base}/agent/mcp", json={}, timeout=10)
    assert refused.status_code == 401


@pytest.mark.parametrize("host", HOSTS)
def test_openapi_under_the_prefix(host: str, request: pytest.FixtureRequest) -> None:
    base = request.getfixturevalue(host)
    assert httpx.get(f"{base}/agent/openapi.json", timeout=10).status_code == 401
    document = httpx.get(f"{base}/agent/openapi.json", headers=AUTH, timeout=10).json()
    assert document["servers"] == [{"url": "/agent"}]
    assert "/hooks/refund_gate" in document["paths"]


def test_the_hosts_own_routes_still_answer(starlette_host: str, fastapi_host: str) -> None:
    page = httpx.get(f"{starlette_host}/", timeout=10)
    assert (page.status_code, page.text) == (200, "the host's own page")
    ping = httpx.get(f"{fastapi_host}/ping", timeout=10)
    assert (ping.status_code, ping.json()) == (200, {"host": "fastapi"})
    # FastAPI's own document stays its own; ours is the mounted app's
    assert "/ping" in httpx.get(f"{fastapi_host}/openapi.json", timeout=10).json()["paths"]
    # paths outside the mount are the host's: no token asked, its own 404
    assert httpx.get(f"{starlette_host}/hooks/refund_gate", timeout=10).status_code == 404


def test_mounted_without_its_lifespan_mcp_says_so(no_lifespan_host: str) -> None:
    response = httpx.post(
        f"{no_lifespan_host}/agent/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**AUTH, "Accept": "application/json, text/event-stream"},
        timeout=10,
    )
    assert response.status_code == 503
    assert response.json()["error"] == "not_started"
    assert "lifespan=hooks.lifespan" in response.json()["message"]
    # the webhook needs no lifespan
    answered = httpx.post(
        f"{no_lifespan_host}/agent/hooks/refund_gate", json=REFUND, headers=AUTH, timeout=10
    )
    assert answered.json() == DENY


def test_a_hookapp_served_as_it_is_builds_its_server_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``uvicorn module:app``: the HookApp itself is the ASGI app; its first call builds the
    server, configured from HANDLER_KIT_* variables."""
    monkeypatch.setenv("HANDLER_KIT_TOKENS", TOKEN)
    hooks = refund_gate.app.extended()

    async def post(headers: dict[str, str]) -> httpx.Response:
        transport = httpx.ASGITransport(app=hooks)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent") as http:
            return await http.post("/hooks/refund_gate", json=REFUND, headers=headers)

    assert asyncio.run(post({})).status_code == 401
    assert asyncio.run(post(AUTH)).json() == DENY


def test_keyword_options_replace_the_environments_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDLER_KIT_TOKENS", "not-the-token")
    server = refund_gate.app.extended().asgi(tokens=[TOKEN])

    async def post(headers: dict[str, str]) -> httpx.Response:
        transport = httpx.ASGITransport(app=server)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent") as http:
            return await http.post("/hooks/refund_gate", json=REFUND, headers=headers)

    assert asyncio.run(post({})).status_code == 401
    assert asyncio.run(post({"Authorization": "Bearer not-the-token"})).status_code == 401
    assert asyncio.run(post(AUTH)).json() == DENY


def test_a_config_and_keyword_options_together_are_refused() -> None:
    with pytest.raises(TypeError) as info:
        refund_gate.app.asgi(ServerConfig(tokens=[TOKEN]), tokens=[TOKEN])
    assert str(info.value) == "pass either a ServerConfig or keyword options, not both"


def test_a_new_hookapp_is_an_asgi_app_before_any_lifespan(monkeypatch: pytest.MonkeyPatch) -> None:
    from handler_kit import HookApp

    monkeypatch.setenv("HANDLER_KIT_TOKENS", TOKEN)
    hooks = HookApp("bare")

    async def health() -> httpx.Response:
        transport = httpx.ASGITransport(app=hooks)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent") as http:
            return await http.get("/healthz")

    response = asyncio.run(health())
    assert (response.status_code, response.json()["status"]) == (200, "ok")
