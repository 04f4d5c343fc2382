"""``handler-kit install MODULE:ATTR --settings PATH``: write a HookApp's hooks into a runtime's
settings file (Claude Code, Codex, Posit Assistant).

The work is :func:`handler_kit.claude_code.settings.install`; this module is its command line:
the options, the import check, and one line on stderr for the outcome (exit 0) or the reason
it refused (exit 1).

The import check runs the app's import the way the installed command hook will: this
interpreter with the entries' flags (``-I``), in the project directory, in a fresh process. An
app that does not import there would be a hook every runtime reads as "proceed", so nothing is
written; for ``--via``, handler-kit's forwarder is checked the same way.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from handler_kit.claude_code.settings import (
    CLAUDE_CODE,
    PYTHON_FLAGS,
    RUNTIMES,
    SettingsError,
    install,
    project_dir_of,
)
from handler_kit.core.loader import LoadError, load_app

# Run by the import check with the entries' flags (python -I): the project folder goes on
# sys.path last, as ``handler-kit command`` puts it; the loader's one-line error on stderr,
# exit 1. A forwarder imports no app: only handler-kit itself is checked.
_IMPORT_CHECK = """\
import os, sys
sys.path.append(os.getcwd())
from handler_kit.core.loader import LoadError, load_app
try:
    load_app(sys.argv[1])
except LoadError as exc:
    sys.stderr.write(f"{exc}\\n")
    sys.exit(1)
"""
_FORWARD_CHECK = "import handler_kit.command.forward"
IMPORT_CHECK_TIMEOUT = 60.0


def add_install_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``handler-kit install``."""
    parser.add_argument("target", metavar="MODULE:ATTR", help="the HookApp, e.g. myhooks:app")
    parser.add_argument(
        "--settings",
        required=True,
        metavar="PATH",
        help="the settings file, e.g. .claude/settings.json, .codex/hooks.json, "
        ".posit/assistant/settings.json (created if missing); its project is the folder above "
        "the runtime's settings folder, else the current directory",
    )
    parser.add_argument(
        "--runtime",
        choices=RUNTIMES,
        default=CLAUDE_CODE,
        help="the runtime that reads the file: its dialect and project directory "
        "(default claude-code)",
    )
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument(
        "--base-url",
        metavar="URL",
        help="install http hooks on URL/hooks/NAME (SessionStart and Setup stay commands)",
    )
    kind.add_argument(
        "--via",
        metavar="URL",
        help="install command hooks that forward to the server at URL (handler-kit forward), "
        "which a fail_closed gate's entry answers with its safe decision when the server "
        "cannot",
    )
    kind.add_argument(
        "--command",
        action="store_true",
        help="install command hooks (the default without --base-url or --via)",
    )
    parser.add_argument(
        "--fail-closed",
        action="store_true",
        help="with --via: every gate's forwarder fails closed, not only fail_closed ones",
    )
    parser.add_argument(
        "--per-handler",
        action="store_true",
        help="command hooks: one entry per handler (a tool call starts one process per "
        "matching handler), the layout of earlier releases; default: one entry per event, "
        "running every matching handler in one process",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the change as a unified diff; write nothing"
    )
    parser.add_argument(
        "--follow-symlink",
        action="store_true",
        help="write through a settings path whose symbolic links lead out of its project "
        "(refused without this option)",
    )


def run_install(args: argparse.Namespace) -> int:
    """``handler-kit install``: exit 0 when installed (or already there), 1 on any error."""
    if args.fail_closed and args.via is None:
        return _fail("--fail-closed applies to --via (forwarders to a server)")
    settings = os.path.abspath(args.settings)
    project = project_dir_of(settings, args.runtime)
    try:
        import_check(args.target, project, forward=args.via is not None)
        _enter(project)  # where the app imports from, as in the hook
        app = load_app(args.target)
        message = install(
            app,
            args.target,
            settings,
            base_url=args.base_url,
            command=args.command,
            via=args.via,
            fail_closed=args.fail_closed,
            runtime=args.runtime,
            project_dir=project,
            dry_run=args.dry_run,
            follow_symlink=args.follow_symlink,
            per_handler=args.per_handler,
        )
    except (LoadError, SettingsError, ValueError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write {args.settings}: {exc}")
    sys.stderr.write(f"handler-kit: {message}\n")
    return 0


def import_check(target: str, project: str, *, forward: bool = False) -> None:
    """Import ``target`` with this interpreter and the entries' flags in ``project`` in a new
    process (only handler-kit's forwarder, with ``forward``); ``LoadError`` with the one-line
    reason when it does not import."""
    script = [_FORWARD_CHECK] if forward else [_IMPORT_CHECK, target]
    try:
        done = subprocess.run(
            [sys.executable, *PYTHON_FLAGS, "-c", *script],
            cwd=project,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=IMPORT_CHECK_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise LoadError(
            f"importing {target} in {project} took over {IMPORT_CHECK_TIMEOUT:g} s; the hook "
            "would time out"
        ) from None
    except OSError as exc:
        raise LoadError(f"cannot run {sys.executable} in {project}: {exc}") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        reason = lines[-1] if lines else f"exit {done.returncode}"
        what = "handler-kit" if forward else "it"
        flags = " ".join(PYTHON_FLAGS)
        raise LoadError(
            f"{reason} (importing {what} as the hook will: {sys.executable} {flags}, in {project})"
        )


def _enter(project: str) -> None:
    try:
        os.chdir(project)
    except OSError as exc:
        raise ValueError(f"cannot use the project directory {project}: {exc.strerror}") from None


def _fail(message: str) -> int:
    sys.stderr.write(f"handler-kit install: {message}\n")
    return 1
