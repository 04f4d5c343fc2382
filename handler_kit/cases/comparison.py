"""An answer in the terms a case checks, and the comparison that says, field by field, how an
answer differs from what a case expects."""

from __future__ import annotations

import json
import re
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from handler_kit.cases.model import Expect

NO_ANSWER = "answer"
# The field of the one "mismatch" of a case that was not played (``handler-kit test --runtime``)
NOT_PLAYED = "not played"
# How long a case's pattern may take on the answer's text: a pattern with nested quantifiers,
# such as (a+)+$, backtracks for hours on a text it almost matches
PATTERN_SECONDS = 2.0


@dataclass(frozen=True)
class Answer:
    """What one case's event was answered, read the way the target's runtime reads it.

    ``error`` is set when there is no answer to compare: the server could not be reached,
    answered an HTTP error or output it cannot read, a handler raised (in process), or a
    handler of the document failed. A policy test checks the policy, so a failure never passes
    for the "no opinion" it would read as.
    """

    decision: str | None = None
    reason: str | None = None
    context: str | None = None
    updated_input: dict[str, Any] | None = None
    system_message: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Mismatch:
    """One field of the answer that is not what the case expects."""

    field: str
    expected: str
    actual: str

    def __str__(self) -> str:
        if self.field == NO_ANSWER:
            return f"no answer to compare: {self.actual}"
        if self.field == NOT_PLAYED:
            return f"not played: {self.actual}"
        return f"{self.field}: expected {self.expected}, got {self.actual}"


def compare(expect: Expect, answer: Answer) -> list[Mismatch]:
    """Every way ``answer`` differs from ``expect`` (empty: the case passes)."""
    if answer.error is not None:
        return [Mismatch(NO_ANSWER, "an answer", answer.error)]
    found: list[Mismatch] = []
    if expect.decision is not None:
        actual = answer.decision or "none"
        if actual != expect.decision:
            found.append(Mismatch("decision", expect.decision, actual))
    for name, pattern, text in (
        ("reason", expect.reason, answer.reason),
        ("system_message", expect.system_message, answer.system_message),
    ):
        if pattern is None:
            continue
        matched = search(pattern, text) if text is not None else False
        if matched is None:
            found.append(
                Mismatch(
                    name,
                    f"to match /{pattern}/ within {PATTERN_SECONDS:g} s",
                    "the pattern did not finish (catastrophic backtracking? nested "
                    "quantifiers such as (a+)+ retry every split of the text)",
                )
            )
        elif not matched:
            found.append(Mismatch(name, f"to match /{pattern}/", _text(text)))
    context = answer.context or ""
    for needle in expect.context_contains:
        if needle not in context:
            found.append(Mismatch("context", f"to contain {needle!r}", _text(answer.context)))
    for needle in expect.context_excludes:
        if needle in context:
            found.append(Mismatch("context", f"not to contain {needle!r}", _text(answer.context)))
    if expect.checks_updated_input:
        if expect.updated_input is None:
            if answer.updated_input is not None:
                found.append(Mismatch("updated_input", "none", _json(answer.updated_input)))
        elif answer.updated_input is None:
            found.append(Mismatch("updated_input", _json(expect.updated_input), "none"))
        else:
            found.extend(_subset("updated_input", expect.updated_input, answer.updated_input))
    return found


class _TookTooLong(Exception):
    pass


def search(pattern: str, text: str) -> bool | None:
    """Whether ``pattern`` matches somewhere in ``text``; None when it has not finished within
    :data:`PATTERN_SECONDS`.

    Python's regular expressions cannot be given a deadline, but they stop for a signal: the
    limit is a ``SIGALRM`` timer. It is set only where it cannot disturb anything: in the main
    thread, on a system that has the timer, with no handler or timer of its own already set
    (pytest-timeout's ``signal`` method has one: its own limit then applies instead).
    """
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, signal.SIG_IGN)
        or signal.getitimer(signal.ITIMER_REAL)[0] > 0
    ):
        return re.search(pattern, text) is not None
    armed = [True]

    def expire(signum: int, frame: object) -> None:
        if armed[0]:
            raise _TookTooLong

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, PATTERN_SECONDS)
    try:
        found = re.search(pattern, text) is not None
        armed[0] = False
        return found
    except _TookTooLong:
        return None
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _subset(where: str, expected: dict[str, Any], actual: dict[str, Any]) -> Iterator[Mismatch]:
    """Each key of ``expected`` whose value ``actual`` does not have (recursing into objects)."""
    for key, value in expected.items():
        path = f"{where}.{key}"
        if key not in actual:
            yield Mismatch(path, _json(value), "no such key")
        elif isinstance(value, dict) and isinstance(actual[key], dict):
            yield from _subset(path, value, actual[key])
        elif not _same(value, actual[key]):
            yield Mismatch(path, _json(value), _json(actual[key]))


def _same(a: Any, b: Any) -> bool:
    """JSON equality: Python's ``True == 1`` is not JSON's, so a boolean equals only a
    boolean."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _text(value: str | None) -> str:
    if value is None:
        return "none"
    shown = value if len(value) <= 500 else value[:500] + "..."
    return json.dumps(shown, ensure_ascii=False)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
