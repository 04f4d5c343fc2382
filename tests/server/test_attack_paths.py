"""Attacks on which paths need a token, on real uvicorn, served alone and mounted under a
prefix in a Starlette app: no spelling of a path (dot segments, encoded slashes, doubled
slashes, a query or fragment that names another route, a case change, any method) reaches
the webhook, MCP or ``/openapi.json`` without a token; only ``/healthz`` and ``/readyz``
answer without one. And an MCP path another spelling would reach differently is refused."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from example_servers import refund_gate
from handler_kit.config import ConfigError, ServerConfig
from tests.server.support import TOKEN
from tests.support.processes import serve_asgi

PATHS = [
    "/openapi.json",
    "/openapi.json/",
    "//openapi.json",
    "/%2e/openapi.json",
    "/openapi%2ejson",
    "/healthz/../openapi.json",
    "/healthz/../hooks",
    "/healthz%2F..%2Fhooks",
    "/healthz%2f..%2fhooks/refund_gate",
    "/readyz/../hooks",
    "/hooks",
    "/hooks/",
    "//hooks",
    "/./hooks",
    "/hooks/refund_gate",
    "/HOOKS",
    "/mcp",
    "/mcp/",
    "/_inspector/../hooks",
    "/metrics",
]
METHODS = ["GET", "HEAD", "POST", "OPTIONS", "PUT"]
BODY = b'{"hook_event_name":"PreToolUse","tool_name":"issue_refund","tool_input":{"amount":640}}'


def config() -> ServerConfig:
    # every refusal a 401: the limit on failed attempts would turn them into 429s
    return ServerConfig(tokens=[TOKEN], auth_failure_limit=100_000)


@pytest.fixture(scope="module")
def alone() -> Iterator[int]:
    with serve_asgi(refund_gate.app.asgi(config()), None) as port:
        yield port


@pytest.fixture(scope="module")
def mounted() -> Iterator[int]:
    server = refund_gate.app.asgi(config())
    host = Starlette(routes=[Mount("/agent", app=server)], lifespan=server.lifespan)
    with serve_asgi(host, None) as port:
        yield port


def status(port: int, method: str, target: str, token: str | None = None) -> int:
    """The status line's code for a request sent byte for byte (no client normalises it)."""
    head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    if token is not None:
        head += f"Authorization: Bearer {token}\r\n"
    head += f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head.encode() + BODY)
        received = b""
        while b"\r\n" not in received:
            chunk = sock.recv(4096)
            if not chunk:
                break
            received += chunk
    return int(received.split(b" ", 2)[1])


@pytest.mark.parametrize("prefix", ["", "/agent"])
def test_no_spelling_of_a_path_gets_past_the_token(prefix: str, alone: int, mounted: int) -> None:
    port = mounted if prefix else alone
    let_through = [
        f"{method} {prefix}{path} -> {code}"
        for path in PATHS
        for method in METHODS
        if (code := status(port, method, prefix + path)) != 401
    ]
    assert let_through == []
    for wrong in ("x" * 40, TOKEN[:-1], TOKEN.upper(), f"{TOKEN},{TOKEN}", f"{TOKEN}\\x00"):
        assert status(port, "GET", f"{prefix}/openapi.json", wrong) == 401
    assert status(port, "GET", f"{prefix}/openapi.json", TOKEN) == 200
    # the query and fragment are not the path: these are /healthz, answered as /healthz
    assert status(port, "GET", f"{prefix}/healthz?/hooks") == 200
    assert status(port, "POST", f"{prefix}/healthz?/hooks") == 405


@pytest.mark.parametrize(
    "path", ["/a/../hooks", "/x/./mcp", "/..", "/.", "/mcp/..", "/_inspector/x", "/mcpé"]
)
def test_an_mcp_path_with_another_spelling_is_refused(path: str) -> None:
    with pytest.raises(ConfigError, match="HANDLER_KIT_MCP_PATH"):
        ServerConfig(mcp_path=path)
