"""Replaying the decision log: every recorded decision's input answered again by a candidate
app, and what the candidate would change (``handler-kit replay``).

- :mod:`~handler_kit.replay.recorded`: a decision as recorded (schema 1 or 2), and whether
  its input is whole;
- :mod:`~handler_kit.replay.sources`: reading them from a JSON-lines log, SQLite or Postgres;
- :mod:`~handler_kit.replay.run`: the candidate's answers, in process;
- :mod:`~handler_kit.replay.classify`: tightened, loosened, changed or unchanged, and how;
- :mod:`~handler_kit.replay.report` and :mod:`~handler_kit.replay.regressions`: the reports,
  and the changes written as policy test cases.
"""

from __future__ import annotations

from handler_kit.replay.classify import Difference, Verdict, compare
from handler_kit.replay.recorded import RecordedDecision, RecordedHandler, from_record
from handler_kit.replay.regressions import CasesError, write_cases
from handler_kit.replay.report import (
    Summary,
    json_report,
    junit_report,
    nothing_replayed,
    text_report,
)
from handler_kit.replay.run import Crash, HandlerOutcome, Outcome, Replayer
from handler_kit.replay.sources import Filters, Source, SourceError, open_source

__all__ = [
    "CasesError",
    "Crash",
    "Difference",
    "Filters",
    "HandlerOutcome",
    "Outcome",
    "RecordedDecision",
    "RecordedHandler",
    "Replayer",
    "Source",
    "SourceError",
    "Summary",
    "Verdict",
    "compare",
    "from_record",
    "json_report",
    "junit_report",
    "nothing_replayed",
    "open_source",
    "text_report",
    "write_cases",
]
