"""The ``handler-kit`` command.

Each subcommand lives in its own module and is imported only when it runs: ``handler-kit
command`` is started once per tool call by command-hook runtimes, so this entry point must not
pull in the server stack (starlette, uvicorn, mcp, httpx) or any other subcommand's imports, and
``handler-kit forward`` (the same, in front of a server) loads nothing but the standard library.
"""

from __future__ import annotations

import importlib
import sys

from handler_kit._version import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on this path
if TYPE_CHECKING:
    from typing import Any


class Command:
    """One subcommand: the module that implements it and the two functions it is called
    through, named in full so that a search for a function finds this table.

    A plain class, not a NamedTuple: this module is on the forwarder's start-up path, and
    typing is not.
    """

    __slots__ = ("add_arguments", "help", "module", "run")

    def __init__(self, module: str, add_arguments: str, run: str, help: str) -> None:
        self.module = module
        self.add_arguments = add_arguments  # add_arguments(parser: ArgumentParser) -> None
        self.run = run  # run(args: argparse.Namespace) -> int, the exit status
        self.help = help


COMMANDS: dict[str, Command] = {
    "serve": Command(
        "handler_kit.cli.serve",
        "add_arguments",
        "run",
        "serve a HookApp over HTTP(S): webhook + MCP",
    ),
    "dev": Command(
        "handler_kit.cli.dev",
        "add_arguments",
        "run",
        "serve a HookApp for development: reload on change, a token and curl, the inspector",
    ),
    # Never reached through the parser below: main() hands ``command`` to hook.main first,
    # which parses without argparse and calls these two only for unusual arguments.
    "command": Command(
        "handler_kit.command.hook",
        "add_arguments",
        "run",
        "run a HookApp as a command hook (stdin -> stdout)",
    ),
    # Never reached through the parser either: main() hands ``forward`` to forward.main, which
    # loads only the standard library.
    "forward": Command(
        "handler_kit.command.forward",
        "add_arguments",
        "run",
        "a command hook that asks a running server, failing closed if told to",
    ),
    "document": Command(
        "handler_kit.cli.document",
        "add_arguments",
        "run",
        "print the hooks document for a HookApp",
    ),
    "install": Command(
        "handler_kit.cli.install",
        "add_install_arguments",
        "run_install",
        "write a HookApp's hooks into a settings.json",
    ),
    "validate": Command(
        "handler_kit.cli.dispatch",
        "add_validate_arguments",
        "run_validate",
        "validate a Runbear hooks document",
    ),
    "dispatch": Command(
        "handler_kit.cli.dispatch",
        "add_dispatch_arguments",
        "run_dispatch",
        "run events through the reference dispatcher",
    ),
    "send": Command(
        "handler_kit.cli.dispatch",
        "add_send_arguments",
        "run_send",
        "send one event to one endpoint and explain the answer",
    ),
    "test": Command(
        "handler_kit.cli.cases",
        "add_arguments",
        "run",
        "run policy test cases (event + expected answer) against an app, a URL or a document",
    ),
    "replay": Command(
        "handler_kit.cli.replay",
        "add_arguments",
        "run",
        "answer recorded decisions again with a candidate app and report what it changes",
    ),
}


def main(argv: list[str] | None = None) -> int:
    process = argv is None  # the process's own entry point (console script, python -m)
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["command"]:  # started once per tool call: its own lean parsing
        if process and sys.flags.isolated:
            # ``python -I`` (what install writes) leaves the current folder off sys.path, so
            # that nothing in it can stand in for the standard library or handler-kit. The
            # app imports from it: it goes back at the end, after them (the loader adds no
            # second copy in front).
            import os

            if os.getcwd() not in sys.path:
                sys.path.append(os.getcwd())
        import gc

        # A process per tool call, whose start-up is mostly imports: pydantic and the core
        # create only objects that live as long as the process. The cyclic collector would
        # walk them again and again while they are made, and once more as the interpreter
        # exits, to free nothing; it is paused for the imports, which are then frozen (left
        # out of every collection, as a server does after its start-up). It is on again
        # before the app is imported: the app's code and its handlers run with it as usual.
        paused = process and gc.isenabled()
        if paused:
            gc.disable()
        from handler_kit.command.hook import main as command_main

        if paused:
            gc.freeze()
            gc.enable()
        return command_main(argv[1:])
    if argv[:1] == ["forward"]:  # the same, and the standard library only
        from handler_kit.command.forward import main as forward_main

        return forward_main(argv[1:])
    parser = _parser(
        prog="handler-kit", description="Agent hook handlers: serve, run, document, test."
    )
    parser.add_argument("--version", action="version", version=f"handler-kit {__version__}")
    sub = parser.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    # Every subcommand is listed in the help; only the one asked for is imported and given its
    # arguments (argparse stops at the subcommand's name, so the others are never parsed).
    chosen = argv[0] if argv else None
    run = None
    for name, command in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=command.help, description=command.help)
        if name == chosen:
            module = importlib.import_module(command.module)
            getattr(module, command.add_arguments)(sub_parser)
            _show_defaults(sub_parser)
            run = getattr(module, command.run)
    if not argv:  # what there is to do, rather than an error saying a command is missing
        parser.print_help()
        return 2
    args = parser.parse_args(argv)
    assert run is not None  # parse_args exits unless argv[0] named a subcommand
    return int(run(args) or 0)


def _parser(**options: Any) -> Any:
    """The parser; its class is defined here, not at import: ``forward`` and ``command``
    never load argparse."""
    import argparse

    class Parser(argparse.ArgumentParser):
        """An argument mistake is one line naming the option, and where the help is, not the
        whole usage first (a subcommand's usage is many lines)."""

        def error(self, message: str) -> Any:
            option, sep, rest = message.removeprefix("argument ").partition(": ")
            if message.startswith("argument ") and sep and option.split("/")[0] in rest:
                message = rest  # the option's own message names it already
            self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    return Parser(**options)


def _show_defaults(parser: Any) -> None:
    """End each option's help with its default when the help does not say it (options backed
    by a setting say it, with their variable, from :data:`handler_kit.config.SETTINGS`), so
    every ``--help`` answers "what if I leave it out". A value taken from the environment is
    never shown: it may be a secret."""
    import argparse

    for action in parser._actions:
        help_text = action.help
        if not action.option_strings or not help_text or help_text == argparse.SUPPRESS:
            continue
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        if "default" in help_text or "required" in help_text:
            continue
        if action.required:
            shown = "required"
        elif action.nargs == 0:  # a flag
            shown = "default: off"
        elif action.default in (None, [], ()):
            shown = "default: none"
        else:
            shown = f"default: {action.default}"
        action.help = f"{help_text} ({shown})"
