"""Authentication rules through a real server: JWT claims a server must refuse (an audience it
did not ask for, times that are not numbers), HMAC secrets too short to start with, and the
per-address limit on failed authentications with its summary logging (trusted proxies
included), on ``/hooks`` and ``/mcp``."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest

from example_servers.refund_gate import app as refund_app
from handler_kit.auth import JWTAuth
from handler_kit.config import ConfigError, JWTConfig, ServerConfig
from handler_kit.testing import RunningServer, running_server
from tests.support.http import error_body
from tests.support.logs import wait_for_record
from tests.support.payloads import REFUND_DENY, REFUND_EVENT
from tests.support.processes import clean_env, free_port, process, serve_argv

SECRET = "auth-rules-hs256-secret-0123456789abcdef"
TOKEN = "auth-rules-token-0123456789abcdef"
WRONG = "auth-rules-wrong-0123456789abcdef"
LIMIT = 4
WINDOW = 3.0  # waited out by the test: short, yet the burst and its checks fit in it
# well within one window, even on a slow machine
BURST = 30
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def hs(claims: dict[str, Any]) -> str:
    return jwt.encode(claims, SECRET, algorithm="HS256")


def later(seconds: int = 600) -> int:
    return int(time.time()) + seconds


def plain(server: RunningServer) -> httpx.Client:
    """A client that sends no token unless told to."""
    return httpx.Client(base_url=server.url, timeout=10)


def post_hook(http: httpx.Client, token: str, **headers: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", **headers}
    return http.post("/hooks", json=REFUND_EVENT, headers=headers)


# -- JWT claims ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jwt_server() -> Iterator[RunningServer]:
    """HS256, no audience and no issuer configured."""
    config = ServerConfig(jwt=JWTConfig(algorithms=("HS256",), secret=SECRET))
    with running_server(refund_app, config=config) as server:
        yield server


def test_a_jwt_without_audience_is_accepted_by_a_server_that_names_none(jwt_server) -> None:
    with plain(jwt_server) as http:
        response = post_hook(http, hs({"sub": "runbear", "exp": later()}))
    assert response.status_code == 200, response.text
    assert response.json() == REFUND_DENY


@pytest.mark.parametrize("audience", ["another-service", ["another-service", "x"]])
def test_a_jwt_for_an_audience_is_refused_by_a_server_that_names_none(
    jwt_server, audience: Any
) -> None:
    token = hs({"sub": "runbear", "exp": later(), "aud": audience})
    with plain(jwt_server) as http:
        response = post_hook(http, token)
    body = error_body(response, 401, "unauthorized")
    assert "audience" in body["message"]


@pytest.mark.parametrize(
    "claims",
    [
        pytest.param({"exp": str(later())}, id="exp-string"),
        pytest.param({"exp": f"{later()}.0"}, id="exp-decimal-string"),
        pytest.param({"exp": later(), "nbf": "0"}, id="nbf-string"),
        pytest.param({"exp": later(), "iat": str(int(time.time()))}, id="iat-string"),
        pytest.param({"exp": True}, id="exp-boolean"),
    ],
)
def test_a_jwt_whose_times_are_not_numbers_is_refused(jwt_server, claims: dict[str, Any]) -> None:
    with plain(jwt_server) as http:
        response = post_hook(http, hs({"sub": "runbear", **claims}))
    error_body(response, 401, "unauthorized")


def test_a_short_hmac_secret_is_refused_before_serving() -> None:
    port = free_port()
    env = clean_env(HANDLER_KIT_JWT_SECRET="x", HANDLER_KIT_JWT_ALGORITHMS="HS256")
    with process(serve_argv("example_servers.refund_gate:app", port), env) as server:
        code = server.proc.wait(timeout=60)
        output = server.output()
    assert code != 0
    assert "HANDLER_KIT_JWT_SECRET" in output and "32 bytes" in output, output
    assert "Traceback" not in output
    assert "Application startup complete" not in output


@pytest.mark.parametrize(
    ("algorithms", "secret", "needed"),
    [
        (("HS256",), "s" * 31, 32),
        (("HS384",), "s" * 40, 48),
        (("HS256", "HS512"), "s" * 63, 64),
    ],
)
def test_hmac_secrets_shorter_than_their_hash_are_refused(
    algorithms: tuple[str, ...], secret: str, needed: int
) -> None:
    with pytest.raises(ConfigError, match=rf"HANDLER_KIT_JWT_SECRET.*at least {needed} bytes"):
        ServerConfig.from_env(
            {"HANDLER_KIT_JWT_SECRET": secret, "HANDLER_KIT_JWT_ALGORITHMS": ",".join(algorithms)}
        )
    with pytest.raises(ValueError, match=f"at least {needed} bytes"):
        JWTAuth(algorithms=list(algorithms), key=secret)
    # one byte more is enough, and the secret is never in the message
    JWTAuth(algorithms=list(algorithms), key=secret + "s" * (needed - len(secret)))


def test_the_secret_is_not_in_the_refusal() -> None:
    secret = "short-but-secret"
    with pytest.raises(ConfigError) as caught:
        JWTConfig(algorithms=("HS256",), secret=secret)
    assert secret not in str(caught.value)


# -- failed authentications: a limit per address, and a summary in the log -----------------


def auth_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "handler_kit.auth"]


def test_a_burst_of_wrong_tokens_gets_429s_and_a_summary_not_a_line_each(caplog) -> None:
    caplog.set_level(logging.INFO)
    config = ServerConfig(tokens=[TOKEN], auth_failure_limit=LIMIT, auth_failure_window=WINDOW)
    with running_server(refund_app, config=config) as server, plain(server) as http:
        statuses = []
        for _ in range(BURST):
            response = post_hook(http, WRONG)
            statuses.append(response.status_code)
        assert statuses[:LIMIT] == [401] * LIMIT
        assert statuses[LIMIT:] == [429] * (BURST - LIMIT)
        body = error_body(response, 429, "too_many_requests")
        retry = int(response.headers["retry-after"])
        assert 1 <= retry <= WINDOW and f"{retry} s" in body["message"]
        # the MCP route shares the outer layer's count
        mcp = http.post(
            "/mcp",
            json=MCP_LIST,
            headers={**MCP_HEADERS, "Authorization": f"Bearer {WRONG}"},
        )
        error_body(mcp, 429, "too_many_requests")
        # a request that authenticates is never counted nor refused, even now
        assert post_hook(http, TOKEN).json() == REFUND_DENY
        # the summary of the window comes from the server's timer as the window ends (it
        # was armed by the window's first failure); the window over, the address starts
        # again from a 401
        wait_for_record(caplog, "more refused")
        assert post_hook(http, WRONG).status_code == 401
    lines = auth_lines(caplog)
    assert 1 <= len(lines) <= 4, [r.getMessage() for r in lines]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert WRONG not in logged and TOKEN not in logged
    # the first failure at once, the rest counted in a summary
    assert "authentication failed from 127.0.0.1" in lines[0].getMessage()
    summaries = [r.getMessage() for r in lines if "more refused" in r.getMessage()]
    assert summaries and re.search(r"\d+ of them answered 429", summaries[0]), summaries


def test_without_trusted_proxies_x_forwarded_for_does_not_escape_the_limit() -> None:
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_AUTH_FAILURE_LIMIT=str(LIMIT))
    with process(serve_argv("example_servers.refund_gate:app", port), env) as server:
        url = f"http://127.0.0.1:{port}"
        server.wait_healthy(url)
        with httpx.Client(base_url=url, timeout=10) as http:
            statuses = [
                post_hook(http, WRONG, **{"X-Forwarded-For": f"203.0.113.{n}"}).status_code
                for n in range(LIMIT + 3)
            ]
        output = server.output()
    assert statuses == [401] * LIMIT + [429] * 3
    assert WRONG not in output


def test_trusted_proxies_count_each_forwarded_client_on_its_own() -> None:
    port = free_port()
    env = clean_env(
        HANDLER_KIT_TOKENS=TOKEN,
        HANDLER_KIT_AUTH_FAILURE_LIMIT=str(LIMIT),
        HANDLER_KIT_TRUSTED_PROXIES="127.0.0.0/8,10.1.2.3",
    )
    with process(serve_argv("example_servers.refund_gate:app", port), env) as server:
        url = f"http://127.0.0.1:{port}"
        server.wait_healthy(url)
        with httpx.Client(base_url=url, timeout=10) as http:

            def attempt(forwarded: str) -> int:
                return post_hook(http, WRONG, **{"X-Forwarded-For": forwarded}).status_code

            # a client's own X-Forwarded-For entry (left of the proxies) is not believed
            first = [attempt(f"198.51.100.{n}, 203.0.113.7, 10.1.2.3") for n in range(LIMIT + 2)]
            other = attempt("203.0.113.8")
        output = server.output()
    assert first == [401] * LIMIT + [429] * 2
    assert other == 401
    assert "203.0.113.7" in output  # the client the proxies saw, in the log


def test_trusted_proxies_must_be_addresses() -> None:
    with pytest.raises(ConfigError, match="HANDLER_KIT_TRUSTED_PROXIES"):
        ServerConfig.from_env({"HANDLER_KIT_TOKENS": TOKEN, "HANDLER_KIT_TRUSTED_PROXIES": "lb"})
