"""The Runbear hooks document: models and the validation PUT applies.

A hooks document maps each of Runbear's five events to matcher groups, each group holding
``http`` and ``mcp_tool`` handlers. Runbear validates the whole document on PUT and answers 422
with every violation at once::

    {"error": "invalid_hooks",
     "issues": [{"path": "hooks.PreToolUse[0].hooks[1].timeout", "message": "..."}]}

or, once the document is well formed, ``{"error": "unknown_mcp_server", ...}`` when an
``mcp_tool`` handler names a server that is not a Custom MCP integration on the agent.

:meth:`HooksDocument.to_json` writes a document as PUT takes it, and with ``redacted=True`` as
GET returns it (every http header value ``<redacted>``).

Validation walks the raw JSON by hand rather than through pydantic's errors: PUT reports one
issue per violated rule with a path a user can find in their file, and several rules (8 handlers
per event, failClosed per event, forbidden headers, ``<redacted>``) span fields pydantic would
check one at a time. The pydantic models are built only from a document that passed, so code that
holds a :class:`HooksDocument` never sees an invalid one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from handler_kit.core.events import RUNBEAR_EVENTS
from handler_kit.core.matchers import MatcherError, compile_matcher

MAX_HANDLERS_PER_EVENT = 8
MAX_HEADERS = 16
MIN_TIMEOUT, MAX_TIMEOUT = 1, 10
DEFAULT_TIMEOUTS: dict[str, int] = {
    "SessionStart": 5,
    "UserPromptSubmit": 3,
    "PreToolUse": 3,
    "PostToolUse": 3,
    "Stop": 3,
}
FAIL_CLOSED_EVENTS = frozenset({"UserPromptSubmit", "PreToolUse"})
FORBIDDEN_HEADERS = frozenset({"content-type", "content-length", "host", "x-runbear-hook-event"})
REDACTED = "<redacted>"
HANDLER_TYPES = ("http", "mcp_tool")

_TOP_FIELDS = frozenset({"hooks"})
_GROUP_FIELDS = frozenset({"matcher", "hooks"})
_HTTP_FIELDS = frozenset({"type", "url", "headers", "timeout", "failClosed"})
_MCP_FIELDS = frozenset({"type", "server", "tool", "input", "timeout", "failClosed"})
# RFC 9110 token characters: what an HTTP client can send as a header name.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")

# (handler url, lower-cased header name) -> the value stored in the vault.
StoredHeaders = Mapping[tuple[str, str], str]

_STRICT = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class _FailClosedWhereSet(BaseModel):
    """Writes a handler's ``failClosed`` only where it was set.

    Runbear rejects the field on SessionStart, PostToolUse and Stop whatever its value, so a
    default ``false`` written on every handler would make a valid document invalid.
    """

    @model_serializer(mode="wrap")
    def _fail_closed_where_set(self, serialize: SerializerFunctionWrapHandler) -> Any:
        data = serialize(self)
        if "fail_closed" not in self.model_fields_set and isinstance(data, dict):
            data.pop("failClosed", None)
            data.pop("fail_closed", None)
        return data


class HttpHandler(_FailClosedWhereSet):
    """POSTs the hook input to ``url`` and reads a Claude Code JSON output from a 2xx."""

    model_config = _STRICT
    type: Literal["http"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: int | None = None
    fail_closed: bool = Field(False, alias="failClosed")


class McpToolHandler(_FailClosedWhereSet):
    """Calls ``tool`` on the agent's Custom MCP server ``server`` with a rendered ``input``."""

    model_config = _STRICT
    type: Literal["mcp_tool"] = "mcp_tool"
    server: str
    tool: str
    input: dict[str, Any] = Field(default_factory=dict)
    timeout: int | None = None
    fail_closed: bool = Field(False, alias="failClosed")


Handler = Annotated[HttpHandler | McpToolHandler, Field(discriminator="type")]


class MatcherGroup(BaseModel):
    """Handlers that run when ``matcher`` applies (omitted, empty or ``*``: always)."""

    model_config = _STRICT
    matcher: str | None = None
    hooks: list[Handler] = Field(default_factory=list)


