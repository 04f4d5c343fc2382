"""Minimal raw-ASGI webhook baseline: the floor a hook server in Python can reach.

It reads the body, ``json.loads`` it, checks the bearer token and the
``X-Runbear-Hook-Event`` header against ``hook_event_name``, and answers a fixed deny. Served
by ``uvicorn --loop uvloop --http httptools`` with one worker (see ``bench.run``).
"""

from __future__ import annotations

import hmac
import json
import os

_TOKENS = [
    t.strip().encode()
    for t in os.environ.get("HANDLER_KIT_TOKENS", "bench-token-0123456789abcdef").split(",")
]
_DENY = json.dumps(
    {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Refunds over $500 need a human approver.",
        }
    }
).encode()
_JSON = [(b"content-type", b"application/json")]


async def _reply(send, status: int, body: bytes) -> None:
    headers = [*_JSON, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _authorized(value: bytes | None) -> bool:
    if not value or not value.startswith(b"Bearer "):
        return False
    given = value[7:]
    return any(hmac.compare_digest(given, t) for t in _TOKENS)


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    if scope["method"] == "GET" and scope["path"] == "/healthz":
        await _reply(send, 200, b'{"ok":true}')
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    auth = event_header = None
    for name, value in scope["headers"]:
        if name == b"authorization":
            auth = value
        elif name == b"x-runbear-hook-event":
            event_header = value
    if not _authorized(auth):
        await _reply(send, 401, b'{"error":"invalid_token"}')
        return
    try:
        event = json.loads(body)
    except ValueError:
        await _reply(send, 400, b'{"error":"invalid_json"}')
        return
    if not isinstance(event, dict) or (
        event_header is not None and event_header.decode() != event.get("hook_event_name")
    ):
        await _reply(send, 400, b'{"error":"event_mismatch"}')
        return
    await _reply(send, 200, _DENY)
