"""``handler-kit validate``, ``dispatch`` and ``send``: the reference runtime from a shell.

- ``validate HOOKS.json [--known-mcp-server NAME ...]`` prints what Runbear's PUT would answer:
  ``{"error": "invalid_hooks", "issues": [...]}`` (every violation at once) or
  ``{"error": "unknown_mcp_server", ...}`` and exits 1, or ``{"ok": true}`` and exits 0; with
  ``--as-get``, a valid document is printed as ``GET`` would return it after that ``PUT``.
- ``dispatch --document HOOKS.json --events EVENTS.jsonl`` runs the events of one thread, in
  order, through the reference dispatcher and prints one outcome per event, one JSON line each.
- ``send URL --event FILE`` posts one event to one endpoint as Runbear would and prints the
  response and how the runtime reads it.

Header values (the document's http headers, ``--mcp-header`` values, ``--token``) may name
environment variables as ``$NAME`` or ``${NAME}``, so a committed hooks file can say
``"Authorization": "Bearer $HANDLER_KIT_TOKEN"`` without holding the secret. An unset variable is
an error, never an empty string sent silently.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from handler_kit.config import CLIENT_TOKEN_VARIABLE, ClientConfig, environment, setting_for

_ENV_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class UsageError(Exception):
    """A command-line problem: reported on stderr with exit status 2."""


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace ``$NAME``/``${NAME}`` with the environment variable; unset -> UsageError."""
    env = environment() if environ is None else environ

    def sub(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in env:
            raise UsageError(f"environment variable ${name} is not set")
        return env[name]

    return _ENV_REF.sub(sub, value)


def _read_json(path: str, what: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _NotJson(str(exc)) from None


class _NotJson(Exception):
    pass


def _print(obj: Any, *, indent: int | None = None) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=indent) + "\n")
    sys.stdout.flush()


def _fail(exc: UsageError) -> int:
    sys.stderr.write(f"handler-kit: {exc}\n")
    return 2


# -- validate -------------------------------------------------------------------------------


def add_validate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("document", metavar="HOOKS.json", help="the hooks document ('-': stdin)")
    parser.add_argument(
        "--known-mcp-server",
        action="append",
        default=None,
        metavar="NAME",
        help="a Custom MCP server on the agent (repeat); when given, an mcp_tool handler naming "
        "another server is unknown_mcp_server, as on PUT",
    )
    parser.add_argument(
        "--as-get",
        action="store_true",
        help="for a valid document, print it as GET /v1/agents/{id}/hooks returns it after "
        'this PUT (every http header value <redacted>) instead of {"ok": true}',
    )


def run_validate(args: argparse.Namespace) -> int:
    from handler_kit.runbear.document import validate_document

    try:
        data = _read_json(args.document, "hooks document")
    except UsageError as exc:
        return _fail(exc)
    except _NotJson as exc:
        _print(
            {
                "error": "invalid_hooks",
                "issues": [{"path": "", "message": f"the document is not valid JSON: {exc}"}],
            }
        )
        return 1
    result = validate_document(data, known_mcp_servers=args.known_mcp_server)
    if result.error is not None:
        _print(result.error)  # exactly what the PUT answers: any advice goes to stderr
        if any(_plain_http(issue) for issue in result.error.get("issues", ())):
            sys.stderr.write(
                "handler-kit validate: Runbear calls https URLs only; to run this document "
                "against a local http:// server, use handler-kit dispatch --allow-private "
                "(local tests only)\n"
            )
        return 1
    if args.as_get and result.document is not None:
        _print(result.document.to_json(redacted=True), indent=2)
    else:
        _print({"ok": True})
    return 0


def _plain_http(issue: Any) -> bool:
    """True for the issue of an http handler's ``http://`` URL."""
    message = issue.get("message", "") if isinstance(issue, dict) else ""
    return "https" in message and "'http'" in message


# -- dispatch -------------------------------------------------------------------------------


def add_dispatch_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--document", required=True, metavar="HOOKS.json", help="the Runbear hooks document"
    )
    parser.add_argument(
        "--events",
        required=True,
        metavar="EVENTS.jsonl",
        help="hook inputs of one thread, one JSON object per line, in order ('-': stdin)",
    )
    parser.add_argument(
        "--mcp-server",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="a Custom MCP server: its name in the document and its Streamable HTTP URL",
    )
    parser.add_argument(
        "--mcp-header",
        action="append",
        default=[],
        metavar="NAME=HEADER:VALUE",
        help="a header sent to MCP server NAME, e.g. ctx=Authorization:'Bearer $TOKEN' "
        "($VARS are expanded)",
    )
    parser.add_argument(
        "--allow-private",
        action="store_true",
        help="let http handlers call private/loopback addresses and http:// URLs "
        "(local tests only: Runbear refuses both)",
    )
    parser.add_argument("--ca-file", metavar="PEM", help="also trust this CA (test certificates)")


