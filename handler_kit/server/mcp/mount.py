"""The MCP endpoint of a HookApp: the SDK's server and session manager, and the ASGI glue.

Why the low-level ``mcp.server.Server`` and not ``MCPServer``: the input schema is the event
model's fields, flat and all optional, and the result must be one text content holding
pre-serialized JSON with no ``structuredContent``. With ``MCPServer`` both would mean working
against its signature introspection and result conversion; the low-level server takes a schema
and returns a ``CallToolResult`` verbatim.

Mounting: :func:`create_mcp_mount` returns an :class:`McpMount`. The server routes ``/mcp`` to
``mount.asgi`` (an explicit route, not ``Mount("/")``, which would swallow 405s of other
routes) and enters ``mount.lifespan()`` inside its own single lifespan: the SDK's session
manager owns a task group that must be running before any MCP request, and a mounted sub-app's
lifespan never runs. Auth is not done here; the server's outer ASGI layer applies the same
bearer/JWT check to ``/mcp`` as to ``/hooks``.

Limits and errors: the body cap (the server's ``max_body_bytes``) is given to the SDK's session
manager, which refuses a larger body before reading it, and to the fast path. The SDK answers a
refused request (body too large, wrong Content-Type, Host, Origin or Accept) with a plain-text
or empty body; :class:`_JsonErrors` rewrites those as the JSON error body every other route
answers with, same status and headers. JSON-RPC error bodies are the protocol's and pass as
they are.

Only the SDK's public API is used here; the fast path, which needs more, is fenced in
:mod:`handler_kit.server.mcp._fast_path`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from http import HTTPStatus
from typing import Any

import mcp_types as mt
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from handler_kit._version import __version__
from handler_kit.config import DEFAULT_MAX_BODY_BYTES
from handler_kit.core.app import HookApp
from handler_kit.server.mcp._fast_path import FastPath
from handler_kit.server.mcp.hosts import transport_security
from handler_kit.server.mcp.tools import build_tools, call_context, run_tool

__all__ = ["McpMount", "create_mcp_mount"]

INSTRUCTIONS = (
    "Each tool is one hook handler. Call it with a hook input's fields; the text result is the "
    "Claude Code hook output JSON."
)


class McpMount:
    """The MCP endpoint of one HookApp: ``asgi`` to route ``/mcp`` to, ``lifespan()`` to enter.

    The SDK's session manager runs only once per instance, so each lifespan entry builds a
    fresh one: the same app object can be served, stopped and served again (tests do).
    """

    def __init__(
        self,
        hook_app: HookApp,
        *,
        allowed_hosts: Sequence[str] | None = None,
        stateless: bool = True,
        json_response: bool = True,
        fast_path: bool = True,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        self.hook_app = hook_app
        self.tools = build_tools(hook_app)
        self.stateless = stateless
        self.json_response = json_response
        self.max_body_bytes = max_body_bytes
        self.security = transport_security(allowed_hosts)
        self.server: Server[Any] = Server(
            hook_app.name,
            version=__version__,
            description=hook_app.description or None,
            instructions=INSTRUCTIONS,
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            # Mcp-Param header checks on the 2026-07-28 path look a tool's schema up here
            # instead of running tools/list on every call.
            get_tool_input_schema=self._input_schema,
        )
        self._list_result = mt.ListToolsResult(tools=[spec.tool for spec in self.tools.values()])
        self._manager: StreamableHTTPSessionManager | None = None
        self._entered = 0
        # The fast path mirrors the stateless JSON mode only; the other modes are the SDK's.
        # There it also answers, with the fast path off too, the tool calls the SDK would
        # refuse with an error that the webhook answers (FastPath.guard).
        self._fast = (
            FastPath(
                self.server,
                hook_app,
                self.tools,
                self.security,
                max_body=max_body_bytes,
                serve_fast=fast_path,
            )
            if stateless and json_response
            else None
        )
        # An object, not a bound method: Starlette's Route treats functions and methods as
        # request -> response endpoints and only calls other callables as raw ASGI apps.
        self.asgi: ASGIApp = _McpAsgi(self)

    @property
    def fast_path(self) -> bool:
        """Whether plain tool calls are answered without the SDK's machinery: asked
        for, in the stateless JSON mode, and not turned off by an SDK it cannot mirror."""
        return self._fast is not None and self._fast.serve_fast and self._fast.enabled

    @property
    def running(self) -> bool:
        """Whether :meth:`lifespan` has been entered: requests can be served."""
        return self._manager is not None

    # -- SDK handlers --

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return self._list_result

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        spec = self.tools.get(params.name)
        if spec is None:
            # A protocol error, as the MCP spec asks for an unknown tool.
            raise MCPError(code=mt.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        scope = getattr(ctx.request, "scope", None)
        context = call_context(spec, scope, ctx.request_id, "sdk")
        outcome = await run_tool(self.hook_app, spec, params.arguments, context)
        return outcome.result()

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        spec = self.tools.get(name)
        return spec.input_schema if spec else None

    # -- lifecycle --

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run the MCP session manager for as long as the server runs.

        Enter it from the server's single lifespan; without it every MCP request fails.
        Nested entries (two servers sharing one app in a test) share the running manager.
        """
        if self._entered:
            self._entered += 1
            try:
                yield
            finally:
                self._entered -= 1
            return
        manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=self.json_response,
            stateless=self.stateless,
            security_settings=self.security,
            max_request_body_size=self.max_body_bytes,
        )
        async with manager.run():
            self._manager = manager
            self._entered = 1
            try:
                yield
            finally:
                self._entered = 0
                self._manager = None

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request to the MCP endpoint."""
        manager = self._manager
        if manager is None:
            raise RuntimeError(
                "handler-kit MCP endpoint called before its lifespan started: enter "
                "McpMount.lifespan() in the server's lifespan (create_asgi_app does)"
            )
        if self._fast is not None:
            await self._fast.handle(scope, receive, send, self._sdk)
        else:
            await self._sdk(scope, receive, send)

    async def _sdk(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The SDK's answer, its refusals rewritten as JSON errors (the fast path writes its
        own answers, so only a request the SDK serves pays for the wrapper)."""
        manager = self._manager
        assert manager is not None  # checked by handle()
        await manager.handle_request(scope, receive, _JsonErrors(send, self.max_body_bytes))


