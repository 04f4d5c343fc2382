"""``handler-kit document MODULE:ATTR``: print the hooks document for a HookApp.

Runbear (default)::

    handler-kit document example_servers.refund_gate:app --base-url https://hooks.example.com
    handler-kit document example_servers.refund_gate:app --transport mcp --mcp-server refund-gate

Claude Code (``--format claude-code``) prints the ``hooks`` block of a settings.json, with http
hooks on ``--base-url`` or, with ``--command``, command hooks running ``handler-kit command``;
with ``--transport mcp --mcp-server NAME``, an object holding ``hooks`` (``mcp_tool`` hooks on
server NAME) and the ``mcpServers`` entry for NAME (``.mcp.json``).

The document goes to stdout (JSON), warnings and errors to stderr; exit status 1 when the app
cannot be written as a document (the message lists every reason), so a deploy script stops.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="MODULE:ATTR", help="the HookApp to document")
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="the server's public base URL (https://...): http handlers call URL/hooks/NAME; "
        "the MCP endpoint is URL/mcp",
    )
    parser.add_argument(
        "--transport",
        choices=("http", "mcp"),
        default="http",
        help="the hooks' transport: http (webhook routes, default) or mcp (mcp_tool hooks "
        "calling the server's MCP tools; Runbear and Claude Code)",
    )
    parser.add_argument(
        "--mcp-server",
        metavar="NAMESPACE",
        help="with --transport mcp: the name of the MCP server at URL/mcp (Runbear: the "
        "agent's Custom MCP integration's namespace; Claude Code: its mcpServers key)",
    )
    parser.add_argument(
        "--format",
        choices=("runbear", "claude-code"),
        default="runbear",
        help="runbear: a Runbear hooks document (default); "
        "claude-code: the hooks block of a settings.json",
    )
    parser.add_argument(
        "--command",
        action="store_true",
        help="with --format claude-code: command hooks (handler-kit command) instead of http",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse handlers on events Runbear does not run instead of skipping them",
    )


def run(args: argparse.Namespace) -> int:
    from urllib.parse import urlsplit

    from handler_kit.core.loader import LoadError, load_app

    if args.base_url is not None:
        # the user's typo, said as such, not a generated document found invalid later
        parts = urlsplit(args.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return _fail(
                "base URL must be an http(s) URL like https://hooks.example.com, got "
                f"{args.base_url!r}"
            )
    try:
        hook_app = load_app(args.target)
    except LoadError as exc:
        return _fail(str(exc))
    if args.format == "claude-code":
        return _claude_code(hook_app, args)
    if args.command:
        return _fail("--command applies to --format claude-code (Runbear runs no commands)")
    return _runbear(hook_app, args)


def _runbear(hook_app: Any, args: argparse.Namespace) -> int:
    from handler_kit.runbear.document import validate_document
    from handler_kit.runbear.generate import TOKEN_VARIABLE, GenerateError, runbear_document

    try:
        generated = runbear_document(
            hook_app,
            transport=args.transport,
            base_url=args.base_url,
            mcp_server=args.mcp_server,
            strict=args.strict,
        )
    except GenerateError as exc:
        return _fail(str(exc))
    for warning in generated.warnings:
        _warn(warning)
    base_url = (args.base_url or "").rstrip("/")
    plain_http = base_url.lower().startswith("http://")
    # A generated document that Runbear's own rules refuse is a bug here: never print one.
    checked = validate_document(generated.document, allow_http=plain_http)
    if checked.error is not None:
        return _fail(f"generated an invalid document (a handler-kit bug): {checked.error}")
    if plain_http:
        _warn(
            f"{base_url} is not https: Runbear calls https URLs on public addresses only; this "
            "document suits the reference dispatcher (handler-kit dispatch --allow-private)"
        )
    if args.transport == "http":
        _note(
            f"headers hold the placeholder ${{{TOKEN_VARIABLE}}}: replace it with a server "
            f"token, e.g. pipe through envsubst '${TOKEN_VARIABLE}'"
        )
    elif base_url:
        _note(
            f"add {base_url}/mcp to the agent as a Custom MCP integration named "
            f"{args.mcp_server!r}, with the header Authorization: Bearer <a server token>"
        )
    _print_json(generated.document)
    return 0


def _claude_code(hook_app: Any, args: argparse.Namespace) -> int:
    try:
        from handler_kit.claude_code.settings import claude_code_hooks, claude_code_mcp_server
    except ImportError as exc:
        return _fail(f"--format claude-code is not available in this install: {exc}")
    if args.transport == "mcp":
        if args.command:
            return _fail("--command and --transport mcp are two kinds of hook: choose one")
        if not args.base_url or not args.mcp_server:
            return _fail(
                "--transport mcp needs --base-url (the server; its MCP endpoint is URL/mcp) and "
                "--mcp-server NAME (the name Claude Code gives that server)"
            )
    try:
        hooks = claude_code_hooks(
            hook_app,
            args.target,
            base_url=args.base_url,
            command=args.command,
            mcp_server=args.mcp_server if args.transport == "mcp" else None,
            warn=_warn,
        )
    except ValueError as exc:
        return _fail(str(exc))
    if args.transport != "mcp":
        _print_json(hooks)
        return 0
    # mcp_tool hooks call a server Claude Code must know: its entry goes in .mcp.json
    _note(
        'put "hooks" into .claude/settings.json and "mcpServers" into .mcp.json; Claude Code '
        "sends $HANDLER_KIT_TOKEN (set it where it runs, to one of the server's "
        "HANDLER_KIT_TOKENS); an mcp_tool hook whose server is down or not connected lets the "
        "call run (handler-kit install --via URL writes forwarders that fail closed)"
    )
    _print_json(
        {"hooks": hooks, "mcpServers": {args.mcp_server: claude_code_mcp_server(args.base_url)}}
    )
    return 0


def _print_json(value: Any) -> None:
    try:
        print(json.dumps(value, indent=2, ensure_ascii=False))
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the reader has what it wanted; exit quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _note(message: str) -> None:
    print(f"handler-kit document: {message}", file=sys.stderr)


def _warn(message: str) -> None:
    print(f"handler-kit document: warning: {message}", file=sys.stderr)


def _fail(message: str) -> int:
    print(f"handler-kit document: error: {message}", file=sys.stderr)
    return 1
