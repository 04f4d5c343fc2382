"""``handler-kit install MODULE:ATTR --settings PATH``: write a HookApp's hooks into a Claude Code
settings file.

The work is :func:`handler_kit.claude_code.settings.install`; this module is its command line:
the options, and one line on stderr for the outcome (exit 0) or the reason it refused (exit 1).
"""

from __future__ import annotations

import argparse
import sys

from handler_kit.claude_code.settings import SettingsError, install
from handler_kit.core.loader import LoadError, load_app


def add_install_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``handler-kit install``."""
    parser.add_argument("target", metavar="MODULE:ATTR", help="the HookApp, e.g. myhooks:app")
    parser.add_argument(
        "--settings",
        required=True,
        metavar="PATH",
        help="the settings file, e.g. .claude/settings.json (created if missing)",
    )
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument(
        "--base-url",
        metavar="URL",
        help="install http hooks on URL/hooks/NAME (SessionStart and Setup stay commands)",
    )
    kind.add_argument(
        "--command",
        action="store_true",
        help="install command hooks (the default without --base-url)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the change as a unified diff; write nothing"
    )


def run_install(args: argparse.Namespace) -> int:
    """``handler-kit install``: exit 0 when installed (or already there), 1 on any error."""
    try:
        app = load_app(args.target)
        message = install(
            app,
            args.target,
            args.settings,
            base_url=args.base_url,
            command=args.command,
            dry_run=args.dry_run,
        )
    except (LoadError, SettingsError, ValueError) as exc:
        sys.stderr.write(f"handler-kit install: {exc}\n")
        return 1
    except OSError as exc:
        sys.stderr.write(f"handler-kit install: cannot write {args.settings}: {exc}\n")
        return 1
    sys.stderr.write(f"handler-kit: {message}\n")
    return 0
