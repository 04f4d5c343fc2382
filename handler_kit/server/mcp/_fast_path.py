"""The MCP fast path, and the one module of handler-kit that relies on the SDK's internals.

Stateless JSON-response ``tools/call`` and ``tools/list`` POSTs are answered here without the
SDK's per-request machinery (transport object, memory streams, task, runner, result
re-validation), with the bytes the SDK would send; anything not recognised exactly (other
methods, other modes, odd headers or envelopes, errors) falls through to the SDK unchanged. With
tracing configured it opens the span the SDK's middleware would.

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
import re
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
from mcp.shared.inbound import (
    NAME_BEARING_METHODS,
    InboundModernRoute,
    classify_inbound_request,
    decode_header_value,
)
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    DEFAULT_NEGOTIATED_VERSION,
    PROTOCOL_VERSION_META_KEY,
)
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
_JSON_TYPE = (b"content-type", b"application/json")
_HANDSHAKE_VERSIONS = frozenset(v.encode("latin-1") for v in HANDSHAKE_PROTOCOL_VERSIONS)
_MODERN_VERSIONS = frozenset(MODERN_PROTOCOL_VERSIONS)


def _tracer_provider() -> object:
    """The global tracer provider as the SDK's span sees it: its proxy tracer delegates once
    one is set, and reads nothing else (no environment lookup on every request)."""
    return otel_trace._TRACER_PROVIDER


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
        encode = self.encode
        if text is None:
            return b"".join((parts[0], encode(request_id), parts[1]))
        return b"".join((parts[0], encode(request_id), parts[1], encode(text), parts[2]))


def _ascii_json(value: int | str) -> bytes:
    """``json.dumps(value).encode()`` for an id or a text, without the encoder object."""
    if type(value) is str:
        return encode_basestring_ascii(value).encode()
    return str(value).encode()


# Set while the fast path asks the SDK's checks (:meth:`_SdkChecks.allow`), in that task only.
_ASKING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mcp_fast_path_asking", default=False
)


class _QuietWhileAsking(logging.Filter):
    """Drops what the SDK's header checks log (an invalid Host or Origin) while the fast path
    asks them. A request they refuse goes on to the SDK, whose own check logs it: without this
    the first request from a bad Host would be logged twice, once for each asking."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _ASKING.get()


_QUIET_WHILE_ASKING = _QuietWhileAsking()


