"""Every handler of a HookApp as an MCP tool, on the same server and port as the webhook.

Runbear's ``mcp_tool`` handlers (and Claude Code's ``mcp_tool`` hooks) call a tool with an input
rendered from the hook input; this module makes each handler such a tool, so one deployment
serves both handler types. The decision is never made here: a tool call builds the event and
hands it to :meth:`HookApp.answer`, the one code path the webhook uses too (matchers, deadline,
fail-closed, stop-loop guard, merge), and the tool's text result is exactly :attr:`Answer.body`,
the bytes the webhook would send.

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

Fast path: stateless JSON-response ``tools/call`` and ``tools/list`` POSTs are answered by
:class:`_FastPath` without the SDK's per-request machinery (transport object, memory streams,
task, runner, result re-validation), with the same bytes the SDK would send; anything it does not
recognise exactly (other methods, other modes, odd headers or envelopes, errors) falls through
to the SDK unchanged. With tracing configured it opens the same span the SDK's middleware would.
``tests/test_mcp.py`` checks both paths byte-for-byte, and span-for-span.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

import mcp_types as mt
from mcp.server import Server
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecuritySettings,
)
from mcp.shared import _otel as sdk_otel
from mcp.shared.exceptions import MCPError
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
from starlette.types import ASGIApp, Receive, Scope, Send

from handler_kit.app import Answer, Handler, HookApp
from handler_kit.events import HookEvent

logger = logging.getLogger("handler_kit.mcp")

# Host headers always accepted: loopback, with or without a port. Allowing them never opens a
# DNS-rebinding hole (a rebinding attack arrives with the attacker's host name in Host).
LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
ALL_HOSTS = "*"
FAST_PATH_ENV = "HANDLER_KIT_MCP_FAST_PATH"
_OFF = frozenset({"0", "false", "no", "off"})
MCP_PATH = "/mcp"

# A generic, safe message: a handler's exception text may hold secrets or internals, and the
# model reads isError text. The detail is in the server log (HookApp logs it with a traceback).
FAILED_MESSAGE = "The handler {name!r} failed; see the server log."
TIMED_OUT_MESSAGE = "The handler {name!r} did not answer in time."


# -- tools --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One handler as a tool: its MCP ``Tool`` object and what a call needs."""

    handler: Handler
    tool: mt.Tool

    @property
    def name(self) -> str:
        return self.handler.name

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.tool.input_schema


def tool_input_schema(event: str, model: type[HookEvent]) -> dict[str, Any]:
    """The input schema of a tool for ``event``: the event model's fields, flat, all optional.

    Runbear drops template keys a tool does not declare, so every field is declared, each with
    its description; nothing is required (a runtime omits what it cannot supply, and
    ``hook_event_name`` is implied by the tool); ``additionalProperties`` stays open so fields
    runtimes add later still reach the handler, as they do on the webhook. The pydantic
    ``anyOf [T, null]`` spelling is folded into ``type: [T, "null"]`` and titles dropped: the
    schema is read by models and template editors, and the short form is easier on both.
    """
    raw = model.model_json_schema()
    properties: dict[str, Any] = {}
    for field_name, prop in raw.get("properties", {}).items():
        properties[field_name] = _compact(prop)
    properties["hook_event_name"] = {
        "type": "string",
        "description": f"Name of the event; optional, this tool always handles {event}.",
        "default": event,
    }
    # hook_event_name first: the order models and humans read the schema in.
    ordered = {"hook_event_name": properties.pop("hook_event_name"), **properties}
    schema: dict[str, Any] = {"type": "object", "properties": ordered, "additionalProperties": True}
    if "$defs" in raw:
        schema["$defs"] = raw["$defs"]
    return schema


# Keys of a schema that may be folded with null into ``type: [T, "null"]`` without loss.
_FOLDABLE = frozenset({"type", "additionalProperties", "items"})


def _compact(prop: dict[str, Any]) -> dict[str, Any]:
    """One property of a pydantic schema, without titles and null defaults, nullables folded."""
    out = {k: v for k, v in prop.items() if k != "title"}
    if "default" in out and out["default"] is None:
        del out["default"]
    any_of = out.get("anyOf")
    if isinstance(any_of, list) and len(any_of) == 2 and {"type": "null"} in any_of:
        other = any_of[0] if any_of[1] == {"type": "null"} else any_of[1]
        if isinstance(other.get("type"), str) and set(other) <= _FOLDABLE:
            del out["anyOf"]
            out = {**other, "type": [other["type"], "null"], **out}
    return out


