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
to the SDK unchanged. ``tests/test_mcp.py`` checks both paths byte-for-byte.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as mt
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from handler_kit.app import Answer, Handler, HookApp
from handler_kit.events import HookEvent

logger = logging.getLogger("handler_kit.mcp")

# Host headers always accepted: loopback, with or without a port. Allowing them never opens a
# DNS-rebinding hole (a rebinding attack arrives with the attacker's host name in Host).
LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
ALL_HOSTS = "*"
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


def _compact(prop: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in prop.items() if k != "title"}
    if "default" in out and out["default"] is None:
        del out["default"]
    any_of = out.get("anyOf")
    if isinstance(any_of, list) and len(any_of) == 2 and {"type": "null"} in any_of:
        other = any_of[0] if any_of[1] == {"type": "null"} else any_of[1]
        if isinstance(other.get("type"), str) and set(other) <= {"type", "additionalProperties"}:
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
    answer = await hook_app.answer(event, handlers, transport="mcp", context=context)
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
    spec: ToolSpec, scope: Mapping[str, Any] | None, request_id: Any
) -> dict[str, Any]:
    """The context observers (audit, metrics, tracing) receive with an MCP answer.

    The same keys as the webhook's (``principal`` set by the server's auth layer,
    ``traceparent`` from the HTTP request), plus the tool name and the JSON-RPC request id.
    """
    context: dict[str, Any] = {"principal": None, "tool": spec.name, "request_id": request_id}
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
    an authenticating proxy that rewrites Host, where bearer auth already defeats rebinding).
    Loopback names are always accepted. Origins follow the hosts, on http and https; a request
    without an ``Origin`` (every server-side runtime) is never refused by it.
    """
    entries = [h.strip() for h in (allowed_hosts or ()) if h and h.strip()]
    if ALL_HOSTS in entries:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts: list[str] = []
    origins: list[str] = []
    for entry in [*LOOPBACK_HOSTS, *entries]:
        host = entry.lower()
        if "://" in host:
            raise ValueError(f"allowed host {entry!r} must be a host name, not a URL")
        has_port = host.rsplit("]", 1)[-1].count(":") == 1 and not host.endswith(":*")
        forms = [host] if has_port else [host.removesuffix(":*"), host.removesuffix(":*") + ":*"]
        for form in forms:
            if form not in hosts:
                hosts.append(form)
            for scheme in ("http", "https"):
                origin = f"{scheme}://{form}"
                if origin not in origins:
                    origins.append(origin)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


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
        fast_path: bool = True,
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
        self.fast_path = fast_path and stateless and json_response
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
        context = call_context(spec, scope, ctx.request_id)
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
    fast_path: bool = True,
) -> McpMount:
    """Serve every handler of ``hook_app`` as an MCP tool (Streamable HTTP, route it at ``/mcp``).

    ``allowed_hosts``: Host names the endpoint answers besides loopback (see
    :func:`transport_security`); the SDK refuses any other Host with 421. ``stateless`` and
    ``json_response`` (the defaults) let any worker answer any request; ``json_response=False``
    streams each response as SSE (progress notifications reach the client), ``stateless=False``
    keeps ``Mcp-Session-Id`` sessions (one worker only). ``fast_path`` answers stateless JSON
    ``tools/call``/``tools/list`` without the SDK's per-request machinery, same bytes.
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