class HooksDocument(BaseModel):
    """A validated hooks document: event name -> matcher groups."""

    model_config = _STRICT
    hooks: dict[str, list[MatcherGroup]] = Field(default_factory=dict)

    def handlers(self, event: str) -> list[tuple[MatcherGroup, HttpHandler | McpToolHandler]]:
        """Every handler of ``event`` with its group, in document order across groups."""
        return [(group, h) for group in self.hooks.get(event, []) for h in group.hooks]

    def to_json(self, *, redacted: bool = False) -> dict[str, Any]:
        """The document as PUT takes it (aliases, no unset optional field, ``failClosed`` only
        where it was set).

        ``redacted=True``: as ``GET /v1/agents/{id}/hooks`` returns it, every http header
        value shown as ``<redacted>`` (Runbear keeps the values in its vault and never returns
        them). Sent back on PUT, each ``<redacted>`` keeps the value stored for that handler
        URL and header name.
        """
        data = self.model_dump(by_alias=True, exclude_none=True, exclude_defaults=False)
        if redacted:
            for groups in data["hooks"].values():
                for group in groups:
                    for handler in group["hooks"]:
                        if handler["type"] == "http":
                            handler["headers"] = dict.fromkeys(handler["headers"], REDACTED)
        return data

    def stored_headers(self) -> dict[tuple[str, str], str]:
        """The header values Runbear's vault holds for this document, keyed as
        :func:`validate_document` takes them: (handler url, lower-cased header name)."""
        return {
            (handler.url, name.lower()): value
            for groups in self.hooks.values()
            for group in groups
            for handler in group.hooks
            if isinstance(handler, HttpHandler)
            for name, value in handler.headers.items()
        }


def timeout_for(event: str, handler: HttpHandler | McpToolHandler) -> int:
    """The handler's timeout in seconds: its own, else the event's default (at most 10)."""
    if handler.timeout is not None:
        return min(handler.timeout, MAX_TIMEOUT)
    return DEFAULT_TIMEOUTS.get(event, 3)


@dataclass(slots=True)
class Issue:
    """One violation: where it is (``hooks.Stop[0].hooks[1].timeout``) and what is wrong."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


@dataclass(slots=True)
class Validation:
    """What validating a document found: the parsed document, or the error PUT would return."""

    document: HooksDocument | None = None
    error: dict[str, Any] | None = None
    issues: list[Issue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


class DocumentError(ValueError):
    """A hooks document Runbear would refuse; ``error`` is the body PUT would return."""

    def __init__(self, error: dict[str, Any]) -> None:
        self.error = error
        issues = error.get("issues") or []
        detail = "; ".join(f"{i['path']}: {i['message']}" for i in issues[:5])
        more = f" (+{len(issues) - 5} more)" if len(issues) > 5 else ""
        super().__init__(f"{error.get('error')}: {detail or error.get('message', '')}{more}")


def validate_document(
    data: Any,
    *,
    known_mcp_servers: Iterable[str] | None = None,
    stored_headers: StoredHeaders | None = None,
    allow_http: bool = False,
) -> Validation:
    """Validate a hooks document the way PUT does, reporting every violation at once.

    ``known_mcp_servers``: the agent's Custom MCP server names; when given, an ``mcp_tool``
    handler naming another server is ``unknown_mcp_server`` (checked once the document is
    otherwise valid, as PUT does). ``stored_headers``: header values already in the vault, keyed
    by (handler url, lower-cased header name); a ``<redacted>`` value resolves to the stored one
    and is an issue when nothing is stored. ``allow_http`` accepts ``http://`` URLs: not a
    Runbear rule, only for the reference dispatcher pointed at a local plain-HTTP test server.
    """
    issues: list[Issue] = []
    resolved = _check_document(data, issues, stored_headers or {}, allow_http)
    if issues:
        return Validation(
            error={"error": "invalid_hooks", "issues": [i.to_json() for i in issues]},
            issues=issues,
        )
    document = HooksDocument.model_validate(resolved)
    if known_mcp_servers is not None:
        known = set(known_mcp_servers)
        unknown: list[Issue] = []
        names: set[str] = set()
        for event, groups in document.hooks.items():
            for g, group in enumerate(groups):
                for h, handler in enumerate(group.hooks):
                    if isinstance(handler, McpToolHandler) and handler.server not in known:
                        names.add(handler.server)
                        unknown.append(
                            Issue(
                                f"hooks.{event}[{g}].hooks[{h}].server",
                                f"{handler.server!r} is not a Custom MCP integration on the "
                                f"agent (known: {', '.join(sorted(known)) or 'none'})",
                            )
                        )
        if unknown:
            return Validation(
                error={
                    "error": "unknown_mcp_server",
                    "message": "an mcp_tool handler names a server that is not a Custom MCP "
                    f"integration on the agent: {', '.join(sorted(names))}",
                    "servers": sorted(names),
                    "issues": [i.to_json() for i in unknown],
                },
                issues=unknown,
            )
    return Validation(document=document)


def parse_document(
    data: Any,
    *,
    known_mcp_servers: Iterable[str] | None = None,
    stored_headers: StoredHeaders | None = None,
    allow_http: bool = False,
) -> HooksDocument:
    """The validated document; raises :class:`DocumentError` with PUT's error body."""
    result = validate_document(
        data,
        known_mcp_servers=known_mcp_servers,
        stored_headers=stored_headers,
        allow_http=allow_http,
    )
    if result.error is not None:
        raise DocumentError(result.error)
    assert result.document is not None
    return result.document


