"""Auth through a real server: static bearer tokens (rotation) and JWT (HS256 secret, RS256
public key, JWKS URL served locally), every rejection a 401 with ``WWW-Authenticate: Bearer``,
and no token ever in the logs."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import jwt
import pytest

from handler_kit import HookApp
from handler_kit.auth import AuthError, JWTAuth, StaticTokenAuth
from handler_kit.config import ServerConfig
from handler_kit.testing import running_server
from tests.server.support import AUDIENCE, ISSUER, SECRET, TOKEN_A, TOKEN_B
from tests.support.http import error_body
from tests.support.payloads import REFUND_DENY, REFUND_EVENT
from tests.support.processes import clean_env, free_port, process, serve_argv

OTHER_SECRET = "another-secret-entirely-" + "fedcba9876543210" * 3

# -- helpers -------------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], claims: dict[str, Any], sign=None) -> str:
    """A JWT built by hand (pyjwt refuses to make the malicious ones)."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = sign(signing_input.encode()) if sign else b""
    return f"{signing_input}.{b64(signature)}"


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"sub": "runbear", "aud": AUDIENCE, "iss": ISSUER, "iat": now, "exp": now + 600}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def post(server, token: str | None, **kwargs: Any) -> httpx.Response:
    headers = {"X-Runbear-Hook-Event": "PreToolUse"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(kwargs.pop("headers", {}))
    with httpx.Client(base_url=server.url, verify=verify(server), timeout=10) as http:
        return http.post("/hooks", json=REFUND_EVENT, headers=headers, **kwargs)


def verify(server) -> Any:
    return ssl.create_default_context(cafile=server.ca_file) if server.ca_file else True


def assert_401(response: httpx.Response, invalid_token: bool = True) -> None:
    error_body(response, 401, "unauthorized")
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer")
    if invalid_token:
        assert 'error="invalid_token"' in challenge


def assert_ok(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text
    assert response.json() == REFUND_DENY


# -- static tokens -------------------------------------------------------------------------


def test_several_static_tokens_accepted_for_rotation(static_server):
    assert_ok(post(static_server, TOKEN_A))
    assert_ok(post(static_server, TOKEN_B))


@pytest.mark.parametrize(
    "authorization",
    [
        f"Bearer {TOKEN_A}x",
        f"Bearer {TOKEN_A[:-1]}",
        "Bearer token-c-0000000000000000",
        f"Basic {TOKEN_A}",
        f"Token {TOKEN_A}",
        "Bearer",
        TOKEN_A,
    ],
)
def test_wrong_static_token_is_401(static_server, authorization):
    response = post(static_server, None, headers={"Authorization": authorization})
    assert_401(response)
    assert TOKEN_A not in response.text


def test_missing_token_is_401_with_bearer_challenge(static_server):
    response = post(static_server, None)
    assert_401(response, invalid_token=False)
    assert response.headers["www-authenticate"] == 'Bearer realm="handler-kit"'


def test_every_route_but_healthz_needs_the_token(static_server):
    with httpx.Client(base_url=static_server.url, verify=verify(static_server)) as http:
        assert http.get("/healthz").status_code == 200
        for method, path in [
            ("POST", "/hooks/refund_gate"),
            ("GET", "/hooks"),
            ("POST", "/mcp"),
            ("GET", "/anything"),
        ]:
            assert_401(http.request(method, path), invalid_token=False)


def test_static_token_rules():
    with pytest.raises(ValueError, match="at least one"):
        StaticTokenAuth(["", "  "])
    with pytest.raises(ValueError, match="16 characters"):
        StaticTokenAuth(["short"])
    auth = StaticTokenAuth([TOKEN_A, TOKEN_B])
    assert auth.check(f"Bearer {TOKEN_B}".encode()) == "token#1"
    with pytest.raises(AuthError) as info:
        auth.check(b"Bearer nope-nope-nope-nope")
    assert "nope" not in str(info.value)


def test_static_token_readings_and_a_repeated_token():
    auth = StaticTokenAuth([TOKEN_A, TOKEN_B, TOKEN_A])
    assert auth.check(f"Bearer {TOKEN_A}".encode()) == "token#0"  # the first of a repeat
    assert auth.check(f"Bearer {TOKEN_B}".encode()) == "token#1"
    # not the plain form: the general reading (any case of the scheme, spaces around)
    assert auth.check(f"bearer {TOKEN_B}".encode()) == "token#1"
    assert auth.check(f"Bearer  {TOKEN_A} ".encode()) == "token#0"
    for wrong, message in [
        (None, "missing bearer token"),
        (b"", "missing bearer token"),
        (b"Bearer ", "must be 'Bearer <token>'"),
        (f"Basic {TOKEN_A}".encode(), "must be 'Bearer <token>'"),
        (f"Bearer {TOKEN_A}x".encode(), "invalid bearer token"),
    ]:
        with pytest.raises(AuthError, match=message):
            auth.check(wrong)


# -- JWT: HS256 with a static secret -------------------------------------------------------


def hs(payload: dict[str, Any], secret: str = SECRET, algorithm: str = "HS256") -> str:
    return jwt.encode(payload, secret, algorithm=algorithm)


def test_hs256_valid_token(hs_server):
    assert_ok(post(hs_server, hs(claims())))


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: hs(claims(exp=int(time.time()) - 3600)), id="expired"),
        pytest.param(lambda: hs(claims(nbf=int(time.time()) + 3600)), id="nbf-in-future"),
        pytest.param(lambda: hs(claims(aud="someone-else")), id="wrong-audience"),
        pytest.param(lambda: hs(claims(aud=None)), id="no-audience"),
        pytest.param(lambda: hs(claims(iss="https://evil.example")), id="wrong-issuer"),
        pytest.param(lambda: hs(claims(iss=None)), id="no-issuer"),
        pytest.param(lambda: hs(claims(exp=None)), id="no-exp"),
        pytest.param(lambda: hs(claims(), secret=OTHER_SECRET), id="bad-sig"),
        pytest.param(
            lambda: hs(claims(), secret=SECRET * 2, algorithm="HS512"), id="alg-not-allowed"
        ),
        pytest.param(lambda: forge({"alg": "none", "typ": "JWT"}, claims()), id="alg-none"),
        pytest.param(lambda: forge({"alg": "None", "typ": "JWT"}, claims()), id="alg-None"),
        pytest.param(lambda: hs(claims())[:-4] + "AAAA", id="tampered-signature"),
        pytest.param(lambda: "not.a.jwt", id="garbage"),
    ],
)
def test_hs256_rejections_are_401(hs_server, make):
    token = make()
    response = post(hs_server, token)
    assert_401(response)
    assert token not in response.text


