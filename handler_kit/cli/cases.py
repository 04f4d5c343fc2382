"""``handler-kit test CASES...``: run policy test cases (case files, or folders holding
``hookcases_*`` files) against a target and report them.

The target is one of ``--app MODULE:ATTR`` (in process), ``--url URL`` (a running server; the
token from ``--token`` or the client token variable) or ``--document HOOKS.json`` (a Runbear
hooks document, run by the reference dispatcher as the runtime runs it). Without one, each file
must name its app (a mapping with ``app`` and ``cases``).

With ``--runtime claude-code|codex`` each case is played through the real agent (``--binary``,
else its command on PATH) with the app's hooks installed, and the verdict is what the agent
enforced (:mod:`handler_kit.playback`); a case the agent cannot be driven to is "not played".

Exit status: 0 when every case passes (cases not played included, unless ``--strict``), 1 when
one fails (or gets no answer), 2 for a usage problem: bad options, an unreadable or malformed
case file, an app that cannot be loaded or installed, an invalid document, no agent.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from handler_kit.cli.dispatch import (
    UsageError,
    _expand_document_headers,
    _NotJson,
    _pairs,
    _read_json,
    expand_env,
)
from handler_kit.config import client_token, setting_for

if TYPE_CHECKING:
    from handler_kit.cases import CaseFile, CaseResult, Target


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "cases",
        nargs="+",
        metavar="CASES",
        help="case files (.json, .jsonl, .yaml, .yml) or folders (their hookcases_* files)",
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--app", metavar="MODULE:ATTR", help="run a HookApp in process")
    target.add_argument("--url", metavar="URL", help="a running server's base URL")
    target.add_argument(
        "--document",
        metavar="HOOKS.json",
        help="a Runbear hooks document, run through the reference dispatcher",
    )
    parser.add_argument(
        "--runtime",
        choices=("claude-code", "codex"),
        help="play each case through this real agent (with --app, or each file's app)",
    )
    parser.add_argument(
        "--binary",
        metavar="PATH",
        help="with --runtime: the agent's executable (default: claude or codex on PATH)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="with --runtime: a case that cannot be played fails the run",
    )
    token = setting_for("client", "token")
    parser.add_argument(
        "--token",
        default=None,
        help=f"with --url: {token.describe()}",
    )
    parser.add_argument("--ca-file", metavar="PEM", help="also trust this CA (test certificates)")
    parser.add_argument(
        "--allow-private",
        action="store_true",
        help="with --document: let http handlers call private/loopback addresses and http:// "
        "URLs (local tests only: Runbear refuses both)",
    )
    parser.add_argument(
        "--mcp-server",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="with --document: a Custom MCP server, its name in the document and its URL",
    )
    parser.add_argument(
        "--mcp-header",
        action="append",
        default=[],
        metavar="NAME=HEADER:VALUE",
        help="with --document: a header sent to MCP server NAME ($VARS are expanded)",
    )
    parser.add_argument(
        "--format", choices=("text", "junit"), default="text", help="the report (default: text)"
    )
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="write the report there instead (with --format junit the text report still "
        "goes to the terminal)",
    )


def run(args: argparse.Namespace) -> int:
    from handler_kit.cases import CaseFileError, find_case_files, load_case_file

    try:
        _check_runtime_options(args)
        paths = find_case_files(args.cases)
        if not paths:
            raise UsageError(f"no case files in {', '.join(args.cases)}")
        try:
            files = [load_case_file(path) for path in paths]
        except CaseFileError as exc:
            raise UsageError(str(exc)) from None
        if args.runtime:
            return _run_runtime(args, files)
        if args.document and any(case.handler for f in files for case in f.cases):
            raise UsageError("a case names a 'handler': with --document, the document routes")
        if not (args.app or args.url or args.document):
            unnamed = [str(f.path) for f in files if not f.app]
            if unnamed:
                raise UsageError(
                    f"no target for {unnamed[0]}: give --app, --url or --document, or an "
                    "'app' key in the file"
                )
        results = _run(args, files)
        _report(args, results)
    except UsageError as exc:
        sys.stderr.write(f"handler-kit: {exc}\n")
        return 2
    return 0 if all(r.passed for r in results) else 1


def _check_runtime_options(args: argparse.Namespace) -> None:
    if args.runtime is None:
        for option, value in (("--binary", args.binary), ("--strict", args.strict)):
            if value:
                raise UsageError(f"{option} applies to --runtime")
    elif args.url or args.document:
        other = "--url" if args.url else "--document"
        raise UsageError(f"--runtime plays cases with an app's hooks: use --app, not {other}")


def _run_runtime(args: argparse.Namespace, files: list[CaseFile]) -> int:
    """Every case played through the agent; the same reports, the exit status of ``run``."""
    import shutil

    from handler_kit.agents.runner import InstallFailed
    from handler_kit.playback import AgentNotFound, Player, find_agent

    unnamed = [str(f.path) for f in files if not (args.app or f.app)]
    if unnamed:
        raise UsageError(f"no app for {unnamed[0]}: give --app, or an 'app' key in the file")
    try:
        command = find_agent(args.runtime, args.binary, shutil.which)
    except AgentNotFound as exc:
        raise UsageError(str(exc)) from None
    player = Player(
        args.runtime, command, Path.home() / ".cache" / "handler-kit" / "runs", Path.cwd()
    )
    results: list[CaseResult] = []
    for case_file in files:
        app = args.app or case_file.app
        assert app is not None
        try:
            results.extend(player.play_file(case_file, app))
        except InstallFailed as exc:
            raise UsageError(f"{case_file.path}: {exc}") from None
    _report(args, results)
    failing = [r for r in results if r.failed or (args.strict and r.verdict == "not_played")]
    return 1 if failing else 0


def _run(args: argparse.Namespace, files: list[CaseFile]) -> list[CaseResult]:
    from handler_kit.cases import run_file

    results: list[CaseResult] = []
    if args.app or args.url or args.document:
        target = _shared_target(args)
        try:
            for case_file in files:
                results.extend(run_file(case_file, target))
        finally:
            target.close()
        return results
    targets: dict[str, Target] = {}
    try:
        for case_file in files:
            assert case_file.app is not None
            if case_file.app not in targets:
                targets[case_file.app] = _app_target(case_file.app)
            results.extend(run_file(case_file, targets[case_file.app]))
    finally:
        for target in targets.values():
            target.close()
    return results


def _app_target(spec: str) -> Target:
    from handler_kit.cases import ClientTarget
    from handler_kit.core.loader import LoadError, load_app

    try:
        return ClientTarget.for_app(load_app(spec))
    except LoadError as exc:
        raise UsageError(str(exc)) from None


def _shared_target(args: argparse.Namespace) -> Target:
    from handler_kit.cases import ClientTarget, DocumentTarget

    if args.app:
        return _app_target(args.app)
    if args.url:
        import httpx

        token = expand_env(args.token) if args.token else client_token()
        try:
            scheme = httpx.URL(args.url).scheme
            if scheme not in ("http", "https"):
                raise ValueError(f"the scheme is {scheme or 'missing'}: use http:// or https://")
            target = ClientTarget.for_url(args.url, token=token, ca_file=args.ca_file)
        except (httpx.InvalidURL, ValueError) as exc:
            # the reason names the part at fault, never the URL (it can hold a password)
            raise UsageError(f"--url is not a server URL: {exc}") from None
        _refuse_if_token_wanted(target, given=token is not None)
        return target
    from handler_kit.dispatcher import Dispatcher, DocumentError

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
    try:
        dispatcher = Dispatcher(
            document,
            mcp_servers=servers,
            mcp_headers=headers,
            allow_private=args.allow_private,
            ca_file=args.ca_file,
        )
    except DocumentError as exc:
        raise UsageError(f"{args.document}: {exc}") from None
    return DocumentTarget(dispatcher)


def _refuse_if_token_wanted(target: Target, *, given: bool) -> None:
    """Ask the server once whether it takes the token (or wants one when none is ``given``),
    with an empty body no handler runs on, so that a missing or wrong token is one line up
    front rather than a 401 per case."""
    import httpx

    from handler_kit.cases import ClientTarget

    assert isinstance(target, ClientTarget)
    try:
        status = target.client._http.post("/hooks", content=b"{}").status_code
    except httpx.HTTPError:
        return  # unreachable: each case reports it with its own error
    if status == 401:
        target.close()
        variable = setting_for("client", "token").env
        tokens = setting_for("server", "tokens").env
        if given:
            raise UsageError(
                f"the server refused the bearer token: --token or {variable} must hold one "
                f"of the tokens in the server's {tokens}"
            )
        raise UsageError(
            f"the server wants a bearer token and none was given: pass --token or set "
            f"{variable} (to one of the tokens in the server's {tokens})"
        )


def _report(args: argparse.Namespace, results: list[CaseResult]) -> None:
    from handler_kit.cases import junit_report, text_report

    text = text_report(results)
    report = junit_report(results) if args.format == "junit" else text.encode()
    if args.output:
        try:
            Path(args.output).write_bytes(report)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        if args.format == "junit":
            sys.stdout.write(text)
    else:
        sys.stdout.buffer.write(report)
    sys.stdout.flush()