# -- the walk -------------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _unknown_fields(
    obj: dict[str, Any], allowed: frozenset[str], path: str, issues: list[Issue], what: str
) -> None:
    for key in obj:
        if key not in allowed:
            issues.append(
                Issue(
                    _join(path, key),
                    f"unknown field {key!r} on {what} (allowed: {', '.join(sorted(allowed))})",
                )
            )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_document(
    data: Any, issues: list[Issue], stored: StoredHeaders, allow_http: bool
) -> dict[str, Any]:
    """Append every violation to ``issues``; return the document with secrets resolved."""
    if not isinstance(data, dict):
        issues.append(Issue("", f"the hooks document must be an object, not {_type_name(data)}"))
        return {}
    _unknown_fields(data, _TOP_FIELDS, "", issues, "the document")
    if "hooks" not in data:
        issues.append(Issue("hooks", "required"))
        return {}
    hooks = data["hooks"]
    if not isinstance(hooks, dict):
        issues.append(Issue("hooks", f"must be an object, not {_type_name(hooks)}"))
        return {}
    resolved: dict[str, Any] = {}
    for event, groups in hooks.items():
        path = f"hooks.{event}"
        if event not in RUNBEAR_EVENTS:
            issues.append(
                Issue(
                    path,
                    f"unknown event {event!r}; Runbear runs {', '.join(RUNBEAR_EVENTS)}",
                )
            )
            continue
        if not isinstance(groups, list):
            issues.append(
                Issue(path, f"must be an array of matcher groups, not {_type_name(groups)}")
            )
            continue
        count = sum(
            len(g["hooks"])
            for g in groups
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
        )
        if count > MAX_HANDLERS_PER_EVENT:
            issues.append(
                Issue(
                    path,
                    f"at most {MAX_HANDLERS_PER_EVENT} handlers per event across all groups "
                    f"({count} given)",
                )
            )
        resolved[event] = [
            _check_group(event, group, f"{path}[{g}]", issues, stored, allow_http)
            for g, group in enumerate(groups)
        ]
    return {"hooks": resolved}


def _check_group(
    event: str,
    group: Any,
    path: str,
    issues: list[Issue],
    stored: StoredHeaders,
    allow_http: bool,
) -> dict[str, Any]:
    if not isinstance(group, dict):
        issues.append(Issue(path, f"a matcher group must be an object, not {_type_name(group)}"))
        return {}
    _unknown_fields(group, _GROUP_FIELDS, path, issues, "a matcher group")
    out: dict[str, Any] = {}
    if "matcher" in group:
        matcher = group["matcher"]
        if matcher is not None and not isinstance(matcher, str):
            issues.append(Issue(f"{path}.matcher", f"must be a string, not {_type_name(matcher)}"))
        else:
            out["matcher"] = matcher
            if matcher is not None and event not in ("UserPromptSubmit", "Stop"):
                try:
                    compile_matcher(matcher)
                except MatcherError as exc:
                    issues.append(Issue(f"{path}.matcher", str(exc)))
    if "hooks" not in group:
        issues.append(Issue(f"{path}.hooks", "required"))
        return out
    handlers = group["hooks"]
    if not isinstance(handlers, list):
        issues.append(
            Issue(f"{path}.hooks", f"must be an array of handlers, not {_type_name(handlers)}")
        )
        return out
    out["hooks"] = [
        _check_handler(event, h, f"{path}.hooks[{i}]", issues, stored, allow_http)
        for i, h in enumerate(handlers)
    ]
    return out


