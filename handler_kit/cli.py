"""The ``handler-kit`` command.

Each subcommand lives in its own module and is imported only when it runs: ``handler-kit
command`` is started once per tool call by command-hook runtimes, so this entry point must not
pull in the server stack (starlette, uvicorn, mcp, httpx) or any other subcommand's imports.
"""

from __future__ import annotations

import importlib
import sys

# subcommand -> (module, one-line help). The module exposes ``add_arguments(parser)`` and
# ``run(args) -> int``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("handler_kit.cli_serve", "serve a HookApp over HTTP(S): webhook + MCP"),
    "command": ("handler_kit.command", "run a HookApp as a command hook (stdin -> stdout)"),
    "document": ("handler_kit.cli_document", "print the hooks document for a HookApp"),
    "install": ("handler_kit.claude_settings", "write a HookApp's hooks into a settings.json"),
    "validate": ("handler_kit.cli_dispatch", "validate a Runbear hooks document"),
    "dispatch": ("handler_kit.cli_dispatch", "run events through the reference dispatcher"),
    "send": ("handler_kit.cli_dispatch", "send one event to one endpoint and explain the answer"),
}


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["command"]:  # started once per tool call: its own lean parsing
        from handler_kit.command import main as command_main

        return command_main(argv[1:])
    import argparse

    parser = argparse.ArgumentParser(
        prog="handler-kit", description="Agent hook handlers: serve, run, document, test."
    )
    sub = parser.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    argv = sys.argv[1:] if argv is None else argv
    chosen = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            module = importlib.import_module(module_name)
            add = getattr(module, f"add_{name}_arguments", None) or module.add_arguments
            add(sub_parser)
            sub_parser.set_defaults(_run=getattr(module, f"run_{name}", None) or module.run)
    args = parser.parse_args(argv)
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
