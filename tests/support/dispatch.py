"""Real servers on 127.0.0.1 for the dispatcher tests: a scripted HTTPS endpoint and an MCP
server, served by ``tests.support.processes.serve_asgi`` behind a throw-away CA.

The scripted endpoint answers what its URL asks for, so a test's hooks document says in one
place what each handler does::

    server.url("gate", body={"decision": "block", "reason": "no"})
    server.url("slow", sleep=5)             # waits (until the client gives up)
    server.url("moved", status=307, location="/elsewhere")
    server.url("huge", big=2_000_000)        # streams a 2 MB body, no Content-Length

Every request is recorded (path name, headers, JSON body) and the server keeps a gauge of
requests in flight, so concurrency is asserted from what the server saw, not from timings.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, urlencode


@dataclass
class Recorded:
    name: str
    headers: dict[str, str]
    body: Any
    query: dict[str, str]


@dataclass
class ScriptServer:
    """An ASGI endpoint that does what its query string says (see the module docstring)."""

    base: str = ""
    requests: list[Recorded] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    abandoned: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def url(
        self,
        name: str,
        *,
        body: Any = None,
        raw: str | None = None,
        status: int = 200,
        sleep: float = 0.0,
        big: int = 0,
        big_declared: bool = False,
        location: str | None = None,
        context_length: int = 0,
        base: str | None = None,
    ) -> str:
        query: dict[str, Any] = {"status": status}
        if body is not None:
            query["body"] = json.dumps(body)
        if raw is not None:
            query["raw"] = raw
        if sleep:
            query["sleep"] = sleep
        if big:
            query["big"] = big
        if big_declared:
            query["declared"] = 1
        if location:
            query["location"] = location
        if context_length:
            query["ctxlen"] = context_length
        return f"{base or self.base}/h/{quote(name)}?{urlencode(query)}"

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0
            self.abandoned = 0

    def named(self, name: str) -> list[Recorded]:
        return [r for r in self.requests if r.name == name]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
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
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw_body = b"".join(chunks)
        query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
        name = scope["path"].rsplit("/", 1)[-1]
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            parsed = json.loads(raw_body) if raw_body else None
        except ValueError:
            parsed = raw_body
        with self._lock:
            self.requests.append(Recorded(name, headers, parsed, query))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            sleep = float(query.get("sleep", 0))
            if sleep:
                try:
                    # Wake early when the client gives up: a timed-out request leaves the gauge.
                    message = await asyncio.wait_for(receive(), timeout=sleep)
                    if message["type"] == "http.disconnect":
                        with self._lock:
                            self.abandoned += 1
                        return
                except TimeoutError:
                    pass
            status = int(query.get("status", 200))
            response_headers = [(b"content-type", b"application/json")]
            if "location" in query:
                response_headers.append((b"location", query["location"].encode()))
            big = int(query.get("big", 0))
            if big:
                if "declared" in query:
                    response_headers.append((b"content-length", str(big).encode()))
                await send(
                    {"type": "http.response.start", "status": status, "headers": response_headers}
                )
                chunk = b" " * 65536
                sent = 0
                while sent < big:
                    piece = chunk[: big - sent]
                    sent += len(piece)
                    await send({"type": "http.response.body", "body": piece, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
                return
            if "ctxlen" in query:
                text = "x" * int(query["ctxlen"])
                event = headers.get("x-runbear-hook-event", "")
                payload = json.dumps(
                    {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
                ).encode()
            elif "raw" in query:
                payload = query["raw"].encode()
            elif "body" in query:
                payload = query["body"].encode()
            else:
                payload = b""
            await send(
                {"type": "http.response.start", "status": status, "headers": response_headers}
            )
            await send({"type": "http.response.body", "body": payload})
        finally:
            with self._lock:
                self.in_flight -= 1


# -- the MCP server -------------------------------------------------------------------------


@dataclass
class McpRecorder:
    url: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)

    def named(self, tool: str) -> list[dict[str, Any]]:
        return [args for name, args in self.calls if name == tool]


def build_mcp_app(recorder: McpRecorder) -> Any:
    """An mcp 2.3 MCPServer mounted on a Starlette app, stateless with JSON responses."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Mount

    server = MCPServer("dispatcher-test", log_level="WARNING")

    def record(tool: str, **arguments: Any) -> None:
        recorder.calls.append((tool, {k: v for k, v in arguments.items() if v is not None}))

    def load_user_context(
        slack_user_id: str | None = None,
        first_user_message: str | None = None,
        user_email: str | None = None,
        source: str | None = None,
    ) -> str:
        """Plain-text context about the user."""
        record(
            "load_user_context",
            slack_user_id=slack_user_id,
            first_user_message=first_user_message,
            user_email=user_email,
            source=source,
        )
        return f"User {slack_user_id} is on the Enterprise plan."

    def review_reply(reply: str | None = None, already_continued: bool | None = None) -> str:
        """Stop gate: block once unless the reply cites a ticket."""
        record("review_reply", reply=reply, already_continued=already_continued)
        if already_continued or "#" in (reply or ""):
            return "{}"
        return json.dumps({"decision": "block", "reason": "Cite the ticket number."})

    def echo(
        whole: dict[str, Any] | None = None,
        flag: bool | None = None,
        amount: int | None = None,
        label: str | None = None,
        order: str | None = None,
    ) -> str:
        """Echo the typed arguments back as context, to check template rendering."""
        args = {"whole": whole, "flag": flag, "amount": amount, "label": label, "order": order}
        record("echo", **args)
        return json.dumps({k: v for k, v in args.items() if v is not None}, sort_keys=True)

    def policy(amount: int | None = None) -> str:
        """PreToolUse gate answering Claude Code JSON."""
        record("policy", amount=amount)
        if (amount or 0) > 500:
            return json.dumps(
                {
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "deny",
                        "permissionDecisionReason": "Refunds over $500 need a human approver.",
                    }
                }
            )
        return ""

    def plain(text: str | None = None) -> str:
        """Returns its text unchanged (plain text, or JSON-looking text)."""
        record("plain", text=text)
        return text or ""

    canned_answers = {
        "json_context": "\n  "
        + json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "UserPromptSubmit",
                    "additionalContext": "from JSON",
                }
            }
        ),
        "bad_decision": json.dumps(
            {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "maybe"}}
        ),
        "curly": "{curly but not JSON",
    }

    def canned(name: str) -> str:
        """A fixed answer (JSON-looking strings cannot pass through an argument: the SDK
        pre-parses JSON-looking string arguments)."""
        record("canned", name=name)
        return canned_answers[name]

    def broken() -> str:
        """Always fails: an isError result."""
        raise ToolError("the context store is down")

    async def slow() -> str:
        """Never answers in time."""
        await asyncio.sleep(2)
        return "late"

    for fn in (load_user_context, review_reply, echo, policy, plain, canned, broken, slow):
        server.add_tool(fn, structured_output=False)

    mcp_asgi = server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> Any:
        async with server.session_manager.run():
            yield

    async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            for key, value in scope["headers"]:
                if key == b"authorization":
                    recorder.authorizations.append(value.decode())
        await mcp_asgi(scope, receive, send)

    return Starlette(routes=[Mount("/", app=recording)], lifespan=lifespan)


