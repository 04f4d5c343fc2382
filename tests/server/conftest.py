"""The servers under test of tests/server: the refund gate behind static tokens and behind
JWTs (HS256 and RS256), and the webhook test app (tests/support/apps/webhook.py) with its
default and strict configurations. Each is started once per test module that uses it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from handler_kit import HookApp
from handler_kit.auth import JWTAuth
from handler_kit.config import ServerConfig
from handler_kit.testing import running_server
from tests.server.support import AUDIENCE, ISSUER, SECRET, TOKEN, TOKEN_A, TOKEN_B, client_for
from tests.support.apps import webhook

# -- auth ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rsa_keys() -> dict[str, Any]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return {"private": private, "other": other, "public_pem": public_pem}


@pytest.fixture(scope="module")
def static_server(refund_app: HookApp) -> Iterator[Any]:
    with running_server(refund_app, tls=True, tokens=[TOKEN_A, TOKEN_B]) as server:
        yield server


@pytest.fixture(scope="module")
def hs_server(refund_app: HookApp) -> Iterator[Any]:
    auth = JWTAuth(algorithms=["HS256"], key=SECRET, audience=AUDIENCE, issuer=ISSUER)
    with running_server(refund_app, tls=True, config=ServerConfig(auth=auth)) as server:
        yield server


@pytest.fixture(scope="module")
def rs_server(rsa_keys, refund_app: HookApp) -> Iterator[Any]:
    auth = JWTAuth(algorithms=["RS256"], key=rsa_keys["public_pem"], audience=AUDIENCE)
    with running_server(refund_app, tls=True, config=ServerConfig(auth=auth)) as server:
        yield server


# -- the webhook ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with running_server(webhook.app, tls=True, tokens=[TOKEN]) as running:
        yield running


@pytest.fixture(scope="module")
def strict_server() -> Iterator[Any]:
    config = ServerConfig(tokens=[TOKEN], require_event_header=True, max_body_bytes=4096)
    with running_server(webhook.app, tls=True, config=config) as running:
        yield running


@pytest.fixture
def http(server) -> Iterator[httpx.Client]:
    with client_for(server) as client:
        yield client
