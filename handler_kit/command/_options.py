"""The options of ``handler-kit command`` and ``handler-kit forward``, each defined once.

Both commands start once per tool call, so their arguments are read by :func:`parse`, a small
parser made from these tables that loads nothing (not argparse, not typing). ``--help`` goes
to argparse, whose parser :func:`add_to` makes from the same tables; ``docs/forward.md`` lists
the forwarder's options from them too (:func:`markdown_table`; ``python -m
handler_kit.command._options`` rewrites it, a test checks it is current). :func:`parse`
accepts what argparse accepts (without abbreviations: the argparse parser is made with
``allow_abbrev=False``) and refuses the rest with argparse's one-line messages, so a mistake in
a settings file reads the same whichever parser met it.
"""

from __future__ import annotations

from handler_kit.config import CLIENT_TOKEN_VARIABLE

TYPE_CHECKING = False  # typing.TYPE_CHECKING to a type checker, without importing typing
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from types import SimpleNamespace
    from typing import Any

__all__ = ["COMMAND", "FORWARD", "Option", "UsageError", "add_to", "markdown_table", "parse"]

# argparse's reading of a word that starts with "-" but is a value: a negative number
# (its _negative_number_matcher), a lone "-", or anything with a space in it.
_DIGITS = frozenset("0123456789")


class UsageError(Exception):
    """A mistake in the arguments; the message is argparse's line for it."""


class Option:
    """One option (``--name``) or the positional argument (a name without dashes).

    A flag has no ``metavar``; an option with one takes a value, turned into the option's
    value by ``convert`` (``ValueError`` with a message for a bad one) and checked against
    ``choices``. ``choices`` and ``help`` may be functions: what they list lives in a module
    loaded only when asked. ``doc`` is the docs' text, where it says more than ``--help``.
    """

    __slots__ = ("choices", "convert", "default", "dest", "doc", "help", "metavar", "name")

    def __init__(
        self,
        name: str,
        help: str | Callable[[], str],
        *,
        metavar: str | None = None,
        default: Any = None,
        convert: Callable[[str], Any] | None = None,
        choices: Callable[[], tuple[str, ...]] | None = None,
        doc: str | None = None,
    ) -> None:
        self.name = name
        self.dest = name.lstrip("-").replace("-", "_")
        self.help = help
        self.metavar = metavar
        self.default = False if self.flag else default
        self.convert = convert
        self.choices = choices
        self.doc = doc

    def help_text(self) -> str:
        return self.help if isinstance(self.help, str) else self.help()

    @property
    def positional(self) -> bool:
        return not self.name.startswith("-")

    @property
    def flag(self) -> bool:
        return self.metavar is None and not self.positional

    def value(self, text: str) -> Any:
        """The option's value for ``text``; :class:`UsageError` with argparse's line."""
        if self.convert is not None:
            try:
                value = self.convert(text)
            except ValueError as exc:
                if self.choices is not None:  # a name none of the choices reads as
                    raise self._invalid_choice(text) from None
                raise UsageError(f"argument {self.name}: {exc}") from None
        else:
            value = text
        if self.choices is not None and value not in self.choices():
            raise self._invalid_choice(text)
        return value

    def _invalid_choice(self, text: str) -> UsageError:
        """argparse's line for a value that is none of the choices."""
        choices = ", ".join(repr(c) for c in self.choices()) if self.choices is not None else ""
        return UsageError(f"argument {self.name}: invalid choice: {text!r} (choose from {choices})")