# -- building documents and answers ---------------------------------------------------------


def document(event: str, *handlers: dict[str, Any], matcher: str | None = None) -> dict[str, Any]:
    """A document with one group of ``handlers`` on ``event``."""
    group: dict[str, Any] = {"hooks": list(handlers)}
    if matcher is not None:
        group["matcher"] = matcher
    return {"hooks": {event: [group]}}


# Handlers get the 10 s ceiling unless a test is about timeouts: a loaded 2-core CI machine
# must not turn a slow TLS handshake into a failed rule. ``timeout=None`` leaves it unset.
def http(url: str, *, timeout: int | None = 10, **fields: Any) -> dict[str, Any]:
    handler = {"type": "http", "url": url, **fields}
    if timeout is not None:
        handler["timeout"] = timeout
    return handler


def mcp_tool(tool: str, *, timeout: int | None = 10, **fields: Any) -> dict[str, Any]:
    handler = {"type": "mcp_tool", "server": "ctx", "tool": tool, **fields}
    if timeout is not None:
        handler["timeout"] = timeout
    return handler


def permission(decision: str, reason: str | None = None, **extra: Any) -> dict[str, Any]:
    """A PreToolUse answer."""
    specific: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": decision}
    if reason is not None:
        specific["permissionDecisionReason"] = reason
    specific.update(extra)
    return {"hookSpecificOutput": specific}


def context(event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def block(reason: str) -> dict[str, Any]:
    return {"decision": "block", "reason": reason}