def tool_description(handler: Handler) -> str:
    """What a model or a template author needs to know to call the tool.

    The handler's docstring says what it checks; the event and matcher say when it applies (a
    call that does not match the matcher is answered ``{}``, as on the webhook's
    ``/hooks/{name}``); the last line says what the result is.
    """
    parts = []
    if handler.description:
        parts.append(handler.description.strip())
    when = f"Hook handler for {handler.event} events"
    if handler.matcher and handler.matcher.strip() not in ("", "*"):
        when += f" (matcher: {handler.matcher})"
    when += "."
    if handler.fail_closed:
        when += " Fails closed: on an error or a late answer the result is the safe decision."
    parts.append(when)
    parts.append(
        "Pass the hook input's fields as arguments. The result is the Claude Code hook output "
        "JSON as text ({} means no opinion)."
    )
    return "\n\n".join(parts)


def build_tools(hook_app: HookApp) -> dict[str, ToolSpec]:
    """One tool per handler, named like its webhook route, in registration order."""
    tools: dict[str, ToolSpec] = {}
    for handler in hook_app.handlers:
        tool = mt.Tool(
            name=handler.name,
            description=tool_description(handler),
            input_schema=tool_input_schema(handler.event, handler.model),
        )
        tools[handler.name] = ToolSpec(handler=handler, tool=tool)
    return tools


# -- one tool call: shared by the SDK handler and the fast path -----------------------------


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool call answers: one text and whether it is an ``isError`` result."""

    text: str
    is_error: bool = False

    def result(self) -> mt.CallToolResult:
        return mt.CallToolResult(
            content=[mt.TextContent(type="text", text=self.text)], is_error=self.is_error
        )


async def run_tool(
    hook_app: HookApp,
    spec: ToolSpec,
    arguments: Mapping[str, Any] | None,
    context: dict[str, Any] | None = None,
) -> ToolOutcome:
    """Answer one call of ``spec``'s tool with ``arguments``: the single decision path.

    The arguments are the hook input; a missing ``hook_event_name`` is the tool's event, another
    one is a caller error. The handler runs only when its matcher matches (otherwise the answer
    is ``{}``, like ``/hooks/{name}``), through :meth:`HookApp.answer` with ``transport="mcp"``.
    A failed answer (every handler failed, no fail-closed policy) is an ``isError`` result with
    a generic message; a fail-closed failure is already the safe decision inside the answer.
    """
    handler = spec.handler
    data = dict(arguments) if arguments else {}
    given = data.get("hook_event_name")
    if given is None:
        data["hook_event_name"] = handler.event
    elif given != handler.event:
        return ToolOutcome(
            f"Tool {handler.name!r} handles {handler.event} events; "
            f"hook_event_name was {given!r}. Omit it or pass {handler.event!r}.",
            is_error=True,
        )
    try:
        event = handler.model.model_validate(data)
    except ValidationError as exc:
        return ToolOutcome(_invalid_input_message(handler, exc), is_error=True)
    handlers = [handler] if handler.matches(event.matcher_value()) else []
    try:
        answer = await hook_app.answer(event, handlers, transport="mcp", context=context)
    except Exception:
        # HookApp.answer answers handler failures itself; reaching this is a bug in a wrapper
        # or the core. Say so generically: the SDK's legacy path would put str(exc) on the wire.
        logger.exception("answering %s over MCP failed", handler.name)
        return ToolOutcome(FAILED_MESSAGE.format(name=handler.name), is_error=True)
    return outcome_of(handler, answer)


def outcome_of(handler: Handler, answer: Answer) -> ToolOutcome:
    """The tool result for ``answer``: its exact body, or a generic error when it failed."""
    if answer.failed:
        template = TIMED_OUT_MESSAGE if answer.timed_out else FAILED_MESSAGE
        return ToolOutcome(template.format(name=handler.name), is_error=True)
    return ToolOutcome(answer.body.decode())


def _invalid_input_message(handler: Handler, exc: ValidationError) -> str:
    # Field paths and pydantic's messages only: never the offending values, which may be large
    # or sensitive, and never anything from the handler.
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in error.get("loc", ())) or "(input)"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return f"Invalid hook input for tool {handler.name!r} ({handler.event}): " + "; ".join(problems)


def call_context(
    spec: ToolSpec, scope: Mapping[str, Any] | None, request_id: Any, served_by: str
) -> dict[str, Any]:
    """The context observers (audit, metrics, tracing) receive with an MCP answer.

    The same keys as the webhook's (``principal`` set by the server's auth layer,
    ``traceparent`` from the HTTP request), plus the tool name, the JSON-RPC request id and
    ``mcp_path``: ``"fast"`` or ``"sdk"``, which code answered (for metrics and debugging).
    """
    context: dict[str, Any] = {
        "principal": None,
        "tool": spec.name,
        "request_id": request_id,
        "mcp_path": served_by,
    }
    if scope:
        context["principal"] = scope.get("handler_kit.principal")
        for key, value in scope.get("headers", ()):
            if key == b"traceparent":
                context["traceparent"] = value.decode("latin-1")
                break
    return context


# -- host checks ----------------------------------------------------------------------------


def transport_security(allowed_hosts: Sequence[str] | None) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding settings for ``allowed_hosts``.

    Each entry is a host name (``hooks.example.com``: accepted with any port or none), a
    ``host:port`` (that port only), or ``*`` (no Host/Origin check at all: for a server behind
    a proxy that sets its own Host, where bearer auth already defeats rebinding). Loopback names
    are always accepted. Origins follow the hosts, on http and https; a request without an
    ``Origin`` (every server-side runtime) is never refused for it. Anything else (a URL, a
    ``*.example.com`` pattern the SDK cannot match) raises ``ValueError`` at start-up, rather
    than refusing every request later.
    """
    entries = [h.strip().lower() for h in (allowed_hosts or ()) if h and h.strip()]
    if ALL_HOSTS in entries:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts: list[str] = []
    origins: list[str] = []
    for entry in [*LOOPBACK_HOSTS, *entries]:
        name, port = _split_host(entry)
        forms = [f"{name}:{port}"] if port else [name, f"{name}:*"]
        for form in forms:
            if form not in hosts:
                hosts.append(form)
                origins.extend(f"{scheme}://{form}" for scheme in ("http", "https"))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


