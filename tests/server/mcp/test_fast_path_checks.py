"""The fast path asks the SDK's own header checks (Content-Type, Accept, Host, Origin) whether
it may answer a request, rather than copies of them: a request they refuse gets the SDK's
error, with or without the fast path; an SDK that tightens one of them is followed; and an
SDK without one of them turns the fast path off, with one warning."""

from __future__ import annotations

import json
import logging
import types
from typing import Any

import httpx
import pytest
from mcp.server import streamable_http as sdk_http
from mcp.server import transport_security as sdk_security

from example_servers import refund_gate
from handler_kit.server.mcp import _fast_path, create_mcp_mount
from tests.server.mcp.support import DENY_640, DENY_ARGS, PathCounter, in_process, run

CALL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "refund_gate", "arguments": DENY_ARGS},
    }
).encode()
JSON = {"Content-Type": "application/json", "Accept": "application/json"}


def not_acceptable(message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}


# (label, headers, expected status, expected JSON body)
REFUSED: list[tuple[str, dict[str, str], int, dict[str, Any]]] = [
    (
        "bad host",
        {**JSON, "Host": "evil.example"},
        421,
        {"error": "misdirected_request", "message": "Invalid Host header"},
    ),
    (
        "bad origin",
        {**JSON, "Origin": "https://evil.example"},
        403,
        {"error": "forbidden", "message": "Invalid Origin header"},
    ),
    (
        "no accept",
        {"Content-Type": "application/json"},
        406,
        not_acceptable("Not Acceptable: Client must accept application/json"),
    ),
    (
        "accept without json",
        {"Content-Type": "application/json", "Accept": "text/event-stream"},
        406,
        not_acceptable("Not Acceptable: Client must accept application/json"),
    ),
    (
        "text content type",
        {"Content-Type": "text/plain", "Accept": "application/json"},
        400,
        {"error": "bad_request", "message": "Invalid Content-Type header"},
    ),
    (
        "json-like content type",
        {"Content-Type": "application/jsonx", "Accept": "application/json"},
        415,
        not_acceptable("Unsupported Media Type: Content-Type must be application/json"),
    ),
]


def post(mount: Any, headers: dict[str, str]) -> httpx.Response:
    async def once() -> httpx.Response:
        async with in_process(mount) as http:
            del http.headers["accept"]  # httpx's default: each case sends its own, or none
            return await http.post("/mcp", content=CALL, headers=headers)

    return run(once())  # type: ignore[no-any-return]


@pytest.mark.parametrize("fast", [True, False], ids=["fast path", "sdk"])
@pytest.mark.parametrize(
    ("label", "headers", "status", "body"), REFUSED, ids=[c[0] for c in REFUSED]
)
def test_a_refused_request_gets_the_sdk_error(
    fast: bool, label: str, headers: dict[str, str], status: int, body: dict[str, Any]
) -> None:
    counter = PathCounter()
    mount = create_mcp_mount(refund_gate.app.extended(observers=[counter]), fast_path=fast)
    response = post(mount, headers)
    assert response.status_code == status, label
    assert response.headers["content-type"] == "application/json"
    assert response.json() == body
    assert counter.paths == []  # no handler ran


# An SDK release that tightens a rule, as the fast path must follow it: each patch refuses a
# request the installed SDK accepts; (label, object, attribute, replacement, headers, status,
# body).
def _strict_accept(request: Any) -> tuple[bool, bool]:
    has_json = request.headers.get("accept", "") == "application/json"
    return has_json, False


TIGHTENED: list[tuple[str, Any, str, Any, dict[str, str], int, dict[str, Any]]] = [
    (
        "accept wildcards refused",
        sdk_http,
        "check_accept_headers",
        _strict_accept,
        {"Content-Type": "application/json", "Accept": "*/*"},
        406,
        not_acceptable("Not Acceptable: Client must accept application/json"),
    ),
    (
        "host without port refused",
        sdk_security.TransportSecurityMiddleware,
        "_validate_host",
        lambda self, host: bool(host) and ":" in host,
        {**JSON, "Host": "localhost"},
        421,
        {"error": "misdirected_request", "message": "Invalid Host header"},
    ),
    (
        "http origins refused",
        sdk_security.TransportSecurityMiddleware,
        "_validate_origin",
        lambda self, origin: not origin or origin.startswith("https://"),
        {**JSON, "Origin": "http://localhost"},
        403,
        {"error": "forbidden", "message": "Invalid Origin header"},
    ),
    (
        "content type parameters refused",
        sdk_security.TransportSecurityMiddleware,
        "_validate_content_type",
        lambda self, content_type: content_type == "application/json",
        {"Content-Type": "application/json; charset=utf-8", "Accept": "application/json"},
        400,
        {"error": "bad_request", "message": "Invalid Content-Type header"},
    ),
]


@pytest.mark.parametrize(
    ("label", "owner", "attribute", "replacement", "headers", "status", "body"),
    TIGHTENED,
    ids=[c[0] for c in TIGHTENED],
)
def test_the_fast_path_follows_a_tightened_sdk_check(
    monkeypatch: pytest.MonkeyPatch,
    label: str,
    owner: Any,
    attribute: str,
    replacement: Any,
    headers: dict[str, str],
    status: int,
    body: dict[str, Any],
) -> None:
    counter = PathCounter()
    mount = create_mcp_mount(refund_gate.app.extended(observers=[counter]))
    assert post(mount, headers).status_code == 200  # the installed SDK's rule takes it
    monkeypatch.setattr(owner, attribute, replacement)
    mount = create_mcp_mount(refund_gate.app.extended(observers=[counter]))
    response = post(mount, headers)
    assert response.status_code == status, label
    assert response.json() == body
    assert counter.paths == ["fast"]  # the first call only


def test_the_fast_path_turns_itself_off_without_an_sdk_check(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An SDK that renamed its Accept rule: the fast path does not run without it, and the
    SDK (which has its own, whatever it is called) answers every request."""
    renamed = types.SimpleNamespace(
        StreamableHTTPServerTransport=sdk_http.StreamableHTTPServerTransport
    )
    monkeypatch.setattr(_fast_path, "sdk_http", renamed)
    counter = PathCounter()
    with caplog.at_level(logging.WARNING, logger="handler_kit.mcp"):
        mount = create_mcp_mount(refund_gate.app.extended(observers=[counter]))
    assert mount.fast_path is False
    warnings = [r for r in caplog.records if "fast path disabled" in r.getMessage()]
    assert len(warnings) == 1 and "header check" in warnings[0].getMessage()
    for _ in "12":
        response = post(mount, JSON)
        assert response.status_code == 200, response.text
        assert response.json()["result"]["content"][0]["text"] == DENY_640
    refused = post(mount, {**JSON, "Host": "evil.example"})
    assert refused.status_code == 421
    assert refused.json() == {"error": "misdirected_request", "message": "Invalid Host header"}
    assert counter.paths == ["sdk", "sdk"]
