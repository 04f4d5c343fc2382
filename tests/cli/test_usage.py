"""Argument mistakes, and ``handler-kit`` alone, as a person meets them: one line naming the
option and where the help is (not the whole usage first), and the help rather than an error
when no command is given."""

from __future__ import annotations

from tests.cli.test_messages import run_all
from tests.support.processes import clean_env


def test_argument_mistakes_are_one_line_and_no_command_prints_the_help() -> None:
    results = run_all(
        {
            "port": (["serve", "mod:app", "--port", "99999"], clean_env()),
            "missing": (["test"], clean_env()),
            "alone": ([], clean_env()),
        }
    )
    port = results["port"]
    assert (port.returncode, port.stdout) == (2, "")
    assert port.stderr == (
        "handler-kit serve: --port must be a port number (0-65535), got '99999' "
        "(see handler-kit serve --help)\n"
    )
    missing = results["missing"]
    assert missing.returncode == 2
    assert missing.stderr == (
        "handler-kit test: the following arguments are required: CASES "
        "(see handler-kit test --help)\n"
    )
    alone = results["alone"]
    assert alone.returncode == 2 and alone.stderr == ""
    assert alone.stdout.startswith("usage: handler-kit [-h] [--version] COMMAND ...\n")
    assert "    serve     serve a HookApp over HTTP(S): webhook + MCP\n" in alone.stdout