def test_hs256_payload_tampering_is_401(hs_server):
    header, _, signature = hs(claims(sub="user")).split(".")
    forged_payload = b64(json.dumps(claims(sub="admin")).encode())
    assert_401(post(hs_server, f"{header}.{forged_payload}.{signature}"))


# -- JWT: RS256 with a public key, and the HS/RS key confusion -----------------------------


def test_rs256_valid_token(rs_server, rsa_keys):
    assert_ok(post(rs_server, jwt.encode(claims(), rsa_keys["private"], algorithm="RS256")))


def test_rs256_rejections(rs_server, rsa_keys):
    other_key = jwt.encode(claims(), rsa_keys["other"], algorithm="RS256")
    expired = jwt.encode(claims(exp=int(time.time()) - 3600), rsa_keys["private"], "RS256")
    wrong_aud = jwt.encode(claims(aud="x"), rsa_keys["private"], algorithm="RS256")
    alg_none = forge({"alg": "none", "typ": "JWT"}, claims())
    pem = rsa_keys["public_pem"].encode()
    # the classic key confusion: HS256 keyed with the server's public key PEM
    confused = forge(
        {"alg": "HS256", "typ": "JWT"},
        claims(),
        sign=lambda data: hmac.new(pem, data, hashlib.sha256).digest(),
    )
    for token in (other_key, expired, wrong_aud, alg_none, confused):
        assert_401(post(rs_server, token))


