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


async def post_many(
    port: int,
    path: str,
    bodies: list[dict[str, Any]],
    *,
    concurrency: int,
    per_connection: int,
) -> list[httpx.Response | BaseException]:
    """:func:`send_many` with ``per_connection``, to ``http://127.0.0.1:{port}{path}``, written
    on asyncio streams: for the tests that send thousands of requests, where httpx's own work
    per request made the client cost as much CPU as the server it loads. The same requests
    (POST, the bearer token, a JSON body with its Content-Length, HTTP/1.1 keep-alive) and
    the same results: an ``httpx.Response`` with the status, headers and body read, or the
    exception a request ended with."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
    )
    payloads = [json.dumps(body).encode() for body in bodies]
    requests = [f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data for data in payloads]
    results: list[httpx.Response | BaseException] = [None] * len(bodies)  # type: ignore[list-item]
    next_index = 0

    async def read_response(reader: asyncio.StreamReader) -> httpx.Response:
        status_line = await reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection")
        status = int(status_line.split()[1])
        headers: list[tuple[str, str]] = []
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers.append((name.strip(), value.strip()))
        fields = {name.lower(): value for name, value in headers}
        if fields.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while size := int((await reader.readline()).split(b";")[0], 16):
                chunks.append(await reader.readexactly(size))
                await reader.readline()
            while await reader.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            content = b"".join(chunks)
        else:
            content = await reader.readexactly(int(fields.get("content-length", "0")))
        response = httpx.Response(status, headers=headers, content=content)
        if fields.get("connection", "").lower() == "close":
            response.extensions["closed"] = True
        return response

    async def worker() -> None:
        nonlocal next_index
        writer: asyncio.StreamWriter | None = None
        sent = 0
        try:
            while next_index < len(requests):
                index = next_index
                next_index += 1
                if writer is not None and sent == per_connection:
                    writer.close()
                    writer = None
                try:
                    if writer is None:
                        reader, writer = await asyncio.open_connection("127.0.0.1", port)
                        sent = 0
                    sent += 1
                    writer.write(requests[index])
                    response = await asyncio.wait_for(read_response(reader), 30.0)
                    results[index] = response
                    if response.extensions.get("closed"):
                        writer.close()
                        writer = None
                except Exception as exc:  # counted as a failed request by the caller
                    results[index] = exc
                    if writer is not None:
                        writer.close()
                        writer = None
        finally:
            if writer is not None:
                writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return results