class _SdkChecks:
    """The header checks the SDK's streamable HTTP transport makes of a POST, called as it
    calls them: its transport security middleware (Content-Type, then Host and Origin when
    DNS-rebinding protection is on), its Accept rule for a JSON response, its Content-Type
    rule. Looking them up raises AttributeError on an SDK that no longer has one."""

    __slots__ = ("accepts", "content_type_ok", "middleware")

    def __init__(self, security: TransportSecuritySettings) -> None:
        self.middleware = sdk_security.TransportSecurityMiddleware(security)
        # the middleware's refusals are logged on its module's logger (addFilter adds it once)
        sdk_security.logger.addFilter(_QUIET_WHILE_ASKING)
        self.accepts = sdk_http.check_accept_headers
        # a method of the transport that reads nothing of it but the request
        check = sdk_http.StreamableHTTPServerTransport._check_content_type
        self.content_type_ok = functools.partial(check, cast(Any, None))

    async def allow(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """Whether a POST with ``headers`` passes every check (one that does not is the
        SDK's to refuse, with its own status and message)."""
        request = Request({"type": "http", "method": "POST", "headers": headers})
        asking = _ASKING.set(True)
        try:
            refused = await self.middleware.validate_request(request, is_post=True)
        finally:
            _ASKING.reset(asking)
        if refused is not None:
            return False
        has_json, _ = self.accepts(request)  # JSON responses: JSON alone is required
        return has_json and bool(self.content_type_ok(request))


class FastPath:
    """Answer stateless JSON-response ``tools/call`` and ``tools/list`` POSTs directly.

    The SDK serves each stateless request with a fresh transport, memory streams, a task in
    the manager's task group, a dispatcher, a runner with middleware, and two result
    validations; for a hook handler that answers in microseconds that machinery is most of the
    cost. This path checks that a request is one the SDK would accept (same header, envelope
    and params checks, using the SDK's own validators where they exist), runs the same
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
        list_result: mt.ListToolsResult,
        security: TransportSecuritySettings,
        max_body: int,
        serve_fast: bool = True,
    ) -> None:
        self.server = server
        # False: every request the SDK can answer is the SDK's; only :meth:`guard` answers here
        self.serve_fast = serve_fast
        self.hook_app = hook_app
        self.tools = tools
        # The SDK's tools/list handler returns this same object: one source for both paths.
        self.list_result = list_result
        # Cleared for good when this SDK cannot be mirrored (see :meth:`serve`).
        self.enabled = True
        self.checks: _SdkChecks | None = None
        try:
            self.checks = _SdkChecks(security)
        except AttributeError:  # an SDK without one of them: it checks every request itself
            logger.warning("MCP fast path disabled: an SDK header check is gone", exc_info=True)
            self.enabled = False
        self.templates: dict[tuple[str, str, bool], _Template] = {}
        self.valid_params: dict[tuple[str, str, bytes | None], bool] = {}
        # The SDK's verdict on each (content type, accept, host, origin) seen: a client sends
        # the same four on every call.
        self.checked: dict[_CheckKey, bool] = {}
        # Header names seen that are none of the SDK's own (sessions, resumption,
        # Mcp-Param-*): a client sends the same names on every call.
        self.plain_names: set[bytes] = set()
        # The server's cap, which the mount gives the session manager too: a body over it
        # goes to the SDK, which refuses it before reading it.
        self.max_body = max_body
        # What the SDK's modern ladder (classify_inbound_request) compares, worked out once:
        # the Mcp-Name header each tool is called with, when its name travels verbatim (the
        # SDK decodes a base64-wrapped header value; such a name takes the ladder itself).
        self.header_names: dict[str, bytes] = {}
        if NAME_BEARING_METHODS.get("tools/call") == "name" and "tools/list" not in (
            NAME_BEARING_METHODS
        ):
            for name in tools:
                try:
                    raw = name.encode("latin-1")
                except UnicodeEncodeError:
                    continue
                if decode_header_value(name) == name:
                    self.header_names[name] = raw

    async def handle(self, scope: Scope, receive: Receive, send: Send, sdk: ASGIApp) -> None:
        """Answer the request here when this path can, otherwise hand it to ``sdk``."""
        if self.enabled and scope["type"] == "http" and scope["method"] == "POST" and self.usable():
            headers = self.headers_ok(scope)
            # a verdict known to pass costs one lookup, not a coroutine
            if headers is not None and (
                self.checked.get(_check_key(headers)) or await self.sdk_allows(headers)
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
                        if await self.guard(scope, headers, body, send, over=False):
                            return
                    elif await self.guard(scope, headers, body[: self.max_body], send, over=True):
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
        """The SDK middleware's span for one message (same name, kind, attributes, parent);
        only entered when a tracer provider is configured (the SDK's is a no-op otherwise)."""
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
            for name in found:
                if name.startswith(_SDK_ONLY_HEADERS):
                    return None
            if len(self.plain_names) >= _MAX_REMEMBERED:
                self.plain_names.clear()
            self.plain_names.update(found)
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

    async def sdk_allows(self, headers: dict[bytes, bytes]) -> bool:
        """Whether the SDK's header checks (:class:`_SdkChecks`) pass, asked once per
        (content type, accept, host, origin); the length is the caller's to check (a body
        over the cap may still be :meth:`guard`'s)."""
        key = _check_key(headers)
        known = self.checked.get(key)
        if known is None:
            checks = self.checks
            assert checks is not None  # else never enabled
            names = (b"content-type", b"accept", b"host", b"origin")
            sent = [(name, value) for name, value in zip(names, key, strict=True) if value]
            known = await checks.allow(sent)
            if len(self.checked) >= _MAX_REMEMBERED:
                self.checked.clear()
            self.checked[key] = known
        return known

    async def serve(
        self, scope: Scope, headers: dict[bytes, bytes], body: bytes, send: Send
    ) -> bool:
        """Serve the request and return True, or return False having done nothing."""
        raw_version = headers.get(b"mcp-protocol-version")
        modern = raw_version is not None and raw_version not in _HANDSHAKE_VERSIONS
        # pydantic-core's parser for both eras: what it accepts, json.loads (the modern
        # transport's parser) accepts as the same value; what it refuses (a byte-order mark,
        # UTF-16, lone surrogates) goes to the SDK, which answers it as it always does.
        try:
            decoded = from_json(body)
        except (ValueError, RecursionError):
            return False
        if type(decoded) is not dict or not decoded.keys() >= {"jsonrpc", "id", "method"}:
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
            if type(params) is not dict or params.keys() - _CALL_PARAM_KEYS:
                return False
            name = params.get("name")
            spec = self.tools.get(name) if type(name) is str else None
            arguments = params.get("arguments")
            if spec is None or not (arguments is None or type(arguments) is dict):
                return False
        elif method == "tools/list":
            if params is not None and (
                type(params) is not dict or params.keys() - _LIST_PARAM_KEYS
            ):
                return False
            spec = arguments = None
        else:
            return False
        meta = params.get("_meta") if params else None
        if modern:
            assert raw_version is not None  # modern implies the header
            version = raw_version.decode("latin-1")
            if not self.admitted(headers, version, method, spec, meta):
                routing = {
                    key.decode(): value.decode("latin-1")
                    for key, value in headers.items()
                    if key in _ROUTING_HEADERS
                }
                verdict = classify_inbound_request(decoded, headers=routing)
                if not isinstance(verdict, InboundModernRoute):
                    return False
                version = verdict.protocol_version
        elif raw_version is None:
            version = DEFAULT_NEGOTIATED_VERSION
        else:
            version = raw_version.decode("latin-1")
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
        provider = _tracer_provider()
        if provider is None or isinstance(provider, _UNTRACED):
            # the common case: no span, so no context manager either
            if spec is None:
                body_out = template.render(request_id)
            else:
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
            name = spec.name if spec else None
            with self.traced(method, version, request_id, name, meta) as span:
                if spec is None:
                    body_out = template.render(request_id)
                else:
                    context = call_context(spec, scope, request_id, "fast")
                    outcome = await run_tool(self.hook_app, spec, arguments, context, owned=True)
                    if outcome.is_error:
                        body_out = error_template.render(request_id, outcome.text)
                        span.set_attribute("error.type", "tool_error")
                        span.set_status(StatusCode.ERROR)
                    else:
                        body_out = template.render(request_id, outcome.text)
        length = (b"content-length", b"%d" % len(body_out))
        raw = [length, _JSON_TYPE] if modern else [_JSON_TYPE, length]
        await send({"type": "http.response.start", "status": 200, "headers": raw})
        await send({"type": "http.response.body", "body": body_out})
        return True

    async def guard(
        self, scope: Scope, headers: dict[bytes, bytes], body: bytes, send: Send, *, over: bool
    ) -> bool:
        """Answer a ``tools/call`` the SDK would refuse with an error although the webhook
        answers it, and return True; otherwise return False having done nothing.

        - A body the SDK cannot read (not JSON, nested too deep) or over the cap (``over``:
          ``body`` is then its first ``max_body`` bytes), or arguments that are not an object:
          a fail-closed tool answers its safe decision, as its webhook route does, when the
          JSON-RPC ``id``, the method and ``params.name`` can be read from what was received
          (:func:`_scan_envelope`). A runtime reads the SDK's error as "proceed".
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
        if over:
            problem = f"body_too_large: the body is over the {self.max_body}-byte limit"
            found = _scan_envelope(body)
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
                found = _scan_envelope(body)
            else:
                call = _tools_call(decoded)
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
        try:
            template = self.template("tools/call", version, modern, is_error=False)
            error_template = self.template("tools/call", version, modern, is_error=True)
        except Exception:  # an SDK this module does not know: the SDK answers everything
            logger.warning("MCP fast path disabled: cannot build response templates", exc_info=True)
            self.enabled = False
            return False
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
        length = (b"content-length", b"%d" % len(body_out))
        raw = [length, _JSON_TYPE] if modern else [_JSON_TYPE, length]
        await send({"type": "http.response.start", "status": 200, "headers": raw})
        await send({"type": "http.response.body", "body": body_out})
        return True

    def admitted(
        self,
        headers: dict[bytes, bytes],
        version: str,
        method: str,
        spec: ToolSpec | None,
        meta: Any,
    ) -> bool:
        """Whether the SDK's modern ladder (``classify_inbound_request``) admits the request
        as ``version``, decided without it for the shape every client sends: ``_meta`` with
        this version and the capabilities, ``Mcp-Method`` the method, ``Mcp-Name`` the tool's
        name verbatim, a supported version. False means "ask the ladder", not "refused"."""
        if type(meta) is not dict or meta.get(PROTOCOL_VERSION_META_KEY) != version:
            return False
        if CLIENT_CAPABILITIES_META_KEY not in meta or version not in _MODERN_VERSIONS:
            return False
        if headers.get(b"mcp-method") != method.encode():
            return False
        if spec is None:  # tools/list names nothing
            return True
        expected = self.header_names.get(spec.name)
        return expected is not None and headers.get(b"mcp-name") == expected

    def params_valid(self, method: str, version: str, params: dict[str, Any] | None) -> bool:
        """Whether the SDK's per-version params validation accepts ``params``.

        By now ``name`` is a str naming a tool and ``arguments`` an object or absent, which the
        schema accepts whatever they hold (``arguments`` is ``dict[str, Any]``); the answer
        then depends on ``_meta`` alone, which a client sends the same on every call, so it is
        remembered, keyed by its JSON.
        """
        key: tuple[str, str, bytes | None]
        if params is None:
            meta = None
            key = (method, version, None)
        else:
            meta = params.get("_meta")
            # pydantic-core's JSON of a parsed JSON value is an exact key (it tells 1, 1.0,
            # true and "1" apart; NaN and the infinities are spelled out) and cheaper than its
            # repr; an absent _meta and a null one differ in the probe, so in the key too
            key = (
                method,
                version,
                to_json(meta, inf_nan_mode="constants") if "_meta" in params else b"",
            )
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


_CheckKey = tuple[bytes | None, bytes | None, bytes | None, bytes | None]


def _check_key(headers: dict[bytes, bytes]) -> _CheckKey:
    get = headers.get
    return (get(b"content-type"), get(b"accept"), get(b"host"), get(b"origin"))


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


def _valid_id(value: Any) -> bool:
    if type(value) is int:
        return -_MAX_SAFE_ID < value < _MAX_SAFE_ID
    return type(value) is str


def _tools_call(decoded: Any) -> tuple[int | str, str, Any] | None:
    """(id, tool name, arguments) of a parsed JSON-RPC ``tools/call`` request, else None."""
    if type(decoded) is not dict or decoded.get("jsonrpc") != "2.0":
        return None
    if decoded.get("method") != "tools/call" or not _valid_id(decoded.get("id")):
        return None
    params = decoded.get("params")
    if type(params) is not dict or type(params.get("name")) is not str:
        return None
    return decoded["id"], params["name"], params.get("arguments")


# A JSON text cut into its tokens, whatever comes after a bad one: a string, one of the
# structural characters, or a run of anything else (a number, a literal, or garbage). A string
# cut short by the end of the text is no token.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+', re.DOTALL)
_ENVELOPE_FOUND = frozenset({"id", "method", "name"})


def _scan_envelope(data: bytes) -> tuple[int | str, str] | None:
    """The ``id`` and ``params.name`` of a JSON-RPC ``tools/call`` read from the start of a
    body that does not parse as a whole (invalid inside its arguments, nested too deep, or
    cut at the body cap), or None when they (and the method) are not all there, whole.

    Values of other members (``arguments``, ``_meta``) are skipped by their brackets and
    strings, never parsed: what is wrong with the body is inside them. A value at the very end
    of ``data`` is not taken (a number cut by the cap would be another id).
    """
    text = data.decode("utf-8", "replace")
    tokens = (match.group() for match in _TOKENS.finditer(text))
    found: dict[str, Any] = {}

    def skip(first: str) -> None:
        if first not in ("{", "["):
            return
        depth = 1
        for token in tokens:
            if token in ("{", "["):
                depth += 1
            elif token in ("}", "]"):
                depth -= 1
                if depth == 0:
                    return

    def scalar(token: str) -> Any:
        try:
            return json.loads(token)
        except ValueError:
            return None

    def members(names: frozenset[str], into: str | None) -> bool:
        """Read an object's members (its ``{`` read): the scalars named, and ``params``'
        members when ``into`` names it. False when the text ends first."""
        while True:
            key = next(tokens, None)
            if key is None:
                return False
            if key == "}":
                return True
            if key == ",":
                continue
            if next(tokens, None) != ":":
                return False
            first = next(tokens, None)
            if first is None:
                return False
            name = scalar(key) if key.startswith('"') else None
            if name == into and first == "{":
                if not members(frozenset({"name"}), None):
                    return False
            elif name in names and first not in ("{", "["):
                after = next(tokens, None)
                if after is None:  # the value may be cut short: not taken
                    return False
                found[name] = scalar(first)
                if after == "}":
                    return True
            else:
                skip(first)
            if found.keys() >= _ENVELOPE_FOUND:
                return True

    if next(tokens, None) != "{":
        return None
    members(frozenset({"jsonrpc", "id", "method"}), "params")
    if not found.keys() >= _ENVELOPE_FOUND or found["method"] != "tools/call":
        return None
    if found.get("jsonrpc", "2.0") != "2.0" or not _valid_id(found["id"]):
        return None
    name = found["name"]
    return (found["id"], name) if type(name) is str else None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed
