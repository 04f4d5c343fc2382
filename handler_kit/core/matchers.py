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

_EXACT_LIST = re.compile(r"[A-Za-z0-9_\-\s|,]*")
_SEPARATORS = re.compile(r"[|,]")
# What each runtime replaces in a name (see tool_matcher)
_NOT_WORD = re.compile(r"[^A-Za-z0-9_]")
_NOT_WORD_OR_DASH_RUN = re.compile(r"[^A-Za-z0-9-]+")
_NOT_WORD_OR_DASH = re.compile(r"[^A-Za-z0-9_-]")
# A server renamed because its name was taken: _2, _3, ...
_TWIN = "(?:_[0-9]+)?"
# Special in a regular expression, in JavaScript or Python: escaped with a backslash, which
# both read as the character itself.
_SPECIAL = re.compile(r"([\\^$.|?*+()\[\]{}/])")


class MatcherError(ValueError):
    """A matcher that is not a valid JavaScript regular expression, or has no Python meaning."""


def compile_matcher(matcher: str | None) -> Callable[[str | None], bool]:
    """Compile ``matcher`` into a predicate over the matched value (tool name, source...).

    Raises :class:`MatcherError` for a regular expression JavaScript rejects, or one written in
    a syntax of Python's (or another engine's) that JavaScript would read differently.
    """
    if matcher is None or matcher.strip() in ("", "*"):
        return _match_all
    if _EXACT_LIST.fullmatch(matcher):
        names = frozenset(n.strip() for n in _SEPARATORS.split(matcher) if n.strip())
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

    >>> tool_matcher("orders", "refund")
    '^(?:orders(?:_[0-9]+)?__?refund|mcp__orders(?:_[0-9]+)?__refund)$'

    It matches ``orders_refund`` (Anthropic agents), ``orders__refund`` (the sandbox runtime),
    ``mcp__orders__refund`` (Claude Agent SDK agents, Claude Code, Posit) and the same names
    with the ``_2``, ``_3``... suffix a runtime adds to a server whose name is taken (a gate is
    safer matching a renamed twin than missing it); never ``orders_refund_status`` or
    ``orders_refunds``. Pass it as a handler's ``matcher``, alone or joined to others with
    ``|`` (``"^issue_refund$|" + tool_matcher(...)``).
    """
    if not isinstance(server, str) or not isinstance(tool, str):
        raise TypeError("tool_matcher() takes the server and the tool name as strings")
    if not tool:
        raise ValueError("tool_matcher() needs a tool name")
    # Claude Agent SDK agents: the namespace trimmed, every run of characters other than
    # letters, digits and '-' collapsed to '_', leading and trailing '_' removed.
    sdk_server = _NOT_WORD_OR_DASH_RUN.sub("_", server.strip()).strip("_")
    if not sdk_server:
        raise ValueError(f"MCP server name {server!r} has no letter or digit")
    # Anthropic agents: every character other than letters, digits and '_' replaced by '_';
    # the sandbox runtime joins the same two parts with '__'.
    spellings = [
        f"{_escape(_NOT_WORD.sub('_', server))}{_TWIN}__?{_escape(_NOT_WORD.sub('_', tool))}"
    ]
    if _NOT_WORD.search(server + tool):
        spellings.append(f"{_escape(server)}_{_escape(tool)}")  # Classic agents: as they are
    spellings.append(f"mcp__{_escape(sdk_server)}{_TWIN}__{_escape(tool)}")
    # Claude Code's own normalization: each character other than letters, digits, '_' and '-'
    # replaced by '_', in the server and in the tool name.
    claude_code = (
        f"mcp__{_escape(_NOT_WORD_OR_DASH.sub('_', server))}{_TWIN}"
        f"__{_escape(_NOT_WORD_OR_DASH.sub('_', tool))}"
    )
    if claude_code not in spellings:
        spellings.append(claude_code)
    return f"^(?:{'|'.join(spellings)})$"


def _shown(matcher: str) -> str:
    # as written, backslashes single: the user typed the matcher, not a Python literal
    return f"'{matcher}'" if matcher.isprintable() else repr(matcher)


def _escape(name: str) -> str:
    return _SPECIAL.sub(r"\\\1", name)


def _match_all(value: str | None) -> bool:
    return True
