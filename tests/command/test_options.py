"""The options of ``handler-kit command`` and ``handler-kit forward`` come from one table
(``handler_kit/command/_options.py``): the start-up parser and argparse (``--help``) read every
option to the same values, refuse the same mistakes with the same line, and the docs list the
forwarder's options from the table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from handler_kit.command import _options, forward, hook
from tests.command.support import REPO, run

URL = "https://hooks.example.com"
FORWARD_DEFAULTS: dict[str, Any] = {
    "url": URL,
    "handler": None,
    "runtime": None,
    "exit_codes": False,
    "fail_closed": False,
    "timeout": 3.5,
    "token_env": "HANDLER_KIT_TOKEN",
    "app": None,
}
COMMAND_DEFAULTS: dict[str, Any] = {
    "target": "myhooks:app",
    "runtime": None,
    "exit_codes": False,
    "handler": None,
    "log_file": None,
}

# (argv, the values it reads to)
FORWARD_CASES: list[tuple[list[str], dict[str, Any]]] = [
    ([URL], FORWARD_DEFAULTS),
    (
        [
            URL,
            "--handler",
            "refund_gate",
            "--runtime",
            "codex",
            "--exit-codes",
            "--fail-closed",
            "--timeout",
            "2.5",
            "--token-env",
            "GATE_TOKEN",
            "--app",
            "myhooks:app",
        ],
        {
            **FORWARD_DEFAULTS,
            "handler": "refund_gate",
            "runtime": "codex",
            "exit_codes": True,
            "fail_closed": True,
            "timeout": 2.5,
            "token_env": "GATE_TOKEN",
            "app": "myhooks:app",
        },
    ),
    (
        ["--timeout=1", "--runtime=sandbox", "--handler=", URL],
        {**FORWARD_DEFAULTS, "timeout": 1.0, "runtime": "sandbox", "handler": ""},
    ),
    # a negative number is a value (run() refuses it, with its own line)
    ([URL, "--timeout", "-1"], {**FORWARD_DEFAULTS, "timeout": -1.0}),
    # the last one given wins
    ([URL, "--timeout", "1", "--timeout", "2"], {**FORWARD_DEFAULTS, "timeout": 2.0}),
    (["--", URL], FORWARD_DEFAULTS),
]
COMMAND_CASES: list[tuple[list[str], dict[str, Any]]] = [
    (["myhooks:app"], COMMAND_DEFAULTS),
    (
        ["myhooks:app", "--runtime", "posit", "--handler", "gate", "--log-file", "/tmp/h.log"],
        {**COMMAND_DEFAULTS, "runtime": "posit", "handler": "gate", "log_file": "/tmp/h.log"},
    ),
    (["--exit-codes", "myhooks:app"], {**COMMAND_DEFAULTS, "exit_codes": True}),
]

RUNTIMES = "'claude-code', 'codex', 'posit', 'sandbox'"
# (argv, argparse's line for it)
FORWARD_ERRORS: list[tuple[list[str], str]] = [
    ([], "the following arguments are required: URL"),
    ([URL, "--bogus"], "unrecognized arguments: --bogus"),
    ([URL, "--bogus", "value", "other"], "unrecognized arguments: --bogus value other"),
    ([URL, "--time", "3"], "unrecognized arguments: --time 3"),  # no abbreviations
    ([URL, "--timeout"], "argument --timeout: expected one argument"),
    ([URL, "--timeout", "--fail-closed"], "argument --timeout: expected one argument"),
    ([URL, "--timeout", "soon"], "argument --timeout: invalid float value: 'soon'"),
    (
        [URL, "--runtime", "claude"],
        f"argument --runtime: invalid choice: 'claude' (choose from {RUNTIMES})",
    ),
    ([URL, "--fail-closed=yes"], "argument --fail-closed: ignored explicit argument 'yes'"),
]
COMMAND_ERRORS: list[tuple[list[str], str]] = [
    ([], "the following arguments are required: MODULE:ATTR"),
    (["myhooks:app", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["myhooks:app", "other:app"], "unrecognized arguments: other:app"),
    (["myhooks:app", "--handler"], "argument --handler: expected one argument"),
    (
        ["myhooks:app", "--runtime", "cursor"],
        f"argument --runtime: invalid choice: 'cursor' (choose from {RUNTIMES})",
    ),
]

COMMANDS = {
    "forward": (forward, _options.FORWARD),
    "command": (hook, _options.COMMAND),
}


def argparse_parser(name: str) -> argparse.ArgumentParser:
    module, _ = COMMANDS[name]
    parser = argparse.ArgumentParser(prog=f"handler-kit {name}", allow_abbrev=False)
    module.add_arguments(parser)
    return parser


CASES = [("forward", *case) for case in FORWARD_CASES] + [
    ("command", *case) for case in COMMAND_CASES
]
ERRORS = [("forward", *case) for case in FORWARD_ERRORS] + [
    ("command", *case) for case in COMMAND_ERRORS
]


@pytest.mark.parametrize(("name", "argv", "expected"), CASES)
def test_both_parsers_read_each_option_the_same(
    name: str, argv: list[str], expected: dict[str, Any]
) -> None:
    _, table = COMMANDS[name]
    fast = _options.parse(argv, table)
    assert fast is not None
    assert vars(fast) == expected
    assert vars(argparse_parser(name).parse_args(argv)) == expected


@pytest.mark.parametrize(("name", "argv", "message"), ERRORS)
def test_both_parsers_refuse_a_mistake_with_the_same_line(
    name: str, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, table = COMMANDS[name]
    with pytest.raises(_options.UsageError) as refused:
        _options.parse(argv, table)
    assert str(refused.value) == message
    with pytest.raises(SystemExit) as exited:
        argparse_parser(name).parse_args(argv)
    assert exited.value.code == 1  # never 2: a runtime reads 2 as "block"
    assert capsys.readouterr().err == f"handler-kit {name}: {message}\n"


@pytest.mark.parametrize("name", ["forward", "command"])
def test_a_mistake_is_one_line_and_exit_1_from_the_command(name: str) -> None:
    argv = [URL] if name == "forward" else ["myhooks:app"]
    done = run([name, *argv, "--bogus"], b"{}")
    assert (done.code, done.stdout) == (1, b"")
    assert done.stderr == f"handler-kit {name}: unrecognized arguments: --bogus\n"


@pytest.mark.parametrize("name", ["forward", "command"])
def test_help_lists_every_option_of_the_table(name: str) -> None:
    done = run([name, "--help"], b"")
    assert done.code == 0
    output = done.stdout.decode()
    for option in COMMANDS[name][1]:
        assert (option.metavar if option.positional else option.name) in output


def test_the_docs_list_the_forward_options_from_the_table() -> None:
    for path, marker, table in _options.DOCS:
        text = (Path(REPO) / path).read_text()
        assert _options.rewritten(text, marker, table) == text, (
            f"{path} is not current: run python -m handler_kit.command._options"
        )
    text = (Path(REPO) / "docs/forward.md").read_text()
    for option in _options.FORWARD:
        assert f"| `{option.name if not option.positional else option.metavar}" in text
