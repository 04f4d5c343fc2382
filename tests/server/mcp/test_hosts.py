"""Which Host and Origin headers ``/mcp`` answers: the SDK's DNS-rebinding checks, configured
from ``allowed_hosts``."""

from __future__ import annotations

import pytest

from example_servers import refund_gate
from handler_kit.config import ServerConfig
from handler_kit.server.mcp import ALL_HOSTS, LOOPBACK_HOSTS, transport_security
from handler_kit.testing import RunningServer, running_server
from tests.server.mcp.support import TOKEN


def test_settings_accept_loopback_and_each_configured_form() -> None:
    settings = transport_security(["Hooks.Example.com", "api.example:8443", "[::2]:9000", " "])
    assert settings.enable_dns_rebinding_protection is True
    for name in LOOPBACK_HOSTS:
        assert {name, f"{name}:*"} <= set(settings.allowed_hosts)
    # a bare name: any port or none; host:port: that port only; names are matched lower-case
    assert {"hooks.example.com", "hooks.example.com:*"} <= set(settings.allowed_hosts)
    assert "api.example:8443" in settings.allowed_hosts
    assert "api.example" not in settings.allowed_hosts
    assert "[::2]:9000" in settings.allowed_hosts
    assert len(settings.allowed_hosts) == len(set(settings.allowed_hosts))
    for host in settings.allowed_hosts:
        for scheme in ("http", "https"):
            assert f"{scheme}://{host}" in settings.allowed_origins
    assert transport_security([ALL_HOSTS]).enable_dns_rebinding_protection is False


def test_default_hosts_are_loopback_only(gate: RunningServer) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with gate.http() as http:
        for host, status in (
            (f"127.0.0.1:{gate.port}", 200),
            (f"localhost:{gate.port}", 200),
            ("localhost", 200),
            ("hooks.example.com", 421),
            ("evil.example:80", 421),
        ):
            response = http.post("/mcp", json=request, headers={"Host": host})
            assert response.status_code == status, (host, response.text)
        evil_origin = http.post("/mcp", json=request, headers={"Origin": "https://evil.example"})
        assert evil_origin.status_code == 403


def test_configured_hosts_are_accepted() -> None:
    config = ServerConfig(tokens=[TOKEN], allowed_hosts=["hooks.example.com", "api.example:8443"])
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with running_server(refund_gate.app, config=config) as server, server.http() as http:
        for host, status in (
            ("hooks.example.com", 200),
            ("hooks.example.com:443", 200),
            ("api.example:8443", 200),
            ("api.example", 421),
            ("other.example.com", 421),
        ):
            response = http.post("/mcp", json=request, headers={"Host": host})
            assert response.status_code == status, host
        origin = {"Host": "hooks.example.com", "Origin": "https://hooks.example.com"}
        assert http.post("/mcp", json=request, headers=origin).status_code == 200


def test_any_host_turns_the_check_off() -> None:
    config = ServerConfig(tokens=[TOKEN], allowed_hosts=["*"])
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with running_server(refund_gate.app, config=config) as server, server.http() as http:
        response = http.post("/mcp", json=request, headers={"Host": "whatever.example"})
        assert response.status_code == 200


def test_unsupported_host_patterns_fail_at_start() -> None:
    for bad in ("*:443", "*.example.com", "https://hooks.example.com"):
        with pytest.raises(ValueError, match="not supported"):
            transport_security([bad])