def parse(argv: list[str], options: tuple[Option, ...]) -> SimpleNamespace | None:
    """``argv`` read as argparse reads it; None for ``-h``/``--help`` (argparse prints the
    help). Raises :class:`UsageError`: a value missing or refused, a flag given a value, the
    positional argument missing, words that are no option."""
    from types import SimpleNamespace

    named = {option.name: option for option in options if not option.positional}
    (positional,) = [option for option in options if option.positional]
    values = {option.dest: option.default for option in options}
    extras: list[str] = []
    words = iter(argv)
    only_positional = False
    for word in words:
        if only_positional or not _is_option(word):
            if values[positional.dest] is None:
                values[positional.dest] = word
            else:
                extras.append(word)
            continue
        if word == "--":
            only_positional = True
            continue
        if word in ("-h", "--help"):
            return None
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        option = named.get(name)
        if option is None:
            extras.append(word)
        elif option.flag:
            if eq:
                raise UsageError(f"argument {name}: ignored explicit argument {value!r}")
            values[option.dest] = True
        else:
            if not eq:
                value = next(words, "--")  # at the end: as when an option follows
                if _is_option(value):
                    raise UsageError(f"argument {name}: expected one argument")
            values[option.dest] = option.value(value)
    if values[positional.dest] is None:
        raise UsageError(f"the following arguments are required: {positional.metavar}")
    if extras:
        raise UsageError(f"unrecognized arguments: {' '.join(extras)}")
    return SimpleNamespace(**values)


def _is_option(word: str) -> bool:
    """Whether argparse takes ``word`` for an option (or ``--``) rather than a value."""
    if not word.startswith("-") or word == "-" or " " in word:
        return False
    number = word[1:]
    whole, dot, fraction = number.partition(".")
    # -1, -1.5, -.5: a negative number, a value
    negative = set(whole) <= _DIGITS and (not dot or bool(fraction and set(fraction) <= _DIGITS))
    return not negative


def add_to(parser: argparse.ArgumentParser, options: tuple[Option, ...]) -> None:
    """The same options on an argparse parser (made with ``allow_abbrev=False``), each
    option's help ending with its default, as every ``handler-kit`` command's does."""
    import argparse

    for option in options:
        if option.positional:
            parser.add_argument(option.dest, metavar=option.metavar, help=option.help_text())
        elif option.flag:
            parser.add_argument(option.name, action="store_true", help=_with_default(option))
        else:
            parser.add_argument(
                option.name,
                type=_argparse_type(option, argparse.ArgumentTypeError),
                default=option.default,
                metavar=option.metavar,
                help=_with_default(option),
            )


def _with_default(option: Option) -> str:
    text = option.help_text()
    if "default" in text:
        return text
    shown = "off" if option.flag else "none" if option.default is None else option.default
    return f"{text} (default: {shown})"


def _argparse_type(option: Option, error: type[Exception]) -> Callable[[str], Any]:
    """``option.value`` as argparse's ``type``: its message, with argparse's prefix, is the
    fast parser's."""
    prefix = f"argument {option.name}: "

    def convert(text: str) -> Any:
        try:
            return option.value(text)
        except UsageError as exc:
            raise error(str(exc).removeprefix(prefix)) from None

    return convert


def markdown_table(options: tuple[Option, ...]) -> str:
    """The options as the docs list them: a Markdown table, one row each."""
    rows = ["| option | meaning |", "|---|---|"]
    for option in options:
        shown = option.metavar if option.positional else option.name
        if option.metavar and not option.positional:
            shown = f"{option.name} {option.metavar}"
        text = option.doc or option.help_text()
        if option.choices is not None:
            text = ", ".join(f"`{c}`" for c in option.choices()) + ": " + text
        if option.default not in (None, False) and "default" not in text:
            text += f" (default `{option.default}`)"
        rows.append(f"| `{shown}` | {text} |")
    return "\n".join(rows) + "\n"


# -- the tables -----------------------------------------------------------------------------


def _runtimes() -> tuple[str, ...]:
    from handler_kit.command import dialects

    return dialects.RUNTIMES


def _runtime_name(text: str) -> str:
    from handler_kit.command import dialects

    return dialects.runtime_name(text)


def _runtime_help() -> str:
    from handler_kit.command import dialects

    return "the runtime's dialect: " + "; ".join(
        f"{k}: {v}" for k, v in dialects.RUNTIME_HELP.items()
    )


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"invalid float value: {text!r}") from None


# What ``install`` writes for a handler with the default 3 s timeout, whose entry gets 4 s:
# long enough for the server to answer at its own deadline, short enough that the forwarder
# answers before the runtime gives up on it.
DEFAULT_TIMEOUT = 3.5
TOKEN_VARIABLE = CLIENT_TOKEN_VARIABLE