def _pairs(values: list[str], flag: str) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise UsageError(f"{flag} expects NAME=VALUE, got {value!r}")
        pairs.append((name, rest))
    return pairs


def _expand_document_headers(document: Any) -> None:
    """Expand ``$VARS`` in every http handler's header values, in place."""
    if not isinstance(document, dict) or not isinstance(document.get("hooks"), dict):
        return
    for groups in document["hooks"].values():
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                headers = handler.get("headers") if isinstance(handler, dict) else None
                if isinstance(headers, dict):
                    for key, value in headers.items():
                        if isinstance(value, str):
                            headers[key] = expand_env(value)


def run_dispatch(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from handler_kit.dispatcher import Dispatcher, DocumentError

    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
    try:
        servers = dict(_pairs(args.mcp_server, "--mcp-server"))
        headers: dict[str, dict[str, str]] = {}
        for name, spec in _pairs(args.mcp_header, "--mcp-header"):
            header, sep, value = spec.partition(":")
            if not sep or not header.strip():
                raise UsageError(f"--mcp-header expects NAME=HEADER:VALUE, got {name}={spec!r}")
            headers.setdefault(name, {})[header.strip()] = expand_env(value.strip())
        try:
            document = _read_json(args.document, "hooks document")
        except _NotJson as exc:
            raise UsageError(f"{args.document} is not valid JSON: {exc}") from None
        _expand_document_headers(document)
        events = list(_read_events(args.events))
    except UsageError as exc:
        return _fail(exc)
    try:
        dispatcher = Dispatcher(
            document,
            mcp_servers=servers,
            mcp_headers=headers,
            allow_private=args.allow_private,
            ca_file=args.ca_file,
        )
    except DocumentError as exc:
        _print(exc.error)
        return 1

    async def run() -> int:
        async with dispatcher:
            for line_number, event in events:
                try:
                    outcome = await dispatcher.dispatch(event)
                except ValueError as exc:
                    sys.stderr.write(f"handler-kit: {args.events}:{line_number}: {exc}\n")
                    return 2
                sys.stdout.write(outcome.to_json_line() + "\n")
                sys.stdout.flush()
        return 0

    return asyncio.run(run())


def _read_events(path: str) -> list[tuple[int, dict[str, Any]]]:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read events {path}: {exc.strerror or exc}") from None
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{path}:{number}: not a JSON object: {exc}") from None
        if not isinstance(event, dict):
            raise UsageError(f"{path}:{number}: a hook input must be a JSON object")
        events.append((number, event))
    return events


# -- send -----------------------------------------------------------------------------------


def add_send_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", metavar="URL", help="the endpoint, e.g. https://host/hooks/name")
    parser.add_argument(
        "--event", required=True, metavar="FILE", help="one hook input, JSON ('-': stdin)"
    )
    token = setting_for("client", "token")
    parser.add_argument(
        "--token",
        default=ClientConfig.from_env().token,
        help=token.describe(),
    )
    parser.add_argument("--ca-file", metavar="PEM", help="also trust this CA (test certificates)")
    parser.add_argument(
        "--timeout",
        type=int,
        default=None,
        help="seconds, 1..10 (default: the event's, 5 on SessionStart and 3 elsewhere)",
    )


def _no_token() -> str:
    """What send says when it has no token to send: where one comes from."""
    tokens = setting_for("server", "tokens").env
    return (
        f"no bearer token: set {CLIENT_TOKEN_VARIABLE} (one of the server's {tokens}) "
        "or pass --token"
    )


def run_send(args: argparse.Namespace) -> int:
    import asyncio

    from handler_kit.core.events import RUNBEAR_EVENTS
    from handler_kit.dispatcher import Dispatcher, DocumentError

    try:
        try:
            event = _read_json(args.event, "event")
        except _NotJson as exc:
            raise UsageError(f"{args.event} is not valid JSON: {exc}") from None
        if not isinstance(event, dict):
            raise UsageError("the event must be a JSON object")
        name = event.get("hook_event_name")
        if name not in RUNBEAR_EVENTS:
            raise UsageError(
                f"hook_event_name {name!r} is not one of Runbear's events: "
                f"{', '.join(RUNBEAR_EVENTS)}"
            )
        handler: dict[str, Any] = {"type": "http", "url": args.url}
        if args.token:
            handler["headers"] = {"Authorization": f"Bearer {expand_env(args.token)}"}
        else:
            sys.stderr.write(f"handler-kit send: {_no_token()}; sending without one\n")
        if args.timeout is not None:
            handler["timeout"] = args.timeout
        try:
            dispatcher = Dispatcher(
                {"hooks": {name: [{"hooks": [handler]}]}},
                allow_private=True,
                ca_file=args.ca_file,
            )
        except DocumentError as exc:
            issues = "; ".join(i["message"] for i in exc.error.get("issues", []))
            raise UsageError(issues or str(exc)) from None
    except UsageError as exc:
        return _fail(exc)

    outcome = dispatcher.dispatch_sync(event)
    report = outcome.handlers[0]
    notes = asyncio.run(_notes(args.url, name, outcome))
    if report.http_status == 401:
        tokens = setting_for("server", "tokens").env
        notes.insert(
            0,
            f"The server refused the request (401): {_no_token()}."
            if not args.token
            else f"The server refused the token (401): {CLIENT_TOKEN_VARIABLE} or --token must "
            f"hold one of the server's {tokens}.",
        )
    if report.error and "CERTIFICATE_VERIFY_FAILED" in report.error and not args.ca_file:
        notes.insert(
            0,
            "The server's certificate is not one this machine trusts: for a test or development "
            "certificate, pass its CA with --ca-file PEM (serve --dev-tls prints where its CA "
            "is).",
        )
    body: Any = None
    raw = report.http_body or b""
    if raw:
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw[:2000].decode("utf-8", "replace")
    _print(
        {
            "request": {"url": args.url, "event": name},
            "response": None
            if report.http_status is None
            else {"status": report.http_status, "body": body},
            "runtime": {
                "status": report.status,
                "error": report.error,
                "duration_ms": round(report.duration_ms, 1),
                "reading": {
                    k: v for k, v in outcome.to_json().items() if k not in ("event", "handlers")
                },
                "notes": notes,
            },
        },
        indent=2,
    )
    return 0 if report.status == "ok" else 1


async def _notes(url: str, event: str, outcome: Any) -> list[str]:
    """What a runtime would do differently from this local call, and why an answer reads
    the way it does."""
    from urllib.parse import urlsplit

    from handler_kit.dispatcher.http_call import RefusedAddress, public_address

    notes: list[str] = []
    parts = urlsplit(url)
    if parts.scheme != "https":
        notes.append("Runbear calls https URLs only: this URL would be refused.")
    try:
        await public_address(parts.hostname or "", parts.port or 443)
    except RefusedAddress as exc:
        notes.append(f"Runbear would refuse this address ({exc}); sent anyway for local testing.")
    output = outcome.handlers[0].output
    if output is None:
        if outcome.handlers[0].status == "ok":
            notes.append("No opinion: the operation proceeds as if the hook were not there.")
        else:
            notes.append(
                "A failure fails open (ignored) unless the handler is failClosed on "
                "UserPromptSubmit or PreToolUse, where it blocks or denies with a generic notice."
            )
        return notes
    if output.context and event in ("PreToolUse", "Stop"):
        notes.append(f"additionalContext is not injected on {event} (a decision event).")
    if output.decision == "ask":
        notes.append("ask is treated as deny: Runbear has no per-call approval prompt.")
    if output.decision == "defer":
        notes.append("defer is a CLI-only value and is ignored.")
    if output.decision == "block" and event == "SessionStart":
        notes.append("A block on SessionStart is ignored (context only).")
    if output.decision == "block" and event == "PostToolUse":
        notes.append("The tool already ran: the block reason is fed back to the model.")
    if output.decision == "block" and event == "Stop":
        notes.append("The reply is held and the agent continues with the reason, once per turn.")
    if output.updated_input is not None and outcome.decision == "deny":
        notes.append("updatedInput is dropped because the call is denied.")
    ignored = [*(output.extra or {}), *(f"hookSpecificOutput.{k}" for k in output.specific or {})]
    if ignored:
        notes.append(f"Accepted and ignored (Runbear does not read them): {', '.join(ignored)}.")
    if output.context and len(output.context) > 10_000:
        notes.append("The context is over 10,000 characters and is truncated with a marker.")
    return notes
