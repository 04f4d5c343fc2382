"""The Claude Code / Runbear matcher rule, compiled once, and the spellings of an MCP tool's name.

- omitted, empty or ``*``: matches everything;
- only letters, digits, ``_``, ``-``, whitespace, ``|`` and ``,``: a list of exact names;
- anything else: an unanchored JavaScript regular expression (``refund.*`` matches
  ``issue_refund_v2``), as Claude Code and Posit run it: ``new RegExp(matcher).test(value)``.

The JavaScript pattern is translated to Python's ``re`` with its JavaScript meaning (see
:mod:`handler_kit.core._js_regex`): ``(?<name>...)`` works, ``$`` is the end of the name, and
Python-only text such as ``(?i)`` is refused rather than quietly meaning something else in the
runtime.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from handler_kit.core._js_regex import JsRegexError, translate

# Sets of characters rather than regular expressions: compiling a pattern is a measurable
# share of a command hook's start-up, and these are all one-character classes.
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
# a list of exact names: these and whitespace (as ``\s`` has it: ``str.isspace``)
_EXACT_LIST = _ALNUM | frozenset("_-|,")
# What each runtime keeps in a name (see tool_matcher)
_WORD = _ALNUM | {"_"}
_WORD_OR_DASH = _WORD | {"-"}
_ALNUM_OR_DASH = _ALNUM | {"-"}
# A server renamed because its name was taken: _2, _3, ...
_TWIN = "(?:_[0-9]+)?"
# A plugin's name in Claude Code's name of its servers' tools
_PLUGIN = "[A-Za-z0-9_-]+"
# A plugin's name in Claude Code's name of its servers' tools
_PLUGIN = "[A-Za-z0-9_-]+"
# Special in a regular expression, in JavaScript or Python: escaped with a backslash, which
# both read as the character itself.
_SPECIAL = frozenset("\\^$.|?*+()[]{}/")


class MatcherError(ValueError):
    """A matcher that is not a valid JavaScript regular expression, or has no Python meaning."""


def compile_matcher(matcher: str | None) -> Callable[[str | None], bool]:
    """Compile ``matcher`` into a predicate over the matched value (tool name, source...).

    Raises :class:`MatcherError` for a regular expression JavaScript rejects, or one written in
    a syntax of Python's (or another engine's) that JavaScript would read differently.
    """
    if matcher is None or matcher.strip() in ("", "*"):
        return _match_all
    if all(c in _EXACT_LIST or c.isspace() for c in matcher):
        names = frozenset(n.strip() for n in matcher.replace(",", "|").split("|") if n.strip())
        return lambda value: value in names
    try:
        pattern = re.compile(translate(matcher), re.ASCII)
    except JsRegexError as exc:
        raise MatcherError(f"invalid matcher regular expression {_shown(matcher)}: {exc}") from None
    except re.error as exc:
        # valid JavaScript that Python's engine cannot run (a variable-width lookbehind...)
        raise MatcherError(
            f"invalid matcher regular expression {_shown(matcher)}: "
            f"no Python equivalent ({exc.msg})"
        ) from None
    search = pattern.search
    return lambda value: value is not None and search(value) is not None


def is_match_all(matcher: str | None) -> bool:
    """True when ``matcher`` matches every value."""
    return matcher is None or matcher.strip() in ("", "*")


def tool_matcher(server: str, tool: str) -> str:
    """One anchored matcher for the tool ``tool`` of the MCP server ``server``, under the name
    each runtime gives it.

    ``tool_matcher("orders", "refund")`` is ``^(?:orders(?:_[0-9]+)?__?refund|``
    ``mcp__orders(?:_[0-9]+)?__refund|mcp__plugin_[A-Za-z0-9_-]+_orders(?:_[0-9]+)?__refund)$``.

    It matches ``orders_refund`` (Anthropic agents), ``orders__refund`` (the sandbox runtime),
    ``mcp__orders__refund`` (Claude Agent SDK agents, Claude Code, Posit),
    ``mcp__plugin_<plugin>_orders__refund`` (Claude Code, a server a plugin bundles) and the
    same names with the ``_2``, ``_3``... suffix a runtime adds to a server whose name is taken
    (a gate is safer matching a renamed twin than missing it); never ``orders_refund_status``
    or ``orders_refunds``. Pass it as a handler's ``matcher``, alone or joined to others with
    ``|`` (``"^issue_refund$|" + tool_matcher(...)``).
    """
    if not isinstance(server, str) or not isinstance(tool, str):
        raise TypeError("tool_matcher() takes the server and the tool name as strings")
    if not tool:
        raise ValueError("tool_matcher() needs a tool name")
    # Claude Agent SDK agents: the namespace trimmed, every run of characters other than
    # letters, digits and '-' collapsed to '_', leading and trailing '_' removed.
    sdk_server = _replaced(server.strip(), _ALNUM_OR_DASH, collapse=True).strip("_")
    if not sdk_server:
        raise ValueError(f"MCP server name {server!r} has no letter or digit")
    # Anthropic agents: every character other than letters, digits and '_' replaced by '_';
    # the sandbox runtime joins the same two parts with '__'.
    spellings = [f"{_escape(_replaced(server, _WORD))}{_TWIN}__?{_escape(_replaced(tool, _WORD))}"]
    if not _WORD.issuperset(server + tool):
        spellings.append(f"{_escape(server)}_{_escape(tool)}")  # Classic agents: as they are
    spellings.append(f"mcp__{_escape(sdk_server)}{_TWIN}__{_escape(tool)}")
    # Claude Code's own normalization: each character other than letters, digits, '_' and '-'
    # replaced by '_', in the server and in the tool name.
    claude_code = (
        f"mcp__{_escape(_replaced(server, _WORD_OR_DASH))}{_TWIN}"
        f"__{_escape(_replaced(tool, _WORD_OR_DASH))}"
    )
    if claude_code not in spellings:
        spellings.append(claude_code)
    # Claude Code names a plugin's server plugin_<plugin>_<server>, normalized the same way.
    # Any plugin: the gate is on the server's tool whichever plugin brings it, and a server
    # whose own name ends in _orders is matched too, which a gate can afford.
    spellings.append(f"mcp__plugin_{_PLUGIN}_{claude_code.removeprefix('mcp__')}")
    return f"^(?:{'|'.join(spellings)})$"


def _shown(matcher: str) -> str:
    # as written, backslashes single: the user typed the matcher, not a Python literal
    return f"'{matcher}'" if matcher.isprintable() else repr(matcher)


def _escape(name: str) -> str:
    return "".join("\\" + c if c in _SPECIAL else c for c in name)


def _replaced(name: str, kept: frozenset[str], *, collapse: bool = False) -> str:
    """``name`` with each character not in ``kept`` replaced by ``_`` (each run of them by
    one ``_`` with ``collapse``)."""
    out: list[str] = []
    in_run = False
    for c in name:
        if c in kept:
            out.append(c)
            in_run = False
        elif not (collapse and in_run):
            out.append("_")
            in_run = True
    return "".join(out)


def _match_all(value: str | None) -> bool:
    return True