_HOST_NAME = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9_.-]*[a-z0-9])?)")


def _split_host(entry: str) -> tuple[str, str | None]:
    """``host`` / ``host:port`` / ``host:*`` / ``[v6]:port`` -> (host, port or None)."""
    name, port = entry, None
    if entry.startswith("["):
        close = entry.find("]")
        if close != -1 and entry[close + 1 : close + 2] == ":":
            name, port = entry[: close + 1], entry[close + 2 :]
    elif entry.count(":") == 1:
        name, port = entry.split(":")
    if port == "*":
        port = None
    if not _HOST_NAME.fullmatch(name) or (port is not None and not port.isdigit()):
        raise ValueError(
            f"allowed host {entry!r} is not supported: give a host name "
            "(hooks.example.com), host:port, or * to accept any Host"
        )
    return name, port


# -- fast path ----------------------------------------------------------------------------------

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
Message = dict[str, Any]


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


class _FastPath:
    """Answer stateless JSON-response ``tools/call`` and ``tools/list`` POSTs directly.

    The SDK serves each stateless request with a fresh transport, memory streams, a task in
    the manager's task group, a dispatcher, a runner with middleware, and two result
    validations; for a hook handler that answers in microseconds that machinery is most of the
    cost. This path checks that a request is one the SDK would accept (same header, envelope
    and params checks, using the SDK's own validators where they exist), runs the same
    :func:`run_tool`, and writes the bytes the SDK would write (see :class:`_Template`).
    Anything else, or anything it is unsure of, returns ``False`` *before* running a handler,
    and the SDK serves the request from the replayed body: a handler never runs twice and
    every error answer is the SDK's own.
    """

    def __init__(self, mount: McpMount) -> None:
        self.mount = mount
        security = mount.security
        self.check_hosts = security.enable_dns_rebinding_protection
        self.hosts = frozenset(h for h in security.allowed_hosts if not h.endswith(":*"))
        self.host_prefixes = tuple(h[:-1] for h in security.allowed_hosts if h.endswith(":*"))
        self.origins = frozenset(o for o in security.allowed_origins if not o.endswith(":*"))
        self.origin_prefixes = tuple(o[:-1] for o in security.allowed_origins if o.endswith(":*"))
        self.templates: dict[tuple[str, str, bool], _Template] = {}
        self.valid_params: dict[tuple[str, str, str], bool] = {}
        self.max_body = DEFAULT_MAX_REQUEST_BODY_SIZE

    # -- request checks --

    def usable(self) -> bool:
        """Whether skipping the SDK's server middleware changes nothing observable.

        The only middleware the SDK installs is its OpenTelemetry span per message, which
        :meth:`traced` reproduces; with any other middleware added every request goes through
        the SDK, so its effects stay exactly the same.
        """
        middleware = self.mount.server.middleware
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

    async def handle(
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
            spec = self.mount.tools.get(name) if type(name) is str else None
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
            self.mount.fast_path = False
            return False
        meta = params.get("_meta") if params else None
        with self.traced(method, version, request_id, spec and spec.name, meta) as span:
            if spec is None:
                body_out = template.render(request_id)
            else:
                context = call_context(spec, scope, request_id, "fast")
                outcome = await run_tool(self.mount.hook_app, spec, arguments, context)
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
        from mcp.server.connection import Connection
        from mcp.server.runner import ServerRunner

        mount = self.mount
        result: mt.CallToolResult | mt.ListToolsResult
        if method == "tools/call":
            result = ToolOutcome(_TEXT_MARK, is_error).result()
        else:
            result = mount._list_result
        runner = ServerRunner(mount.server, Connection.from_envelope(version, None, None), None)
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


# -- the mount --------------------------------------------------------------------------------


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
        fast_path: bool | None = None,
    ) -> None:
        self.hook_app = hook_app
        self.tools = build_tools(hook_app)
        self.stateless = stateless
        self.json_response = json_response
        self.security = transport_security(allowed_hosts)
        self.server: Server[Any] = Server(
            hook_app.name,
            version=_version(),
            description=hook_app.description or None,
            instructions=(
                "Each tool is one hook handler. Call it with a hook input's fields; the text "
                "result is the Claude Code hook output JSON."
            ),
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            # Mcp-Param header checks on the 2026-07-28 path look a tool's schema up here
            # instead of running tools/list on every call.
            get_tool_input_schema=self._input_schema,
        )
        self._list_result = mt.ListToolsResult(tools=[spec.tool for spec in self.tools.values()])
        self._manager: StreamableHTTPSessionManager | None = None
        self._entered = 0
        if fast_path is None:
            fast_path = os.environ.get(FAST_PATH_ENV, "1").strip().lower() not in _OFF
        self.fast_path = fast_path and stateless and json_response
        self._fast = _FastPath(self)
        # An object, not a bound method: Starlette's Route treats functions and methods as
        # request -> response endpoints and only calls other callables as raw ASGI apps.
        self.asgi: ASGIApp = _McpAsgi(self)

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
        request = ctx.request
        scope = getattr(request, "scope", None)
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
        if (
            self.fast_path
            and scope["type"] == "http"
            and scope["method"] == "POST"
            and self._fast.usable()
        ):
            headers = self._fast.headers_ok(scope)
            if headers is not None:
                body, messages = await _read_body(receive)
                if (
                    body is not None
                    and len(body) <= self._fast.max_body
                    and await self._fast.handle(scope, headers, body, send)
                ):
                    return
                receive = _replay(messages, receive)
        await manager.handle_request(scope, receive, send)


