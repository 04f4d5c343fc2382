"""The MCP fast path, and the one module of handler-kit that relies on the SDK's internals.

Speed only. Stateless JSON-response ``tools/call`` POSTs are answered here without the SDK's
per-request machinery (transport object, memory streams, task, runner, result re-validation),
with the bytes the SDK would send; anything not recognised exactly (other methods, ``tools/list``
included, which a client sends once; other modes, odd headers or envelopes, errors) falls
through to the SDK unchanged. With tracing configured it opens the span the SDK's middleware
would. Where the SDK has a check of its own (the header checks, the modern era's validation
ladder, the per-version params validation) or a serializer, it is called, not copied.

Doing so needs more of the SDK than its public API: private modules (``mcp.server._otel``,
``mcp.shared._otel``), a private method (``ServerRunner._serialize``, the serializer whose
output the templates copy), provisional attributes (``Server.middleware``) and the streamable
HTTP transport's own header checks, called here as the transport calls them (Content-Type,
Accept, and the DNS-rebinding Host and Origin checks: :class:`_SdkChecks`), so that a request
they refuse goes to the SDK, which answers its error. All of it stays in this module; the rest
of :mod:`handler_kit.server.mcp` uses the public API only.
``tests/server/mcp/test_sdk_internals.py`` pins every one of these, so an SDK upgrade that moves
one fails there by name, and ``tests/server/mcp/test_fast_path.py`` checks both paths
byte-for-byte and span-for-span. Should an SDK still differ at run time in a way that stops the
response templates from being built, or no longer have one of the checks, the fast path turns
itself off with a warning and the SDK serves every request.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import logging
from collections.abc import Iterator, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any, cast

import mcp_types as mt
from mcp.server import Server
from mcp.server import streamable_http as sdk_http
from mcp.server import transport_security as sdk_security
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared import _otel as sdk_otel
from mcp.shared.inbound import InboundModernRoute, classify_inbound_request, decode_header_value
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from mcp_types.methods import validate_client_request
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace as otel_trace
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, SpanKind, StatusCode
from pydantic import ValidationError
from pydantic_core import from_json, to_json
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from handler_kit.core.app import HookApp
from handler_kit.core.vocabulary import MAX_INPUT_DEPTH, InputTooDeep, load_json
from handler_kit.server.mcp.envelope import BodyRead, over_cap_call, scan_envelope, tools_call
from handler_kit.server.mcp.tools import (
    ToolOutcome,
    ToolSpec,
    answer_tool,
    call_context,
    outcome_of,
    run_tool,
)

__all__ = ["FastPath"]

logger = logging.getLogger("handler_kit.mcp")

# Headers that take a request off the fast path: sessions, resumption, per-parameter headers.
_SDK_ONLY_HEADERS = (b"mcp-session-id", b"last-event-id", b"mcp-param-")
_ENVELOPE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_CALL_PARAM_KEYS = frozenset({"name", "arguments", "_meta"})
_MAX_REMEMBERED = 1024
_ROUTING_HEADERS = frozenset({b"mcp-protocol-version", b"mcp-method", b"mcp-name"})
# what the SDK's header checks read, then every header the SDK reads of a tools/call POST
_CHECKED_HEADERS = (b"content-type", b"accept", b"host", b"origin")
_WATCHED_HEADERS = _ROUTING_HEADERS.union(_CHECKED_HEADERS, [b"content-length"])
_ID_MARK = "@@handler-kit-id@@"
_TEXT_MARK = "@@handler-kit-text@@"
_UNTRACED = (ProxyTracerProvider, NoOpTracerProvider)
_JSON_TYPE = (b"content-type", b"application/json")
_HANDSHAKE_VERSIONS = frozenset(v.encode("latin-1") for v in HANDSHAKE_PROTOCOL_VERSIONS)
_MODERN_VERSIONS = frozenset(MODERN_PROTOCOL_VERSIONS)


def _tracer_provider() -> object:
    """The global tracer provider as the SDK's span sees it: its proxy tracer delegates once
    one is set, and reads nothing else (no environment lookup on every request)."""
    return otel_trace._TRACER_PROVIDER


class _Template:
    """The exact response bytes of a ``tools/call`` result for one (protocol version, result
    kind), as the SDK writes them, with holes for the request id and the text: built once by
    running the SDK's own result serializer on a marked result, then filled per request."""

    __slots__ = ("encode", "parts")

    def __init__(self, body: bytes, modern: bool) -> None:
        id_mark, text_mark = json.dumps(_ID_MARK).encode(), json.dumps(_TEXT_MARK).encode()
        head, found_id, rest = body.partition(id_mark)
        middle, found_text, tail = rest.partition(text_mark)
        if not (found_id and found_text) or body.count(id_mark) + body.count(text_mark) != 2:
            raise ValueError("template markers not found exactly once, in order")
        self.parts = (head, middle, tail)
        # The modern path writes json.dumps (ASCII-escaped); the legacy one pydantic-core JSON.
        self.encode = _ascii_json if modern else to_json

    def render(self, request_id: int | str, text: str) -> bytes:
        head, middle, tail = self.parts
        encode = self.encode
        return b"".join((head, encode(request_id), middle, encode(text), tail))


