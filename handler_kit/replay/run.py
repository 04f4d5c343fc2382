"""Answering recorded decisions again with a candidate app, in process.

The candidate answers each recorded input through :meth:`HookApp.answer`, the one answer path
every transport takes, with nothing around it: no audit trail, no metrics, no idempotency
store (the server adds those; a loaded app has none), and each handler within its own
deadline. Handlers with side effects (``idempotent=True``: a ticket filed, an approval sent)
do not run unless named: a decision one of them would take part in is reported as skipped
rather than answered without it, which would be a guess.

A candidate handler that raises is logged with its traceback by the core, once per answer; a
replay answers thousands, so each crash (the handler, the exception's type, the line it was
raised at) is logged the first time only, and the decisions it took part in are counted
(:class:`Crash`, :attr:`Outcome.crashes`) for the report.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, Literal

from handler_kit.core.app import HookApp
from handler_kit.core.events import parse_event
from handler_kit.ops.audit.capture import invocation_decision
from handler_kit.ops.audit.records import Redactor
from handler_kit.replay.classify import (
    Difference,
    Verdict,
    aspects,
    compare,
    compare_aspects,
    handler_aspects,
)
from handler_kit.replay.recorded import RecordedDecision, RecordedHandler

# Why a decision was not replayed
NotReplayed = Literal["incomplete", "side_effects", "unreadable"]


@dataclass(frozen=True)
class HandlerOutcome:
    """One handler's part, the candidate's against the recorded one (paired by name)."""

    name: str
    verdict: Verdict
    differences: tuple[Difference, ...] = ()


@dataclass(frozen=True)
class Crash:
    """A candidate handler that raised: the same exception type raised at the same line is the
    same crash, whatever the input (``message``, the first one's, is not compared)."""

    handler: str
    exception: str  # the exception type's name
    location: str  # FILE:LINE where it was raised (the traceback's innermost frame)
    message: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.handler}: {self.exception} at {self.location}"


@dataclass(frozen=True)
class Outcome:
    """One recorded decision, replayed (``verdict``) or not (``not_replayed`` and why)."""

    recorded: RecordedDecision
    verdict: Verdict | None = None
    differences: tuple[Difference, ...] = ()
    handlers: tuple[HandlerOutcome, ...] = ()
    output: dict[str, Any] | None = None  # the candidate's answer (not redacted)
    not_replayed: NotReplayed | None = None
    why: str | None = None
    crashes: tuple[Crash, ...] = ()  # the candidate's handlers that raised on it

    @property
    def replayed(self) -> bool:
        return self.verdict is not None


