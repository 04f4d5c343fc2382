"""Generating a Runbear hooks document from a HookApp.

The document is derived from the handlers, never written by hand: one matcher group per handler
(the group's matcher is the handler's), the handler's timeout (whole seconds, rounded up) and
``failClosed`` where Runbear honours it. Two handler types, one per transport of the server:

- ``http``: ``POST {base_url}/hooks/{name}`` with an ``Authorization`` header holding the
  placeholder :data:`AUTHORIZATION_PLACEHOLDER` (fill it with ``envsubst '$HANDLER_KIT_TOKEN'``
  or paste the token; Runbear keeps header values in its vault, never in the document);
- ``mcp_tool``: the handler's MCP tool on the Custom MCP integration ``server``, with an
  ``input`` template mapping every field the tool declares to ``${field}``, so Runbear, which
  drops keys a tool does not declare and keys whose placeholder resolves to nothing, passes the
  whole hook input and nothing else.

A document Runbear would refuse is refused here, with every reason at once
(:class:`GenerateError`): more than 8 handlers on one event, or a timeout over 10 s. Handlers of
events Runbear does not run (Claude Code's other events) are left out with a warning, or refused
with ``strict=True``: an app written for both runtimes should still produce a Runbear document.
``failClosed`` is written only as ``true``, on a fail-closed handler of UserPromptSubmit or
PreToolUse: Runbear rejects the field on SessionStart, PostToolUse and Stop, ``false`` included.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from handler_kit.config import CLIENT_TOKEN_VARIABLE
from handler_kit.core.app import HookApp
from handler_kit.core.matchers import is_match_all
from handler_kit.core.names import MATCHERLESS_EVENTS, RUNBEAR_EVENTS
from handler_kit.core.vocabulary import Handler
from handler_kit.runbear.document import FAIL_CLOSED_EVENTS, MAX_HANDLERS_PER_EVENT, MAX_TIMEOUT

Transport = Literal["http", "mcp"]

TOKEN_VARIABLE = CLIENT_TOKEN_VARIABLE
# ${...} is Runbear's template syntax only inside mcp_tool inputs; in a header value it is
# literal text, so a document that still holds it fails auth loudly instead of silently.
AUTHORIZATION_PLACEHOLDER = f"Bearer ${{{TOKEN_VARIABLE}}}"
# Events whose matcher Runbear ignores: a group there carries no matcher.


class GenerateError(ValueError):
    """The app cannot be written as a Runbear hooks document; ``problems`` says why."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__(
            "cannot generate a Runbear hooks document:\n" + "\n".join(f"- {p}" for p in problems)
        )


@dataclass
class Generated:
    """A generated document and what was left out of it (one line per skipped handler)."""

    document: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def tool_input_fields(handler: Handler) -> list[str]:
    """The fields the handler's MCP tool declares, in the tool schema's order.

    The same list as the MCP tool schema of :mod:`handler_kit.server.mcp` (a test holds them
    together), computed from the model so that generating a document does not import the MCP SDK.
    """
    names = [name for name in handler.model.model_fields if name != "hook_event_name"]
    return ["hook_event_name", *names]


def timeout_seconds(handler: Handler) -> int:
    """The handler's timeout as Runbear's whole seconds, rounded up (never below 1)."""
    return max(1, math.ceil(handler.timeout - 1e-9))


def _common(handler: Handler) -> dict[str, Any]:
    out: dict[str, Any] = {"timeout": timeout_seconds(handler)}
    if handler.fail_closed and handler.event in FAIL_CLOSED_EVENTS:
        out["failClosed"] = True
    return out


def http_handler(
    handler: Handler, base_url: str, authorization: str = AUTHORIZATION_PLACEHOLDER
) -> dict[str, Any]:
    """The ``http`` handler object calling ``handler``'s webhook route."""
    return {
        "type": "http",
        "url": f"{base_url.rstrip('/')}/hooks/{handler.name}",
        "headers": {"Authorization": authorization},
        **_common(handler),
    }


def mcp_tool_handler(handler: Handler, server: str) -> dict[str, Any]:
    """The ``mcp_tool`` handler object calling ``handler``'s MCP tool on ``server``."""
    return {
        "type": "mcp_tool",
        "server": server,
        "tool": handler.name,
        "input": {name: f"${{{name}}}" for name in tool_input_fields(handler)},
        **_common(handler),
    }


def runbear_document(
    hook_app: HookApp,
    *,
    transport: Transport = "http",
    base_url: str | None = None,
    mcp_server: str | None = None,
    authorization: str = AUTHORIZATION_PLACEHOLDER,
    strict: bool = False,
) -> Generated:
    """The Runbear hooks document for ``hook_app``; raises :class:`GenerateError` if refused.

    ``transport="http"`` needs ``base_url`` (the server's public https URL);
    ``transport="mcp"`` needs ``mcp_server``, the namespace of the Custom MCP integration that
    points at ``{base_url}/mcp``.
    """
    problems: list[str] = []
    warnings: list[str] = []
    if transport == "http" and not base_url:
        problems.append("--base-url is required for http handlers (the server's https URL)")
    if transport == "mcp" and not mcp_server:
        problems.append(
            "--mcp-server is required for mcp_tool handlers: the namespace of the agent's "
            "Custom MCP integration that points at the server's /mcp endpoint"
        )
    if transport not in ("http", "mcp"):
        problems.append(f"unknown transport {transport!r}: use http or mcp")

    included: dict[str, list[Handler]] = {}
    for handler in hook_app.handlers:
        if handler.event not in RUNBEAR_EVENTS:
            message = (
                f"handler {handler.name!r} is on {handler.event}, which Runbear does not run "
                f"(it runs {', '.join(RUNBEAR_EVENTS)})"
            )
            if strict:
                problems.append(message)
            else:
                warnings.append(f"skipped: {message}")
            continue
        if handler.timeout > MAX_TIMEOUT:
            problems.append(
                f"handler {handler.name!r} has timeout={handler.timeout:g} s; Runbear allows at "
                f"most {MAX_TIMEOUT} s (lower it in the decorator)"
            )
        included.setdefault(handler.event, []).append(handler)
    for event, handlers in included.items():
        if len(handlers) > MAX_HANDLERS_PER_EVENT:
            names = ", ".join(h.name for h in handlers)
            problems.append(
                f"{event} has {len(handlers)} handlers ({names}); Runbear allows at most "
                f"{MAX_HANDLERS_PER_EVENT} per event (split the app or merge handlers)"
            )
    if problems:
        raise GenerateError(problems)

    hooks: dict[str, list[dict[str, Any]]] = {}
    for event in RUNBEAR_EVENTS:  # Runbear's order, for a stable, readable document
        for handler in included.get(event, []):
            if transport == "http":
                entry = http_handler(handler, base_url or "", authorization)
            else:
                entry = mcp_tool_handler(handler, mcp_server or "")
            group: dict[str, Any] = {}
            if event not in MATCHERLESS_EVENTS and not is_match_all(handler.matcher):
                group["matcher"] = handler.matcher
            group["hooks"] = [entry]
            hooks.setdefault(event, []).append(group)
    return Generated(document={"hooks": hooks}, warnings=warnings)
