"""The MCP SDK internals the fast path relies on, pinned one by one.

``handler_kit/server/mcp/_fast_path.py`` mirrors the SDK rather than calling it through its
public API: private modules and methods, provisional attributes, constants and rules it copies.
Each of them is listed here with the shape the fast path expects, so that an SDK upgrade that
moves or changes one fails here, naming it, instead of as a byte difference in the equivalence
corpus (or not at all). A second test holds the fence: no other module of the MCP package
touches anything but the SDK's public API, and every SDK name the fast path imports is pinned.

``_fast_path`` is imported inside the checks that compare against it, not at the top: when an
internal is gone the module no longer imports, and the pins must still say which one.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import importlib
import importlib.util
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request

import handler_kit.server.mcp

Check = Callable[[Any], None]


@dataclass(frozen=True)
class Pin:
    """One SDK internal: where it lives and what the fast path needs it to be."""

    module: str
    attribute: str  # dotted, inside the module
    check: Check

    @property
    def name(self) -> str:
        return f"{self.module}.{self.attribute}"


def fast_path() -> Any:
    return importlib.import_module("handler_kit.server.mcp._fast_path")


# -- shapes -----------------------------------------------------------------------------------


def parameters(*expected: str) -> Check:
    """The callable takes ``expected`` first, in order (``*name`` for keyword-only), and
    nothing else that is required."""

    def check(target: Any) -> None:
        params = list(inspect.signature(target).parameters.values())
        found = [("*" if p.kind is p.KEYWORD_ONLY else "") + p.name for p in params]
        assert found[: len(expected)] == list(expected), (
            f"takes {found}, the fast path calls it as {list(expected)}"
        )
        required = [
            p.name
            for p in params[len(expected) :]
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        assert not required, f"now also requires {required}"

    return check


def only_default_middleware(target: Any) -> None:
    from mcp.server import Server

    kinds = [type(m) for m in Server("pin").middleware]
    assert kinds == [target], (
        f"a new Server's middleware is {kinds}; the fast path reproduces exactly one "
        f"{target.__name__} span and steps aside for any other middleware"
    )


def has_field(name: str) -> Check:
    def check(target: Any) -> None:
        fields = [f.name for f in dataclasses.fields(target)]
        assert name in fields, f"has fields {fields}, the fast path reads .{name}"

    return check


def has_method(name: str) -> Check:
    def check(target: Any) -> None:
        assert callable(getattr(target, name, None)), f"has no {name}() (the span test uses it)"

    return check


def handshake_versions(target: Any) -> None:
    # Versions outside this tuple are the modern (2026) era to the fast path.
    assert isinstance(target, tuple) and all(isinstance(v, str) for v in target), repr(target)
    assert "2025-11-25" in target and "2026-07-28" not in target, repr(target)


def negotiated_default(target: Any) -> None:
    # A request without MCP-Protocol-Version is answered as this (handshake-era) version.
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    assert target in HANDSHAKE_PROTOCOL_VERSIONS, f"{target!r} is not a handshake-era version"


def manager_body_limit(target: Any) -> None:
    # The mount leaves the session manager's limit at its default; the fast path uses this.
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    init = inspect.signature(StreamableHTTPSessionManager.__init__)
    default = init.parameters["max_request_body_size"].default
    assert isinstance(target, int) and default == target, (
        f"is {target!r} while the session manager's default limit is {default!r}"
    )


def logs_refusals(target: Any) -> None:
    # The transport security middleware logs each refusal on this logger, which the fast path
    # quiets while it asks the middleware itself (the SDK's own check logs the request).
    from mcp.server.transport_security import (
        TransportSecurityMiddleware,
        TransportSecuritySettings,
    )

    assert isinstance(target, logging.Logger), f"is {type(target).__name__}, not a Logger"
    seen: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    catch, level = Catch(), target.level
    target.addHandler(catch)
    target.setLevel(logging.WARNING)  # whatever the test run's logging configuration
    try:
        settings = TransportSecuritySettings(allowed_hosts=["127.0.0.1"])
        request = Request({"type": "http", "headers": [(b"host", b"evil.example")]})
        refused = asyncio.run(TransportSecurityMiddleware(settings).validate_request(request))
    finally:
        target.removeHandler(catch)
        target.setLevel(level)
    assert refused is not None and refused.status_code == 421, "let evil.example in"
    assert seen == ["Invalid Host header: evil.example"], f"logged {seen} on it"


def routing_header(target: Any) -> None:
    assert target.lower().encode() in fast_path()._ROUTING_HEADERS, (
        f"{target!r} is not among the routing headers the fast path reads"
    )


def sdk_only_header(target: Any) -> None:
    assert target.lower().encode() in fast_path()._SDK_ONLY_HEADERS, (
        f"{target!r} is not among the headers that send a request to the SDK"
    )


def reads_only_the_request(target: Any) -> None:
    # The fast path calls the transport's Content-Type rule without a transport.
    for content_type, expected in (
        ("application/json", True),
        ("application/json; charset=utf-8", True),
        ("application/jsonx", False),
        ("text/plain", False),
    ):
        request = Request({"type": "http", "headers": [(b"content-type", content_type.encode())]})
        assert target(None, request) is expected, f"says {not expected} for {content_type!r}"


def default_modern_versions(target: Any) -> None:
    from mcp.shared.inbound import classify_inbound_request

    default = inspect.signature(classify_inbound_request).parameters["supported_modern_versions"]
    assert tuple(default.default) == tuple(target), (
        f"the ladder serves {default.default!r} by default, the fast path {target!r}"
    )


def verbatim_names(target: Any) -> None:
    for plain in ("refund_gate", "a-b.c", "x y"):
        assert target(plain) == plain, plain
    assert target("=?base64?YWJj?=") == "abc"


def read_by_proxy_tracer(target: Any) -> None:
    # The SDK's span comes from a proxy tracer that delegates once this global is set.
    from opentelemetry.trace import ProxyTracer

    assert "_TRACER_PROVIDER" in inspect.getsource(ProxyTracer), "ProxyTracer no longer reads it"


PINS = [
    Pin("mcp.server._otel", "OpenTelemetryMiddleware", only_default_middleware),
    Pin(
        "mcp.shared._otel",
        "otel_span",
        parameters(
            "name",
            "*kind",
            "*attributes",
            "*context",
            "*record_exception",
            "*set_status_on_exception",
        ),
    ),
    Pin("mcp.shared._otel", "extract_trace_context", parameters("meta")),
    Pin("mcp.shared._otel", "_tracer", has_method("start_as_current_span")),
    Pin("mcp.shared.inbound", "classify_inbound_request", parameters("body", "*headers")),
    Pin("mcp.shared.inbound", "decode_header_value", verbatim_names),
    Pin("mcp_types.version", "MODERN_PROTOCOL_VERSIONS", default_modern_versions),
    Pin("opentelemetry.trace", "_TRACER_PROVIDER", read_by_proxy_tracer),
    Pin("mcp.shared.inbound", "InboundModernRoute", has_field("protocol_version")),
    Pin("mcp.shared.inbound", "MCP_PROTOCOL_VERSION_HEADER", routing_header),
    Pin("mcp.shared.inbound", "MCP_METHOD_HEADER", routing_header),
    Pin("mcp.shared.inbound", "MCP_NAME_HEADER", routing_header),
    Pin("mcp.shared.inbound", "MCP_PARAM_HEADER_PREFIX", sdk_only_header),
    Pin("mcp.server.streamable_http", "MCP_SESSION_ID_HEADER", sdk_only_header),
    Pin("mcp.server.streamable_http", "LAST_EVENT_ID_HEADER", sdk_only_header),
    Pin("mcp.server.streamable_http", "check_accept_headers", parameters("request")),
    Pin(
        "mcp.server.streamable_http",
        "StreamableHTTPServerTransport._check_content_type",
        parameters("self", "request"),
    ),
    Pin(
        "mcp.server.streamable_http",
        "StreamableHTTPServerTransport._check_content_type",
        reads_only_the_request,
    ),
    Pin("mcp.server.transport_security", "TransportSecurityMiddleware", parameters("settings")),
    Pin(
        "mcp.server.transport_security",
        "TransportSecurityMiddleware.validate_request",
        parameters("self", "request", "is_post"),
    ),
    Pin("mcp.server.transport_security", "DEFAULT_MAX_REQUEST_BODY_SIZE", manager_body_limit),
    Pin("mcp.server.transport_security", "logger", logs_refusals),
    Pin("mcp.server.runner", "ServerRunner", parameters("server", "connection", "lifespan_state")),
    Pin(
        "mcp.server.runner",
        "ServerRunner._serialize",
        parameters("self", "method", "version", "result"),
    ),
    Pin(
        "mcp.server.connection",
        "Connection.from_envelope",
        parameters("protocol_version", "client_info", "client_capabilities"),
    ),
    Pin("mcp_types.methods", "validate_client_request", parameters("method", "version", "params")),
    Pin("mcp_types.version", "HANDSHAKE_PROTOCOL_VERSIONS", handshake_versions),
    Pin("mcp_types", "DEFAULT_NEGOTIATED_VERSION", negotiated_default),
]


def resolve(pin: Pin) -> Any:
    target: Any = importlib.import_module(pin.module)
    for part in pin.attribute.split("."):
        target = getattr(target, part)
    return target


def drifted(pin: Pin, problem: str) -> str:
    return (
        f"MCP SDK internal {pin.name} {problem}.\n"
        f"handler_kit/server/mcp/_fast_path.py relies on it: re-check the fast path against "
        f"mcp {version('mcp')} (and its equivalence tests) before updating this pin."
    )


@pytest.mark.parametrize("pin", PINS, ids=lambda pin: pin.name)
def test_sdk_internal_has_the_shape_the_fast_path_relies_on(pin: Pin) -> None:
    try:
        target = resolve(pin)
    except (ImportError, AttributeError) as exc:
        pytest.fail(drifted(pin, f"is gone ({type(exc).__name__}: {exc})"), pytrace=False)
    try:
        pin.check(target)
    except (AssertionError, TypeError, ValueError, KeyError) as exc:
        pytest.fail(drifted(pin, f"changed: {exc}"), pytrace=False)


# -- the fence ------------------------------------------------------------------------------

PACKAGE = Path(handler_kit.server.mcp.__file__).parent
# The SDK's public API, as the rest of the package may use it: module -> names (None: any).
PUBLIC: dict[str, set[str] | None] = {
    "mcp_types": None,
    "mcp.server": {"Server"},
    "mcp.server.context": {"ServerRequestContext"},
    "mcp.server.streamable_http_manager": {"StreamableHTTPSessionManager"},
    "mcp.server.transport_security": {"TransportSecuritySettings"},
    "mcp.shared.exceptions": {"MCPError"},
}
PINNED = {(pin.module, pin.attribute.split(".")[0]) for pin in PINS}


def sdk_uses(path: Path) -> set[tuple[str, str | None]]:
    """(module, name) for every SDK name a module imports, and for every attribute it reads
    on an SDK module it imported whole; (module, None) for a plain ``import module``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[tuple[str, str | None]] = set()
    modules: dict[str, str] = {}  # local name -> SDK module imported whole
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("mcp", "mcp_types"):
                    found.add((alias.name, None))
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] not in ("mcp", "mcp_types"):
                continue
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if _is_module(submodule):
                    modules[alias.asname or alias.name] = submodule
                else:
                    found.add((node.module, alias.name))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.add((modules[node.value.id], node.attr))
    return found


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def is_public(module: str, name: str | None) -> bool:
    if module not in PUBLIC:
        return False
    names = PUBLIC[module]
    return names is None or name in names


def test_only_the_fast_path_touches_sdk_internals() -> None:
    uses = {path.name: sdk_uses(path) for path in sorted(PACKAGE.glob("*.py"))}
    fenced = uses.pop("_fast_path.py")
    # the parser sees a private module used whole, and a private module's class
    assert ("mcp.shared._otel", "otel_span") in fenced
    assert ("mcp.server._otel", "OpenTelemetryMiddleware") in fenced
    unpinned = {use for use in fenced if not is_public(*use) and use not in PINNED}
    assert not unpinned, f"_fast_path.py uses SDK internals not pinned here: {unpinned}"
    assert ("mcp.server", "Server") in uses["mount.py"]
    for name, used in uses.items():
        private = {use for use in used if not is_public(*use)}
        assert not private, (
            f"{name} uses {private}: beyond the SDK's public API, which only _fast_path.py "
            "may do (pinned here)"
        )
