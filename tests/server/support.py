"""What the server tests share with their fixtures (tests/server/conftest.py): the auth tests'
static tokens and JWT settings, and the token and client of the webhook tests' server."""

from __future__ import annotations

import ssl
from typing import Any

import httpx

# -- auth (tests/server/test_auth.py) ------------------------------------------------------

TOKEN_A = "token-a-0123456789abcdef"
TOKEN_B = "token-b-fedcba9876543210"
SECRET = "hs256-shared-secret-for-handler-kit-tests-" + "0123456789abcdef" * 2
AUDIENCE = "handler-kit-tests"
ISSUER = "https://issuer.example"

# -- the webhook (tests/server/test_webhook.py) ----------------------------------------------

TOKEN = "webhook-test-token-0123456789"


def client_for(server: Any, **options: Any) -> httpx.Client:
    """An httpx client of ``server`` with the webhook token and the server's CA."""
    return httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        verify=ssl.create_default_context(cafile=server.ca_file),
        timeout=options.pop("timeout", 10),
        **options,
    )