def _ascii_json(value: int | str) -> bytes:
    """``json.dumps(value).encode()`` for an id or a text, without the encoder object."""
    if type(value) is str:
        return encode_basestring_ascii(value).encode()
    return str(value).encode()


# Set while the fast path asks the SDK's checks (:meth:`FastPath.sdk_allows`), in that task only.
_ASKING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mcp_fast_path_asking", default=False
)


def _quiet_while_asking(record: logging.LogRecord) -> bool:
    """A logging filter: drops what the SDK's header checks log (an invalid Host or Origin)
    while the fast path asks them. A request they refuse goes on to the SDK, whose own check
    logs it: without this the first request from a bad Host would be logged twice."""
    return not _ASKING.get()


class FastPath:
    """Answer stateless JSON-response ``tools/call`` POSTs directly.

    The SDK serves each stateless request with a fresh transport, memory streams, a task in
    the manager's task group, a dispatcher, a runner with middleware, and two result
    validations; for a hook handler that answers in microseconds that machinery is most of the
    cost. This path checks that a request is one the SDK would accept (its own header checks,
    validation ladder and params validation, called as it calls them), runs the same
    :func:`run_tool`, and writes the bytes the SDK would write (see :class:`_Template`).
    Anything else, or anything it is unsure of, is handed to the SDK *before* a handler runs,
    with the body replayed: a handler never runs twice.

    One kind of request is answered here whether or not the fast path serves the rest
    (``serve_fast``): a ``tools/call`` the SDK would refuse with an error although the webhook
    answers it (see :meth:`guard`). A runtime reads an MCP error as "proceed", so a fail-closed
    tool answers its safe decision there, as its webhook route does.
    """

    def __init__(
        self,
        server: Server[Any],
        hook_app: HookApp,
        tools: Mapping[str, ToolSpec],
        security: TransportSecuritySettings,
        max_body: int,
        serve_fast: bool = True,
    ) -> None:
        self.server = server
        # False: every request the SDK can answer is the SDK's; only :meth:`guard` answers here
        self.serve_fast = serve_fast
        self.hook_app = hook_app
        self.tools = tools
        # Cleared for good when this SDK cannot be mirrored (see :meth:`serve`).
        self.enabled = True
        try:
            # The header checks the SDK's streamable HTTP transport makes of a POST, called as
            # it calls them: its transport security middleware (Content-Type, then Host and
            # Origin when DNS-rebinding protection is on), its Accept rule for a JSON response,
            # its Content-Type rule (a method of the transport that reads only the request).
            self.security = sdk_security.TransportSecurityMiddleware(security)
            # its refusals are logged on its module's logger (addFilter adds the filter once)
            sdk_security.logger.addFilter(_quiet_while_asking)
            self.accepts = sdk_http.check_accept_headers
            check = sdk_http.StreamableHTTPServerTransport._check_content_type
            self.content_type_ok = functools.partial(check, cast(Any, None))
        except AttributeError:  # an SDK without one of them: it checks every request itself
            logger.warning("MCP fast path disabled: an SDK header check is gone", exc_info=True)
            self.enabled = False
        self.templates: dict[str, tuple[_Template, _Template]] = {}
        # Answers that depend on what a client sends the same on every call, so remembered:
        # the SDK's verdict on each (content type, accept, host, origin) and on each call's
        # routing headers, name and _meta (:meth:`admitted`); header names seen that are
        # none of the SDK's own (sessions, resumption, Mcp-Param-*).
        self.checked: dict[tuple[bytes | None, ...], bool] = {}
        self.admissions: dict[tuple[Any, ...], str | None] = {}
        self.plain_names: set[bytes] = set()
        # The server's cap, which the mount gives the session manager too: a body over it
        # goes to the SDK, which refuses it before reading it.
        self.max_body = max_body

    async def handle(self, scope: Scope, receive: Receive, send: Send, sdk: ASGIApp) -> None:
        """Answer the request here when this path can, otherwise hand it to ``sdk``."""
        if self.enabled and scope["type"] == "http" and scope["method"] == "POST" and self.usable():
            headers = self.headers_ok(scope)
            # a verdict known to pass costs one lookup, not a coroutine
            if headers is not None and (
                self.checked.get(key := _check_key(headers)) or await self.sdk_allows(key)
            ):
                message = await receive()
                if message["type"] == "http.request" and not message.get("more_body", False):
                    # the whole body in one message: what a client's small POST arrives as
                    body: bytes | None = message.get("body", b"")
                    messages = [message]
                else:
                    body, messages = await _read_body(_replay([message], receive), self.max_body)
                if body is not None:
                    if len(body) <= self.max_body:
                        if (
                            self.serve_fast
                            and _length_ok(headers, self.max_body)
                            and await self.serve(scope, headers, body, send)
                        ):
                            return
                        if await self.guard(scope, headers, body, send, over=None):
                            return
                    elif await self.guard(scope, headers, body, send, over=(messages, receive)):
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
    def traced(self, version: str, request_id: int | str, name: str, meta: Any) -> Iterator[Any]:
        """The SDK middleware's span for one ``tools/call`` (same name, kind, attributes,
        parent); only entered when a tracer provider is configured (the SDK's is a no-op
        otherwise)."""
        attributes: dict[str, Any] = {
            "mcp.method.name": "tools/call",
            "mcp.protocol.version": version,
            "jsonrpc.request.id": str(request_id),
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
        }
        with sdk_otel.otel_span(
            name=f"tools/call {name}",
            kind=SpanKind.SERVER,
            attributes=attributes,
            context=sdk_otel.extract_trace_context(meta if isinstance(meta, dict) else None),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield span

    def headers_ok(self, scope: Scope) -> dict[bytes, bytes] | None:
        """The headers the SDK reads, when none is one the SDK alone handles or repeated;
        None sends the request to the SDK. (Their values are :meth:`sdk_allows`'s to check.)

        One dict of every header (the server's own, when it made one for the auth check):
        when it has as many entries as the request has headers, no header is repeated
        (otherwise :meth:`headers_exact` decides, one header at a time); its names are then
        checked against those already known not to be the SDK's alone.
        """
        raw = scope["headers"]
        found: dict[bytes, bytes] | None = scope.get("handler_kit.headers")
        if found is None:
            found = dict(raw)
        if len(found) != len(raw):
            return self.headers_exact(scope)
        if not found.keys() <= self.plain_names:
            if any(name.startswith(_SDK_ONLY_HEADERS) for name in found):
                return None
            _remember(self.plain_names, found)
        return found

    def headers_exact(self, scope: Scope) -> dict[bytes, bytes] | None:
        """:meth:`headers_ok`, one header at a time: the watched ones, none of them twice,
        and none of the headers that are the SDK's alone."""
        found: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            if key in _WATCHED_HEADERS:
                if key in found:  # duplicated: first- and last-copy readers could disagree
                    return None
                found[key] = value
            elif key.startswith(_SDK_ONLY_HEADERS):
                return None
        return found

    async def sdk_allows(self, key: tuple[bytes | None, ...]) -> bool:
        """Whether the SDK's header checks pass (one that does not is the SDK's to refuse,
        with its own status and message), asked once per ``key``, the (content type, accept,
        host, origin) sent; the length is the caller's to check (a body over the cap may
        still be :meth:`guard`'s)."""
        known = self.checked.get(key)
        if known is None:
            checked = zip(_CHECKED_HEADERS, key, strict=True)
            sent = [(name, value) for name, value in checked if value]
            request = Request({"type": "http", "method": "POST", "headers": sent})
            asking = _ASKING.set(True)
            try:
                known = await self.security.validate_request(request, is_post=True) is None
            finally:
                _ASKING.reset(asking)
            # JSON responses: JSON alone is required
            known = known and self.accepts(request)[0] and bool(self.content_type_ok(request))
            _remember(self.checked, {key: known})
        return known

    async def serve(
        self, scope: Scope, headers: dict[bytes, bytes], body: bytes, send: Send
    ) -> bool:
        """Serve the request and return True, or return False having done nothing."""
        era = _era(headers)
        # pydantic-core's parser for both eras: what it accepts, json.loads (the modern
        # transport's parser) accepts as the same value; what it refuses (a byte-order mark,
        # UTF-16, lone surrogates) goes to the SDK, which answers it as it always does.
        try:
            decoded = from_json(body)
        except (ValueError, RecursionError):
            return False
        if era is None or type(decoded) is not dict or decoded.keys() - _ENVELOPE_KEYS:
            return False
        call = tools_call(decoded)
        if call is None or len(decoded) != 4:
            return False
        request_id, name, arguments = call
        params = decoded["params"]
        spec = self.tools.get(name)
        if spec is None or params.keys() - _CALL_PARAM_KEYS:
            return False
        if not (arguments is None or type(arguments) is dict):
            return False
        modern = era[1]
        meta = params.get("_meta")
        version = self.admitted(headers, era, decoded, meta)
        if version is None:
            return False
        templates = self.templates_for(version, modern)
        if templates is None:
            return False
        template, error_template = templates
        provider = _tracer_provider()
        if provider is None or isinstance(provider, _UNTRACED):
            # the common case: no span, so no context manager either
            hook_app = self.hook_app
            context = (
                call_context(spec, scope, request_id, "fast")
                if hook_app.observers or hook_app.committers
                else None
            )
            answered = await answer_tool(hook_app, spec, arguments, context, owned=True)
            if not isinstance(answered, ToolOutcome) and not answered.failed:
                # the answer's own body is the text: no result object on the way
                body_out = template.render(request_id, answered.body.decode())
            else:
                if not isinstance(answered, ToolOutcome):
                    answered = outcome_of(spec.handler, answered)
                body_out = (error_template if answered.is_error else template).render(
                    request_id, answered.text
                )
        else:
            with self.traced(version, request_id, name, meta) as span:
                context = call_context(spec, scope, request_id, "fast")
                outcome = await run_tool(self.hook_app, spec, arguments, context, owned=True)
                if outcome.is_error:
                    body_out = error_template.render(request_id, outcome.text)
                    span.set_attribute("error.type", "tool_error")
                    span.set_status(StatusCode.ERROR)
                else:
                    body_out = template.render(request_id, outcome.text)
        await send(_start(body_out, modern))
        await send({"type": "http.response.body", "body": body_out})
        return True

    async def guard(
        self,
        scope: Scope,
        headers: dict[bytes, bytes],
        body: bytes,
        send: Send,
        *,
        over: BodyRead | None,
    ) -> bool:
        """Answer a ``tools/call`` the SDK would refuse with an error although the webhook
        answers it, and return True; otherwise return False having done nothing.

        - A body the SDK cannot read (not JSON, nested too deep) or over the cap (``over``: the
          messages read and the receive of the rest, see ``envelope.over_cap_call``), or arguments:
          a fail-closed tool answers its safe decision, as its webhook route does, when the
          JSON-RPC ``id``, the method and ``params.name`` can be read from what was received
          (:mod:`~handler_kit.server.mcp.envelope`). A runtime reads the SDK's error as "proceed".
        - A body of the legacy era that only the standard library's parser reads (lone
          surrogate escapes such as ``"\\udc8f"``, which runtimes do send, as the webhook takes
          them; the SDK's legacy transport refuses them, its modern one reads them): any tool
          answers it, with the handler's own decision.

        The answer is written with the SDK's own serializer (:class:`_Template`), as the SDK
        would write a tool result for the request's protocol version.
        """
        era = _era(headers)
        if era is None:  # a version the SDK refuses anyway: its error
            return False
        version, modern = era
        problem: str | None = None
        arguments: Any = None
        found: tuple[int | str, str] | None = None
        if over is not None:
            problem = f"body_too_large: the body is over the {self.max_body}-byte limit"
            found = await over_cap_call(body, self.max_body, over, self.tools, 64 * self.max_body)
        else:
            try:
                decoded = from_json(body)
                sdk_reads = True
            except (ValueError, RecursionError):
                # the modern transport reads with json.loads, as the webhook does (a byte-order
                # mark, UTF-16, lone surrogates); the legacy one with pydantic-core
                sdk_reads = modern
                try:
                    decoded = load_json(body)  # the webhook's reading: lone surrogates too
                except InputTooDeep:
                    problem = f"too_deep: the body is nested deeper than {MAX_INPUT_DEPTH} levels"
                except ValueError:
                    problem = "malformed_json: the body is not valid JSON"
            if problem is not None:
                found = scan_envelope(body)
            else:
                call = tools_call(decoded)
                if call is None:
                    return False
                request_id, name, arguments = call
                found = (request_id, name)
                readable = arguments is None or type(arguments) is dict
                if sdk_reads and readable:
                    return False  # the SDK's (or the fast path's) to answer
                if not readable:
                    problem = "invalid_arguments: the arguments are not an object"
        if found is None:
            return False
        request_id, name = found
        spec = self.tools.get(name)
        if spec is None or not _routing_ok(headers, name):
            return False
        if problem is not None and not spec.handler.fail_closed:
            return False  # the SDK's error, as the webhook's 4xx for a handler that fails open
        templates = self.templates_for(version, modern)
        if templates is None:
            return False
        template, error_template = templates
        hook_app = self.hook_app
        context = call_context(spec, scope, request_id, "guard")
        if problem is not None:
            unread = hook_app.answer_unreadable(
                spec.handler.event, [spec.handler], problem, transport="mcp", context=context
            )
            assert unread is not None  # the handler fails closed
            answered: Any = unread
        else:
            answered = await answer_tool(hook_app, spec, arguments, context, owned=True)
        if not isinstance(answered, ToolOutcome):
            answered = outcome_of(spec.handler, answered)
        body_out = (error_template if answered.is_error else template).render(
            request_id, answered.text
        )
        await send(_start(body_out, modern))
        await send({"type": "http.response.body", "body": body_out})
        return True

    def admitted(
        self,
        headers: dict[bytes, bytes],
        era: tuple[str, bool],
        decoded: dict[str, Any],
        meta: Any,
    ) -> str | None:
        """The protocol version the SDK answers a ``tools/call`` in, or None when it refuses
        the call: its validation ladder of the modern era (``classify_inbound_request``) or its
        per-version params validation.

        By now ``name`` is a str naming a tool and ``arguments`` an object or absent, which the
        schema accepts whatever they hold (``arguments`` is ``dict[str, Any]``), and the ladder
        does not read them: both verdicts depend on the routing headers, the name and
        ``_meta`` alone, which a client sends the same on every call, so they are asked once
        per (routing headers, name, ``_meta``) and remembered.
        """
        params = decoded["params"]
        # pydantic-core's JSON of a parsed JSON value is an exact key (it tells 1, 1.0, true
        # and "1" apart; NaN and the infinities are spelled out) and cheaper than its repr; an
        # absent _meta and a null one differ to the SDK, so in the key too
        has_meta = "_meta" in params
        get = headers.get
        key = (
            get(b"mcp-protocol-version"),
            get(b"mcp-method"),
            get(b"mcp-name"),
            params["name"],
            to_json(meta, inf_nan_mode="constants") if has_meta else b"",
        )
        if key in self.admissions:
            return self.admissions[key]
        version: str | None = era[0]
        if era[1]:  # the ladder, with the routing headers as the transport gives them
            routing = {
                name.decode(): value.decode("latin-1")
                for name, value in headers.items()
                if name in _ROUTING_HEADERS
            }
            verdict = classify_inbound_request(decoded, headers=routing)
            version = verdict.protocol_version if isinstance(verdict, InboundModernRoute) else None
        if version is not None:
            probe: dict[str, Any] = {"name": "t", "arguments": {}}
            if has_meta:
                probe["_meta"] = meta
            try:
                validate_client_request("tools/call", version, probe)
            except (ValidationError, KeyError, ValueError):
                version = None
        _remember(self.admissions, {key: version})
        return version

    # -- response templates --

    def templates_for(self, version: str, modern: bool) -> tuple[_Template, _Template] | None:
        """The templates of a tool's result and of its error for ``version``; None, with the
        fast path off for good, on an SDK whose serializer this module does not know (the SDK
        then answers everything)."""
        found = self.templates.get(version)
        if found is None:
            try:
                found = (self._build(version, modern, False), self._build(version, modern, True))
            except Exception:
                logger.warning(
                    "MCP fast path disabled: cannot build response templates", exc_info=True
                )
                self.enabled = False
                return None
            self.templates[version] = found
        return found

    def _build(self, version: str, modern: bool, is_error: bool) -> _Template:
        """Serialize a marked tool result exactly as the SDK does for this version."""
        result = ToolOutcome(_TEXT_MARK, is_error).result()
        runner = ServerRunner(self.server, Connection.from_envelope(version, None, None), None)
        dumped = runner._serialize("tools/call", version, result)
        message = mt.JSONRPCResponse(jsonrpc="2.0", id=_ID_MARK, result=dumped)
        if modern:
            data = message.model_dump(mode="json", by_alias=True, exclude_none=True)
            body = json.dumps(data, separators=(",", ":")).encode()
        else:
            body = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        return _Template(body, modern)


def _check_key(headers: dict[bytes, bytes]) -> tuple[bytes | None, ...]:
    get = headers.get
    return (get(b"content-type"), get(b"accept"), get(b"host"), get(b"origin"))


def _remember(store: Any, items: Any) -> None:
    """Add to a cache of what clients send the same on every call, bounded: a client that
    sends something new every time empties it now and then, never grows it."""
    if len(store) >= _MAX_REMEMBERED:
        store.clear()
    store.update(items)


def _start(body: bytes, modern: bool) -> Message:
    """The response's start, with the headers in the order each era's transport writes them."""
    length = (b"content-length", b"%d" % len(body))
    headers = [length, _JSON_TYPE] if modern else [_JSON_TYPE, length]
    return {"type": "http.response.start", "status": 200, "headers": headers}


async def _read_body(receive: Receive, limit: int) -> tuple[bytes | None, list[Message]]:
    """Read the body, keeping the messages so the SDK can be handed them again: the whole
    body, or what was read once it is past ``limit`` (the rest is left unread)."""
    messages: list[Message] = []
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return None, messages
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit or not message.get("more_body", False):
            return b"".join(chunks), messages


def _length_ok(headers: dict[bytes, bytes], limit: int) -> bool:
    """Whether the declared length is there and within the cap (what the fast path serves)."""
    length = headers.get(b"content-length")
    return length is not None and length.isdigit() and int(length) <= limit


def _era(headers: dict[bytes, bytes]) -> tuple[str, bool] | None:
    """The protocol version a request is answered in and whether it is the modern era's, as
    the SDK reads the header; None for a version the SDK does not speak."""
    raw = headers.get(b"mcp-protocol-version")
    if raw is None:
        return DEFAULT_NEGOTIATED_VERSION, False
    version = raw.decode("latin-1")
    if raw in _HANDSHAKE_VERSIONS:
        return version, False
    if version in _MODERN_VERSIONS:
        return version, True
    return None


def _routing_ok(headers: dict[bytes, bytes], name: str) -> bool:
    """Whether the modern era's routing headers, when sent, say this call."""
    method = headers.get(b"mcp-method")
    if method is not None and method != b"tools/call":
        return False
    given = headers.get(b"mcp-name")
    return given is None or decode_header_value(given.decode("latin-1")) == name


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed
