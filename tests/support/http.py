"""HTTP on the client side of the tests: the JSON error body every refusal must have, and load
over many connections."""

from __future__ import annotations

import asyncio
import json
import ssl
from typing import Any

import httpx

TOKEN = "ops-test-token-0123456789abcdef"
OLD_TOKEN = "ops-old-token-fedcba9876543210"
# Loading the CA bundle once, not once per client.
_SSL_CONTEXT = ssl.create_default_context()


def error_body(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert ``response`` is the JSON error ``code`` with ``status``; return its body."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) <= {"error", "message", "details"}, body
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert "Traceback" not in response.text
    return body


async def send_many(
    url: str,
    bodies: list[dict[str, Any]],
    *,
    concurrency: int,
    fresh_connections: bool = False,
    per_connection: int | None = None,
    headers: dict[str, str] | None = None,
) -> list[httpx.Response | BaseException]:
    """POST each body to ``url`` over ``concurrency`` connections (bounded), in order of the
    list; failures are returned, not raised. ``fresh_connections``: a new connection per
    request; ``per_connection=N``: a new connection after N requests. Both let the kernel
    spread connections over the workers (a worker's accept loop may take a whole burst of
    new connections, so a fixed set of 20 can all land on one worker).

    One client per connection: httpcore's shared pool scans every connection for every
    request, which made the client, not the server, the bottleneck of these tests.
    """
    base_headers = {"Authorization": f"Bearer {TOKEN}", **(headers or {})}
    limits = httpx.Limits(
        max_connections=1, max_keepalive_connections=0 if fresh_connections else 1
    )
    results: list[httpx.Response | BaseException] = [None] * len(bodies)  # type: ignore[list-item]
    payloads = [json.dumps(body) for body in bodies]
    next_index = 0

    def new_client() -> httpx.AsyncClient:
        return httpx.AsyncClient(
            limits=limits, timeout=30.0, headers=base_headers, verify=_SSL_CONTEXT
        )

    async def worker() -> None:
        nonlocal next_index
        client = new_client()
        sent = 0
        try:
            while next_index < len(payloads):
                index = next_index
                next_index += 1
                if per_connection and sent == per_connection:
                    await client.aclose()
                    client, sent = new_client(), 0
                sent += 1
                try:
                    results[index] = await client.post(url, content=payloads[index])
                except Exception as exc:  # counted as a failed request by the caller
                    results[index] = exc
        finally:
            await client.aclose()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return results