def _check_handler(
    event: str,
    handler: Any,
    path: str,
    issues: list[Issue],
    stored: StoredHeaders,
    allow_http: bool,
) -> dict[str, Any]:
    if not isinstance(handler, dict):
        issues.append(Issue(path, f"a handler must be an object, not {_type_name(handler)}"))
        return {}
    kind = handler.get("type")
    if "type" not in handler:
        issues.append(Issue(f"{path}.type", "required: http or mcp_tool"))
        return {}
    if kind not in HANDLER_TYPES:
        issues.append(
            Issue(
                f"{path}.type",
                f"unsupported handler type {kind!r}: Runbear runs http and mcp_tool handlers "
                "(no shell commands run on its workers)",
            )
        )
        return {}
    out = dict(handler)
    if kind == "http":
        _unknown_fields(handler, _HTTP_FIELDS, path, issues, "an http handler")
        url = _check_url(handler, path, issues, allow_http)
        if "headers" in handler:
            out["headers"] = _check_headers(handler["headers"], url, path, issues, stored)
    else:
        _unknown_fields(handler, _MCP_FIELDS, path, issues, "an mcp_tool handler")
        for key in ("server", "tool"):
            if key not in handler:
                issues.append(Issue(f"{path}.{key}", "required"))
            elif not isinstance(handler[key], str) or not handler[key]:
                issues.append(
                    Issue(f"{path}.{key}", f"must be a non-empty string, not {handler[key]!r}")
                )
        if "input" in handler and not isinstance(handler["input"], dict):
            issues.append(
                Issue(f"{path}.input", f"must be an object, not {_type_name(handler['input'])}")
            )
    if "timeout" in handler:
        timeout = handler["timeout"]
        integral = isinstance(timeout, int) or (isinstance(timeout, float) and timeout.is_integer())
        if isinstance(timeout, bool) or not integral:
            issues.append(
                Issue(f"{path}.timeout", f"must be an integer number of seconds, not {timeout!r}")
            )
        elif not MIN_TIMEOUT <= timeout <= MAX_TIMEOUT:
            issues.append(
                Issue(
                    f"{path}.timeout",
                    f"must be between {MIN_TIMEOUT} and {MAX_TIMEOUT} seconds, not {timeout!r}",
                )
            )
        else:
            out["timeout"] = int(timeout)
    if "failClosed" in handler:
        value = handler["failClosed"]
        if event not in FAIL_CLOSED_EVENTS:
            # Rejected whatever its value, false included: the event always fails open.
            issues.append(
                Issue(
                    f"{path}.failClosed",
                    f"{event} cannot fail closed (it always fails open): failClosed is "
                    "rejected there, false included, and allowed on UserPromptSubmit and "
                    "PreToolUse only",
                )
            )
        elif not isinstance(value, bool):
            issues.append(
                Issue(f"{path}.failClosed", f"must be a boolean, not {_type_name(value)}")
            )
    return out


def _check_url(handler: dict[str, Any], path: str, issues: list[Issue], allow_http: bool) -> str:
    from urllib.parse import urlsplit

    if "url" not in handler:
        issues.append(Issue(f"{path}.url", "required"))
        return ""
    url = handler["url"]
    if not isinstance(url, str):
        issues.append(Issue(f"{path}.url", f"must be a string, not {_type_name(url)}"))
        return ""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        issues.append(Issue(f"{path}.url", f"not a valid URL: {exc}"))
        return url
    schemes = ("https", "http") if allow_http else ("https",)
    if any(c.isspace() for c in url) or not host:
        issues.append(Issue(f"{path}.url", f"not a valid URL: {url!r}"))
    elif parts.scheme.lower() not in schemes:
        issues.append(Issue(f"{path}.url", f"must be an https URL (scheme {parts.scheme!r} given)"))
    return url


def _check_headers(
    headers: Any, url: str, path: str, issues: list[Issue], stored: StoredHeaders
) -> dict[str, Any]:
    hpath = f"{path}.headers"
    if not isinstance(headers, dict):
        issues.append(Issue(hpath, f"must be an object, not {_type_name(headers)}"))
        return {}
    if len(headers) > MAX_HEADERS:
        issues.append(Issue(hpath, f"at most {MAX_HEADERS} headers ({len(headers)} given)"))
    out: dict[str, Any] = {}
    for name, value in headers.items():
        vpath = f"{hpath}.{name}"
        if not _HEADER_NAME.fullmatch(name):
            issues.append(Issue(vpath, f"{name!r} is not a valid header name"))
            continue
        if name.lower() in FORBIDDEN_HEADERS:
            issues.append(
                Issue(
                    vpath,
                    f"{name} cannot be overridden (content-type, content-length, host and "
                    "x-runbear-hook-event are set by Runbear)",
                )
            )
            continue
        if not isinstance(value, str):
            issues.append(Issue(vpath, f"must be a string, not {_type_name(value)}"))
            continue
        if value == REDACTED:
            kept = stored.get((url, name.lower()))
            if kept is None:
                issues.append(
                    Issue(
                        vpath,
                        f"{REDACTED} keeps the value stored for this URL and header, and none "
                        "is stored: send the real value",
                    )
                )
                continue
            value = kept
        if "\r" in value or "\n" in value:
            issues.append(Issue(vpath, "a header value cannot contain a line break"))
            continue
        out[name] = value
    return out