RUNTIME = Option(
    "--runtime",
    _runtime_help,
    metavar="RUNTIME",
    convert=_runtime_name,
    choices=_runtimes,
    doc="the [dialect](command-hooks.md#each-runtimes-dialect) the answer is printed in "
    "(default `claude-code`); `--exit-codes` is `--runtime sandbox`",
)
EXIT_CODES = Option(
    "--exit-codes", "the same as --runtime sandbox", doc="the same as `--runtime sandbox`"
)

COMMAND: tuple[Option, ...] = (
    Option(
        "target",
        "the HookApp, e.g. myhooks:app",
        metavar="MODULE:ATTR",
        doc="the HookApp, e.g. `myhooks:app`, imported with the current folder on `sys.path`",
    ),
    RUNTIME,
    EXIT_CODES,
    Option(
        "--handler",
        "run only this handler (as POST /hooks/NAME would); default: every matching one",
        metavar="NAME",
        doc="run only this handler (as `POST /hooks/NAME` would); default: every matching one",
    ),
    Option(
        "--log-file",
        "append log lines to PATH (default: stderr)",
        metavar="PATH",
        doc="append log lines to `PATH` (default: stderr; see [Output and logs](#output-and-logs))",
    ),
)

FORWARD: tuple[Option, ...] = (
    Option(
        "url",
        "where to send the input: the gate's route (https://HOST/hooks/NAME), or the server's "
        "base URL with --handler",
        metavar="URL",
        doc="where the input goes: the gate's route, `https://HOST/hooks/NAME` (see "
        "[The webhook](webhook.md)), or with `--handler NAME` the server's base URL",
    ),
    Option(
        "--handler",
        "send to URL/hooks/NAME (default: URL as given)",
        metavar="NAME",
        doc="send to `URL/hooks/NAME`",
    ),
    RUNTIME,
    EXIT_CODES,
    Option(
        "--fail-closed",
        "when the server cannot answer, answer the event's safe decision (deny, block); "
        "default: no answer",
        doc="when the server cannot answer, answer the event's safe decision; without it, "
        "answer nothing",
    ),
    Option(
        "--timeout",
        f"how long to wait for the server (default {DEFAULT_TIMEOUT:g}; keep it under the "
        "hook's timeout)",
        metavar="SECONDS",
        default=DEFAULT_TIMEOUT,
        convert=_seconds,
        doc="the deadline of the whole call: looking up the server's name, connecting, the "
        "TLS handshake, sending the input and reading the answer all fit in it (default "
        f"{DEFAULT_TIMEOUT:g}: what `install` writes for a handler with the default 3 s "
        "timeout, whose entry gets 4 s)",
    ),
    Option(
        "--token-env",
        f"the environment variable holding the bearer token (default {TOKEN_VARIABLE})",
        metavar="NAME",
        default=TOKEN_VARIABLE,
        doc=f"the environment variable holding the bearer token (default `{TOKEN_VARIABLE}`)",
    ),
    Option(
        "--app",
        "the app this entry belongs to, sent as X-Handler-Kit-App (install writes it; "
        "default: none)",
        metavar="MODULE:ATTR",
        doc="the app the entry belongs to, sent as the `X-Handler-Kit-App` header; `install` "
        "writes it to recognise its entries",
    ),
)


# -- the docs -------------------------------------------------------------------------------

DOCS = (
    ("docs/command-hooks.md", "command options", COMMAND),
    ("docs/forward.md", "forward options", FORWARD),
)


def _docs_marker(name: str) -> tuple[str, str]:
    begin = (
        f"<!-- <generated: {name}> from command/_options.py by "
        "`python -m handler_kit.command._options`; do not edit -->"
    )
    return begin, f"<!-- </generated: {name}> -->"


def rewritten(text: str, name: str, options: tuple[Option, ...]) -> str:
    """``text`` with its generated part for ``name`` written from ``options``."""
    begin, end = _docs_marker(name)
    head, found, rest = text.partition(begin + "\n")
    _, found_end, tail = rest.partition(end)
    if not (found and found_end):
        raise ValueError(f"no {begin!r} ... {end!r} in the file")
    return f"{head}{begin}\n{markdown_table(options)}{end}{tail}"


if __name__ == "__main__":
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for path, name, options in DOCS:
        file = root / path
        file.write_text(rewritten(file.read_text(), name, options))