@dataclass
class Replayer:
    """Replays decisions with ``candidate``; ``run_side_effects``: names of idempotent
    handlers that may run."""

    candidate: HookApp
    run_side_effects: Collection[str] = ()
    # Applied to the candidate's answer before it is compared with a recorded one, which went
    # through the same default rules when it was written.
    redactor: Redactor = field(default_factory=Redactor)

    def side_effect_handlers(self) -> list[str]:
        return [h.name for h in self.candidate.handlers if h.idempotent]

    def replay(
        self,
        decisions: Iterable[RecordedDecision],
        progress: Callable[[], None] | None = None,
    ) -> Iterator[Outcome]:
        crashes = _CrashLog({h.name for h in self.candidate.handlers})
        with asyncio.Runner() as runner, crashes.installed():
            for decision in decisions:
                outcome = self._one(decision, runner)
                if crashes.current:
                    outcome = replace(outcome, crashes=crashes.take())
                yield outcome
                if progress is not None:
                    progress()

    def _one(self, recorded: RecordedDecision, runner: asyncio.Runner) -> Outcome:
        if recorded.incomplete is not None or recorded.input is None:
            why = recorded.incomplete or "the record holds no input"
            return Outcome(recorded, not_replayed="incomplete", why=why)
        try:
            event = parse_event(recorded.input)
        except Exception as exc:  # the recorded input is not one of the event's inputs
            why = f"the input is not a valid {recorded.event} input: {_one_line(exc)}"
            return Outcome(recorded, not_replayed="unreadable", why=why)
        handlers = self.candidate.matching(event)
        held = [h.name for h in handlers if h.idempotent and h.name not in self.run_side_effects]
        if held:
            why = (
                f"{', '.join(held)} has side effects (idempotent=True); --run-side-effects runs it"
            )
            return Outcome(recorded, not_replayed="side_effects", why=why)
        answer = runner.run(self.candidate.answer(event, handlers, transport="replay"))
        output = answer.output
        verdict, differences = compare(
            recorded.output,
            self.redactor.output(output),
            was_failed=recorded.failed,
            now_failed=answer.failed,
        )
        name = event.hook_event_name
        candidates = {}
        for inv in answer.invocations:
            decision, reason = invocation_decision(inv, name)
            rendered = inv.output.render(name) if inv.output is not None else None
            candidates[inv.handler.name] = handler_aspects(
                decision,
                reason,
                self.redactor.output(rendered) if rendered else rendered,
                inv.status.value,
                inv.error,
            )
        recorded_by_name = {h.name: h for h in recorded.handlers}
        names = [*recorded_by_name, *(n for n in candidates if n not in recorded_by_name)]
        parts = []
        for handler_name in names:
            was = _recorded_aspects(recorded_by_name.get(handler_name))
            now = candidates.get(handler_name) or aspects(None)
            part_verdict, part_differences = compare_aspects(was, now)
            parts.append(HandlerOutcome(handler_name, part_verdict, tuple(part_differences)))
        return Outcome(recorded, verdict, tuple(differences), tuple(parts), output)


def _recorded_aspects(handler: RecordedHandler | None) -> Any:
    if handler is None:  # the handler did not take part: no opinion
        return aspects(None)
    return handler_aspects(
        handler.decision, handler.reason, handler.output, handler.status, handler.error
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


class _CrashLog(logging.Filter):
    """On the core's logger while a replay runs: lets through the first traceback of each
    :class:`Crash` and drops the rest, keeping the crashes of the decision being answered
    (:attr:`current`). A replay answers one decision at a time, in one thread."""

    def __init__(self, handler_names: Collection[str]) -> None:
        super().__init__()
        self.handler_names = handler_names
        self.logged: set[Crash] = set()
        self.current: list[Crash] = []

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        # the core's own logger (handler_kit.core.app logs a handler's failure there); a
        # filter of a logger sees only what is logged on it, not on its children
        log = logging.getLogger("handler_kit")
        log.addFilter(self)
        try:
            yield
        finally:
            log.removeFilter(self)

    def take(self) -> tuple[Crash, ...]:
        crashes, self.current = tuple(self.current), []
        return crashes

    def filter(self, record: logging.LogRecord) -> bool:
        crash = self._crash(record)
        if crash is None:
            return True
        self.current.append(crash)
        if crash in self.logged:
            return False
        self.logged.add(crash)
        # so that a reader of the log does not take it for the only one
        record.msg = f"{record.msg} (logged once in a replay: the report counts the decisions)"
        return True

    def _crash(self, record: logging.LogRecord) -> Crash | None:
        """The crash a record logs: a traceback, naming a handler of the candidate first."""
        info = record.exc_info
        args = record.args
        if not info or info[1] is None or not isinstance(args, tuple) or not args:
            return None
        if args[0] not in self.handler_names:
            return None
        exc = info[1]
        return Crash(
            str(args[0]), type(exc).__name__, _raised_at(exc.__traceback__), _one_line(exc)
        )


def _raised_at(tb: TracebackType | None) -> str:
    """FILE:LINE of a traceback's innermost frame, relative to the working directory when it
    is under it (the candidate's own files usually are)."""
    if tb is None:
        return "unknown"
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename
    with contextlib.suppress(ValueError):
        relative = os.path.relpath(path)
        if not relative.startswith(os.pardir):
            path = relative
    return f"{path}:{tb.tb_lineno}"