class _McpAsgi:
    """The ASGI app of an :class:`McpMount` (route ``/mcp`` to it)."""

    __slots__ = ("mount",)

    def __init__(self, mount: McpMount) -> None:
        self.mount = mount

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        mount = self.mount
        fast = mount._fast
        if fast is not None and mount._manager is not None:
            # McpMount.handle's common case without its frame: every tool call comes here
            await fast.handle(scope, receive, send, mount._sdk)
        else:
            await mount.handle(scope, receive, send)


# The codes of the JSON error bodies, named as the webhook names the same errors.
_ERROR_CODES = {
    400: "bad_request",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "body_too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
}


class _JsonErrors:
    """The ``send`` given to the SDK: an error response (4xx/5xx) whose body is not JSON is
    held until its body is complete, then sent as ``{"error": ..., "message": ...}`` with the
    same status and other headers (the message is the SDK's text). Everything else passes
    through untouched, streams included."""

    __slots__ = ("held", "max_body", "parts", "send")

    def __init__(self, send: Send, max_body: int) -> None:
        self.send = send
        self.max_body = max_body
        self.held: Message | None = None
        self.parts: list[bytes] = []

    async def __call__(self, message: Message) -> None:
        if self.held is None:
            if message["type"] == "http.response.start" and _plain_error(message):
                self.held = message
                return
            await self.send(message)
            return
        if message["type"] != "http.response.body":
            return
        self.parts.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        status: int = self.held["status"]
        phrase = _phrase(status)
        text = b"".join(self.parts).decode("utf-8", "replace").strip()
        if status == 413:
            text = f"the body is over the {self.max_body}-byte limit"
        code = _ERROR_CODES.get(status) or phrase.lower().replace(" ", "_").replace("-", "_")
        body = json.dumps({"error": code, "message": text or phrase}).encode()
        headers = [
            (key, value)
            for key, value in self.held.get("headers", ())
            if key.lower() not in (b"content-type", b"content-length")
        ]
        headers += [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await self.send({**self.held, "headers": headers})
        await self.send({"type": "http.response.body", "body": body})


def _plain_error(start: Message) -> bool:
    """Whether a response start is an error whose body is not JSON."""
    status = start["status"]
    if not 400 <= status <= 599:
        return False
    for key, value in start.get("headers", ()):
        if key.lower() == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            return not (media == b"application/json" or media.endswith(b"+json"))
    return True


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def create_mcp_mount(
    hook_app: HookApp,
    *,
    allowed_hosts: Sequence[str] | None = None,
    stateless: bool = True,
    json_response: bool = True,
    fast_path: bool = True,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> McpMount:
    """Serve every handler of ``hook_app`` as an MCP tool (Streamable HTTP, route it at ``/mcp``).

    ``allowed_hosts``: Host names the endpoint answers besides loopback (see
    :func:`~handler_kit.server.mcp.hosts.transport_security`); the SDK refuses any other Host
    with 421. ``stateless`` and ``json_response`` (the defaults) let any worker answer any
    request; ``json_response=False`` streams each response as SSE (progress notifications reach
    the client), ``stateless=False`` keeps ``Mcp-Session-Id`` sessions (one worker only).
    ``fast_path`` answers stateless JSON ``tools/call``/``tools/list`` without the SDK's
    per-request machinery, same bytes; ``False`` sends every request through the SDK.
    ``max_body_bytes``: the largest request body read (the server passes its own cap); a larger
    one is answered 413 before it is read.
    """
    return McpMount(
        hook_app,
        allowed_hosts=allowed_hosts,
        stateless=stateless,
        json_response=json_response,
        fast_path=fast_path,
        max_body_bytes=max_body_bytes,
    )