def test_jwt_configuration_refuses_unsafe_setups(rsa_keys):
    with pytest.raises(ValueError, match="explicit list"):
        JWTAuth(algorithms=[], key=SECRET)
    with pytest.raises(ValueError, match="unsupported or unsafe"):
        JWTAuth(algorithms=["none"], key=SECRET)
    with pytest.raises(ValueError, match="do not mix"):
        JWTAuth(algorithms=["HS256", "RS256"], key=rsa_keys["public_pem"])
    with pytest.raises(ValueError, match="key-confusion"):
        JWTAuth(algorithms=["HS256"], key=rsa_keys["public_pem"])
    with pytest.raises(ValueError, match="exactly one"):
        JWTAuth(algorithms=["RS256"])
    with pytest.raises(ValueError, match="exactly one"):
        JWTAuth(algorithms=["RS256"], key="k", jwks_url="https://x/jwks")
    with pytest.raises(ValueError, match="JWKS URL serves public keys"):
        JWTAuth(algorithms=["HS256"], jwks_url="https://x/jwks")


# -- JWT: JWKS URL, served from 127.0.0.1 --------------------------------------------------


class _JWKSServer:
    def __init__(self, document: dict[str, Any]) -> None:
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.hits += 1
                body = json.dumps(document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/.well-known/jwks.json"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def test_jwks_url_with_caching(rsa_keys, refund_app: HookApp):
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(rsa_keys["private"].public_key(), as_dict=True)
    jwk.update({"kid": "key-1", "use": "sig", "alg": "RS256"})
    jwks = _JWKSServer({"keys": [jwk]})
    try:
        auth = JWTAuth(algorithms=["RS256"], jwks_url=jwks.url, audience=AUDIENCE)
        with running_server(refund_app, tls=True, config=ServerConfig(auth=auth)) as server:

            def token(**kw: Any) -> str:
                return jwt.encode(
                    claims(**kw), rsa_keys["private"], "RS256", headers={"kid": "key-1"}
                )

            assert_ok(post(server, token(sub="first")))
            assert_ok(post(server, token(sub="second")))
            assert_ok(post(server, token(sub="third")))
            assert jwks.hits == 1  # the key set is fetched once and cached

            unknown_kid = jwt.encode(
                claims(), rsa_keys["private"], "RS256", headers={"kid": "key-2"}
            )
            other_key = jwt.encode(claims(), rsa_keys["other"], "RS256", headers={"kid": "key-1"})
            no_kid = jwt.encode(claims(), rsa_keys["private"], "RS256")
            expired = token(exp=int(time.time()) - 3600)
            alg_none = forge({"alg": "none", "kid": "key-1"}, claims())
            hs_confused = forge(
                {"alg": "HS256", "kid": "key-1"},
                claims(),
                sign=lambda d: hmac.new(rsa_keys["public_pem"].encode(), d, "sha256").digest(),
            )
            for bad in (unknown_kid, other_key, no_kid, expired, alg_none, hs_confused):
                assert_401(post(server, bad))
    finally:
        jwks.close()


class _StaticOrJWT:
    """Static tokens for the load, JWTs for the request under test: the first JWT the server
    sees makes it fetch the key set (a second fetch would wait out PyJWKClient's cooldown)."""

    def __init__(self, static: StaticTokenAuth, jwt_auth: JWTAuth) -> None:
        self.static = static
        self.jwt = jwt_auth

    async def authenticate(self, authorization: bytes | None) -> str:
        try:
            return self.static.check(authorization)
        except AuthError:
            return await self.jwt.authenticate(authorization)


def test_jwks_fetch_does_not_wait_for_hung_handler_threads(rsa_keys):
    """Sync handlers stuck in calls hold every thread they may, and async handlers stuck in
    ``asyncio.to_thread`` every thread of asyncio's default executor; a token signed with a
    key the server has not fetched yet is still accepted at once, its key fetched on a thread
    of neither."""
    release = threading.Event()
    hung_app = HookApp("hung")

    @hung_app.post_tool_use(matcher="sync", timeout=1)
    def hung(event):
        release.wait(60)  # a database call that stopped answering

    @hung_app.post_tool_use(matcher="async", timeout=1)
    async def hung_in_a_thread(event):
        await asyncio.to_thread(release.wait, 60)  # the same, handed to a thread

    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(rsa_keys["private"].public_key(), as_dict=True)
    jwk.update({"kid": "key-1", "use": "sig", "alg": "RS256"})
    jwks = _JWKSServer({"keys": [jwk]})
    auth = _StaticOrJWT(
        StaticTokenAuth([TOKEN_A]),
        JWTAuth(algorithms=["RS256"], jwks_url=jwks.url, audience=AUDIENCE),
    )
    try:
        with running_server(hung_app, config=ServerConfig(auth=auth)) as server:
            try:
                # one client, a connection per call (a client each would cost more than the
                # calls); more than asyncio's default executor has threads on any machine, of each
                tools = ["sync", "async"] * 40
                limits = httpx.Limits(max_connections=len(tools))
                with httpx.Client(base_url=server.url, timeout=30, limits=limits) as shared:

                    def hang(tool: str) -> int:
                        body = {"hook_event_name": "PostToolUse", "tool_name": tool}
                        headers = {"Authorization": f"Bearer {TOKEN_A}"}
                        return shared.post("/hooks", json=body, headers=headers).status_code

                    with ThreadPoolExecutor(len(tools)) as pool:
                        assert list(pool.map(hang, tools)) == [500] * len(tools)
                assert jwks.hits == 0

                fresh = jwt.encode(claims(), rsa_keys["private"], "RS256", headers={"kid": "key-1"})
                with httpx.Client(base_url=server.url, timeout=10) as http:
                    headers = {"Authorization": f"Bearer {fresh}", "X-Runbear-Hook-Event": "Stop"}
                    stop = {"hook_event_name": "Stop"}
                    response = http.post("/hooks", json=stop, headers=headers)
                assert (response.status_code, response.json()) == (200, {})
                assert jwks.hits == 1
            finally:
                release.set()  # before the server stops: it waits for its threads
    finally:
        release.set()
        jwks.close()


# -- tokens never in the logs --------------------------------------------------------------


def test_tokens_never_logged_in_process(static_server, hs_server, caplog):
    caplog.set_level(logging.DEBUG)
    good_jwt = hs(claims())
    bad_jwt = hs(claims(), secret=OTHER_SECRET)
    expired = hs(claims(exp=int(time.time()) - 3600))
    assert_ok(post(static_server, TOKEN_A))
    assert_401(post(static_server, "wrong-token-" + TOKEN_B))
    assert_ok(post(hs_server, good_jwt))
    for token in (bad_jwt, expired):
        assert_401(post(hs_server, token))
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''} {r.args!r}" for r in caplog.records)
    for secret in (TOKEN_A, TOKEN_B, SECRET, good_jwt, bad_jwt, expired):
        assert secret not in logged