class _McpAsgi:
    """The ASGI app of an :class:`McpMount` (route ``/mcp`` to it)."""

    __slots__ = ("mount",)

    def __init__(self, mount: McpMount) -> None:
        self.mount = mount

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.mount.handle(scope, receive, send)


def create_mcp_mount(
    hook_app: HookApp,
    *,
    allowed_hosts: list[str] | None = None,
    stateless: bool = True,
    json_response: bool = True,
    fast_path: bool | None = None,
) -> McpMount:
    """Serve every handler of ``hook_app`` as an MCP tool (Streamable HTTP, route it at ``/mcp``).

    ``allowed_hosts``: Host names the endpoint answers besides loopback (see
    :func:`transport_security`); the SDK refuses any other Host with 421. ``stateless`` and
    ``json_response`` (the defaults) let any worker answer any request; ``json_response=False``
    streams each response as SSE (progress notifications reach the client), ``stateless=False``
    keeps ``Mcp-Session-Id`` sessions (one worker only). ``fast_path`` answers stateless JSON
    ``tools/call``/``tools/list`` without the SDK's per-request machinery, same bytes (default:
    on, unless the environment sets ``HANDLER_KIT_MCP_FAST_PATH=0``).
    """
    return McpMount(
        hook_app,
        allowed_hosts=allowed_hosts,
        stateless=stateless,
        json_response=json_response,
        fast_path=fast_path,
    )


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("handler-kit")
    except Exception:  # not installed (a source checkout on sys.path)
        return "0"
