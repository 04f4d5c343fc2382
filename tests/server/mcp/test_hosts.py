"""Which Host and Origin headers ``/mcp`` answers: the SDK's DNS-rebinding checks, configured
from ``allowed_hosts``."""

from __future__ import annotations

import httpx
import pytest

from example_servers import refund_gate
from handler_kit.config import ServerConfig
from handler_kit.server.mcp import ALL_HOSTS, LOOPBACK_HOSTS, transport_security
from handler_kit.testing import RunningServer, running_server
from tests.server.mcp.support import TOKEN
from tests.support.processes import REPO, clean_env, free_port, process, serve_argv


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


def test_a_refused_host_or_origin_is_logged_once_per_request() -> None:
    # the fast path asks the SDK's own checks before the SDK does: only the SDK's is logged
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, PYTHONPATH=str(REPO))
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    auth = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}
    argv = serve_argv("example_servers.refund_gate:app", port)
    with process(argv, env) as server:
        server.wait_healthy(f"http://127.0.0.1:{port}", timeout=120)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=auth) as http:
            for _ in range(3):
                response = http.post("/mcp", json=request, headers={"Host": "evil.example"})
                assert response.status_code == 421, response.text
            response = http.post("/mcp", json=request, headers={"Host": "other.example"})
            assert response.status_code == 421, response.text
            evil_origin = {"Origin": "https://evil.example"}
            for _ in range(2):
                response = http.post("/mcp", json=request, headers=evil_origin)
                assert response.status_code == 403, response.text
            assert http.post("/mcp", json=request).status_code == 200
        lines = server.output().splitlines()
    assert sum("Invalid Host header: evil.example" in line for line in lines) == 3, lines
    assert sum("Invalid Host header: other.example" in line for line in lines) == 1, lines
    assert sum("Invalid Origin header: https://evil.example" in line for line in lines) == 2, lines