def test_tokens_never_logged_by_a_debug_server_process():
    """``handler-kit serve --log-level debug``: every log line the process prints, with
    good, wrong and expired tokens and JWTs, holds none of them."""
    port = free_port()
    env = clean_env(
        HANDLER_KIT_JWT_SECRET=SECRET,
        HANDLER_KIT_JWT_ALGORITHMS="HS256",
        HANDLER_KIT_JWT_AUDIENCE=AUDIENCE,
    )
    good = hs(claims(iss=None))
    bad = hs(claims(iss=None), secret=OTHER_SECRET)
    expired = hs(claims(iss=None, exp=int(time.time()) - 3600))
    url = f"http://127.0.0.1:{port}"
    # crashy: a fail-closed gate that raises, so a traceback is logged
    argv = serve_argv("tests.support.apps.command:crashy", port, "--log-level", "debug")
    with process(argv, env) as server:
        server.wait_healthy(url, timeout=60)
        with httpx.Client(base_url=url, timeout=10) as http:
            for token, status in ((good, 200), (bad, 401), (expired, 401), (TOKEN_A, 401)):
                response = http.post(
                    "/hooks", json=REFUND_EVENT, headers={"Authorization": f"Bearer {token}"}
                )
                assert response.status_code == status
            # the MCP route too (its SDK logs a lot at debug level)
            mcp = http.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={
                    "Authorization": f"Bearer {good}",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-06-18",
                },
            )
            assert mcp.status_code == 200, mcp.text
            # a handler that fails logs its traceback: still no token in it
            crash = http.post(
                "/hooks",
                json={
                    "hook_event_name": "PreToolUse",
                    "tool_name": "issue_refund",
                    "tool_input": {"amount": 640},
                },
                headers={"Authorization": f"Bearer {good}"},
            )
            assert crash.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
        output = server.output()
    assert "POST /hooks" in output and "DEBUG" in output  # debug and access logs were on
    assert "Traceback" in output  # the failing handler was logged in full
    for secret in (good, bad, expired, TOKEN_A, SECRET):
        assert secret not in output
