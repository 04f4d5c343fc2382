"""Tokens handler-kit generates (``handler-kit dev``, ``make run``, the test client) must work
when pasted into a command line."""

from __future__ import annotations

from handler_kit.auth import StaticTokenAuth, generate_token


def test_a_generated_token_never_starts_with_a_dash() -> None:
    # one in 64 of token_urlsafe's does: thousands of draws meet many
    tokens = [generate_token() for _ in range(5000)]
    assert not [token for token in tokens if token.startswith("-")]
    assert len(set(tokens)) == len(tokens)
    assert all(len(token) == 32 for token in tokens)  # 24 bytes, URL-safe base64
    StaticTokenAuth(tokens[:3])  # long enough for the server to accept
