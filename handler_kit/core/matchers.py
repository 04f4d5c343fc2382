"""The Claude Code / Runbear matcher rule, compiled once.

- omitted, empty or ``*``: matches everything;
- only letters, digits, ``_``, ``-``, whitespace, ``|`` and ``,``: a list of exact names;
- anything else: an unanchored regular expression (``refund.*`` matches ``issue_refund_v2``).

Python's ``re`` stands in for JavaScript's ``RegExp``; for the patterns matchers use (classes,
alternation, anchors, ``.*``) the two agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_EXACT_LIST = re.compile(r"[A-Za-z0-9_\-\s|,]*")
_SEPARATORS = re.compile(r"[|,]")


class MatcherError(ValueError):
    """A matcher that is not a valid regular expression."""


def compile_matcher(matcher: str | None) -> Callable[[str | None], bool]:
    """Compile ``matcher`` into a predicate over the matched value (tool name, source...).

    Raises :class:`MatcherError` for an invalid regular expression.
    """
    if matcher is None or matcher.strip() in ("", "*"):
        return _match_all
    if _EXACT_LIST.fullmatch(matcher):
        names = frozenset(n.strip() for n in _SEPARATORS.split(matcher) if n.strip())
        return lambda value: value in names
    try:
        pattern = re.compile(matcher)
    except re.error as exc:
        raise MatcherError(f"invalid matcher regular expression {matcher!r}: {exc}") from None
    search = pattern.search
    return lambda value: value is not None and search(value) is not None


def is_match_all(matcher: str | None) -> bool:
    """True when ``matcher`` matches every value."""
    return matcher is None or matcher.strip() in ("", "*")


def _match_all(value: str | None) -> bool:
    return True
