"""The MCP fast path, and the one module of handler-kit that relies on the SDK's internals.

Stateless JSON-response ``tools/call`` and ``tools/list`` POSTs are answered here without the
SDK's per-request machinery (transport object, memory streams, task, runner, result
re-validation), with the bytes the SDK would send; anything not recognised exactly (other
methods, other modes, odd headers or envelopes, errors) falls through to the SDK unchanged. With
tracing configured it opens the span the SDK's middleware would.

Doing so needs more of the SDK than its public API: private modules (``mcp.server._otel``,
``mcp.shared._otel``), a private method (``ServerRunner._serialize``, the serializer whose
output the templates copy), provisional attributes (``Server.middleware``) and rules this
module mirrors rather than calls (the Accept, Host and Origin checks). All of it stays in this
module; the rest of :mod:`handler_kit.server.mcp` uses the public API only.
``tests/server/mcp/test_sdk_internals.py`` pins every one of these, so an SDK upgrade that moves
one fails there by name, and ``tests/server/mcp/test_fast_path.py`` checks both paths
byte-for-byte and span-for-span. Should an SDK still differ at run time in a way that stops the
response templates from being built, the fast path turns itself off with a warning and the SDK
serves every request.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any

import mcp_types as mt
from mcp.server import Server
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared import _otel as sdk_otel
from mcp.shared.inbound import InboundModernRoute, classify_inbound_request
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from mcp_types.methods import validate_client_request
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from opentelemetry.trace import (
    NoOpTracerProvider,
    ProxyTracerProvider,
    SpanKind,
    StatusCode,
    get_tracer_provider,
)
from pydantic import ValidationError
from pydantic_core import from_json, to_json
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from handler_kit.core.app import HookApp
from handler_kit.server.mcp.tools import ToolOutcome, ToolSpec, call_context, run_tool

__all__ = ["FastPath"]

logger = logging.getLogger("handler_kit.mcp")

_WATCHED_HEADERS = frozenset(
    {
        b"content-type",
        b"content-length",
        b"accept",
        b"host",
        b"origin",
        b"mcp-protocol-version",
        b"mcp-method",
        b"mcp-name",
    }
)
# Headers that take a request off the fast path: sessions, resumption, per-parameter headers.
_SDK_ONLY_HEADERS = (b"mcp-session-id", b"last-event-id", b"mcp-param-")
_ENVELOPE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_CALL_PARAM_KEYS = frozenset({"name", "arguments", "_meta"})
_LIST_PARAM_KEYS = frozenset({"_meta"})
_MAX_SAFE_ID = 2**53
_MAX_REMEMBERED = 1024
_ROUTING_HEADERS = frozenset({b"mcp-protocol-version", b"mcp-method", b"mcp-name"})
_ID_MARK = "@@handler-kit-id@@"
_TEXT_MARK = "@@handler-kit-text@@"
_UNTRACED = (ProxyTracerProvider, NoOpTracerProvider)
_LEGACY_HEADERS = [(b"content-type", b"application/json")]  # + content-length, in that order


class _Template:
    """The exact response bytes of one (method, protocol version, result kind), as the SDK
    writes them, with holes for the request id and the text: built once by running the SDK's
    own result serializer on a marked result, then filled per request."""

    __slots__ = ("encode", "modern", "parts")

    def __init__(self, body: bytes, modern: bool, has_text: bool) -> None:
        marks = [json.dumps(_ID_MARK).encode()]
        if has_text:
            marks.append(json.dumps(_TEXT_MARK).encode())
        parts: list[bytes] = []
        rest = body
        for mark in marks:
            if rest.count(mark) != 1:
                raise ValueError("template marker not found exactly once")
            head, _, rest = rest.partition(mark)
            parts.append(head)
        parts.append(rest)
        self.parts = parts
        self.modern = modern
        # The modern path writes json.dumps (ASCII-escaped); the legacy one pydantic-core JSON.
        self.encode = _ascii_json if modern else to_json

    def render(self, request_id: int | str, text: str | None = None) -> bytes:
        parts = self.parts
        if text is None:
            return parts[0] + self.encode(request_id) + parts[1]
        return parts[0] + self.encode(request_id) + parts[1] + self.encode(text) + parts[2]


def _ascii_json(value: int | str) -> bytes:
    """``json.dumps(value).encode()`` for an id or a text, without the encoder object."""
    if type(value) is str:
        return encode_basestring_ascii(value).encode()
    return str(value).encode()


class FastPath:
    """Answer stateless JSON-response ``tools/call`` and ``tools/list`` POSTs directly.

    The SDK serves each stateless request with a fresh transport, memory streams, a task in
    the manager's task group, a dispatcher, a runner with middleware, and two result
    validations; for a hook handler that answers in microseconds that machinery is most of the
    cost. This path checks that a request is one the SDK would accept (same header, envelope
    and params checks, using the SDK's own validators where they exist), runs the same
    :func:`run_tool`, and writes the bytes the SDK would write (see :class:`_Template`).
    Anything else, or anything it is unsure of, is handed to the SDK *before* a handler runs,
    with the body replayed: a handler never runs twice and every error answer is the SDK's own.
    """

    def __init__(
        self,
        server: Server[Any],
        hook_app: HookApp,
        tools: Mapping[str, ToolSpec],
        list_result: mt.ListToolsResult,
        security: TransportSecuritySettings,
        max_body: int,
    ) -> None:
        self.server = server
        self.hook_app = hook_app
        self.tools = tools
        # The SDK's tools/list handler returns this same object: one source for both paths.
        self.list_result = list_result
        # Cleared for good when this SDK cannot be mirrored (see :meth:`serve`).
        self.enabled = True
        self.check_hosts = security.enable_dns_rebinding_protection
        self.hosts = frozenset(h for h in security.allowed_hosts if not h.endswith(":*"))
        self.host_prefixes = tuple(h[:-1] for h in security.allowed_hosts if h.endswith(":*"))
        self.origins = frozenset(o for o in security.allowed_origins if not o.endswith(":*"))
        self.origin_prefixes = tuple(o[:-1] for o in security.allowed_origins if o.endswith(":*"))
        self.templates: dict[tuple[str, str, bool], _Template] = {}
        self.valid_params: dict[tuple[str, str, str], bool] = {}
        # The server's cap, which the mount gives the session manager too: a body over it
        # goes to the SDK, which refuses it before reading it.
        self.max_body = max_body

    async def handle(self, scope: Scope, receive: Receive, send: Send, sdk: ASGIApp) -> None:
        """Answer the request here when this path can, otherwise hand it to ``sdk``."""
        if self.enabled and scope["type"] == "http" and scope["method"] == "POST" and self.usable():
            headers = self.headers_ok(scope)
            if headers is not None:
                body, messages = await _read_body(receive)
                if (
                    body is not None
                    and len(body) <= self.max_body
                    and await self.serve(scope, headers, body, send)
                ):
                    return
                receive = _replay(messages, receive)
        await sdk(scope, receive, send)

    # -- request checks --

    def usable(self) -> bool:
        """Whether skipping the SDK's server middleware changes nothing observable.

        The only middleware the SDK installs is its OpenTelemetry span per message, which
        :meth:`traced` reproduces; with any other middleware added every request goes through
        the SDK, so its effects stay exactly the same.
        """
        middleware = self.server.middleware
        return len(middleware) == 1 and type(middleware[0]) is OpenTelemetryMiddleware

    @contextlib.contextmanager
    def traced(
        self, method: str, version: str, request_id: int | str, name: str | None, meta: Any
    ) -> Iterator[Any]:
        """The SDK middleware's span for one message (same name, kind, attributes, parent),
        when a tracer provider is configured; nothing otherwise (the SDK's is a no-op then)."""
        if isinstance(get_tracer_provider(), _UNTRACED):
            yield None
            return
        attributes: dict[str, Any] = {
            "mcp.method.name": method,
            "mcp.protocol.version": version,
            "jsonrpc.request.id": str(request_id),
        }
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
            if name is not None:
                attributes["gen_ai.tool.name"] = name
        with sdk_otel.otel_span(
            name=f"{method} {name}" if name else method,
            kind=SpanKind.SERVER,
            attributes=attributes,
            context=sdk_otel.extract_trace_context(meta if isinstance(meta, dict) else None),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield span

    def headers_ok(self, scope: Scope) -> dict[bytes, bytes] | None:
        """The headers the SDK reads, when they pass its checks; None sends it to the SDK."""
        found: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            if key in _WATCHED_HEADERS:
                if key in found:  # duplicated: first- and last-copy readers could disagree
                    return None
                found[key] = value
            elif key.startswith(_SDK_ONLY_HEADERS):
                return None
        content_type = found.get(b"content-type")
        if content_type is None or not (
            content_type == b"application/json" or content_type.startswith(b"application/json;")
        ):
            return None
        length = found.get(b"content-length")
        if length is None or not length.isdigit() or int(length) > self.max_body:
            return None
        if not _accepts_json(found.get(b"accept", b"")):
            return None
        if self.check_hosts:
            host = found.get(b"host", b"").decode("latin-1")
            if not host or not (host in self.hosts or host.startswith(self.host_prefixes)):
                return None
            origin = found.get(b"origin", b"").decode("latin-1")
            if origin and not (origin in self.origins or origin.startswith(self.origin_prefixes)):
                return None
        return found

    async def serve(
        self, scope: Scope, headers: dict[bytes, bytes], body: bytes, send: Send
    ) -> bool:
        """Serve the request and return True, or return False having done nothing."""
        raw_version = headers.get(b"mcp-protocol-version")
        version = raw_version.decode("latin-1") if raw_version is not None else None
        modern = version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS
        try:
            decoded = json.loads(body) if modern else from_json(body)
        except (ValueError, RecursionError):
            return False
        if not isinstance(decoded, dict) or not decoded.keys() >= {"jsonrpc", "id", "method"}:
            return False
        if decoded.keys() - _ENVELOPE_KEYS or decoded["jsonrpc"] != "2.0":
            return False
        request_id = decoded["id"]
        if type(request_id) is int:
            if not -_MAX_SAFE_ID < request_id < _MAX_SAFE_ID:
                return False
        elif type(request_id) is not str:
            return False
        method = decoded["method"]
        params = decoded.get("params")
        if method == "tools/call":
            if not isinstance(params, dict) or params.keys() - _CALL_PARAM_KEYS:
                return False
            name = params.get("name")
            spec = self.tools.get(name) if type(name) is str else None
            arguments = params.get("arguments")
            if spec is None or not (arguments is None or isinstance(arguments, dict)):
                return False
        elif method == "tools/list":
            if params is not None and (
                not isinstance(params, dict) or params.keys() - _LIST_PARAM_KEYS
            ):
                return False
            spec = arguments = None
        else:
            return False
        if modern:
            routing = {
                key.decode(): value.decode("latin-1")
                for key, value in headers.items()
                if key in _ROUTING_HEADERS
            }
            verdict = classify_inbound_request(decoded, headers=routing)
            if not isinstance(verdict, InboundModernRoute):
                return False
            version = verdict.protocol_version
        elif version is None:
            version = DEFAULT_NEGOTIATED_VERSION
        if not self.params_valid(method, version, params):
            return False
        try:
            template = self.template(method, version, modern, is_error=False)
            error_template = (
                self.template(method, version, modern, is_error=True) if spec else template
            )
        except Exception:  # an SDK this path does not know: let the SDK serve everything
            logger.warning("MCP fast path disabled: cannot build response templates", exc_info=True)
            self.enabled = False
            return False
        meta = params.get("_meta") if params else None
        with self.traced(method, version, request_id, spec.name if spec else None, meta) as span:
            if spec is None:
                body_out = template.render(request_id)
            else:
                context = call_context(spec, scope, request_id, "fast")
                outcome = await run_tool(self.hook_app, spec, arguments, context)
                if outcome.is_error:
                    body_out = error_template.render(request_id, outcome.text)
                    if span is not None:
                        span.set_attribute("error.type", "tool_error")
                        span.set_status(StatusCode.ERROR)
                else:
                    body_out = template.render(request_id, outcome.text)
        length = str(len(body_out)).encode()
        if modern:
            raw = [(b"content-length", length), (b"content-type", b"application/json")]
        else:
            raw = [*_LEGACY_HEADERS, (b"content-length", length)]
        await send({"type": "http.response.start", "status": 200, "headers": raw})
        await send({"type": "http.response.body", "body": body_out})
        return True

    def params_valid(self, method: str, version: str, params: dict[str, Any] | None) -> bool:
        """Whether the SDK's per-version params validation accepts ``params``.

        By now ``name`` is a str naming a tool and ``arguments`` an object or absent, which the
        schema accepts whatever they hold (``arguments`` is ``dict[str, Any]``); the answer
        then depends on ``_meta`` alone, which a client sends the same on every call, so it is
        remembered. ``repr`` is an exact key for JSON values (it tells 1, 1.0, True and "1"
        apart).
        """
        meta = params.get("_meta") if params else None
        key = (method, version, repr(meta))
        known = self.valid_params.get(key)
        if known is None:
            probe: dict[str, Any] | None = params
            if method == "tools/call":
                probe = {"name": "t", "arguments": {}}
                if params and "_meta" in params:
                    probe["_meta"] = meta
            try:
                validate_client_request(method, version, probe)
                known = True
            except (ValidationError, KeyError, ValueError):
                known = False
            if len(self.valid_params) >= _MAX_REMEMBERED:
                self.valid_params.clear()
            self.valid_params[key] = known
        return known

    # -- response templates --

    def template(self, method: str, version: str, modern: bool, is_error: bool) -> _Template:
        key = (method, version, is_error)
        found = self.templates.get(key)
        if found is None:
            found = self.templates[key] = self._build(method, version, modern, is_error)
        return found

    def _build(self, method: str, version: str, modern: bool, is_error: bool) -> _Template:
        """Serialize a marked result exactly as the SDK does for this method and version."""
        result: mt.CallToolResult | mt.ListToolsResult
        if method == "tools/call":
            result = ToolOutcome(_TEXT_MARK, is_error).result()
        else:
            result = self.list_result
        runner = ServerRunner(self.server, Connection.from_envelope(version, None, None), None)
        dumped = runner._serialize(method, version, result)
        message = mt.JSONRPCResponse(jsonrpc="2.0", id=_ID_MARK, result=dumped)
        if modern:
            data = message.model_dump(mode="json", by_alias=True, exclude_none=True)
            body = json.dumps(data, separators=(",", ":")).encode()
        else:
            body = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        return _Template(body, modern, has_text=method == "tools/call")


def _accepts_json(accept: bytes) -> bool:
    """The SDK's Accept rule (``check_accept_headers``) for application/json."""
    for part in accept.decode("latin-1").split(","):
        media = part.strip().split(";")[0].strip().lower()
        if media in ("application/json", "application/*", "*/*"):
            return True
    return False


async def _read_body(receive: Receive) -> tuple[bytes | None, list[Message]]:
    """Read the whole body, keeping the messages so the SDK can be handed them again."""
    messages: list[Message] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return None, messages
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed
