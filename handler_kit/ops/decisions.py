"""One log line per decision: what ``handler-kit dev`` shows on its console and what
``handler-kit serve --log-format text|json`` writes for production.

:class:`DecisionLog` is an answer observer (:meth:`HookApp.extended
<handler_kit.core.app.HookApp.extended>`): after every answer it logs one INFO record on the
``handler_kit.decisions`` logger, carrying the answer's fields (event, handlers, tool, decision,
duration, reason, status) as ``record.decision``. The two formatters below render that record:

- :class:`TextLogFormatter`: an aligned line for a person at a terminal::

      PreToolUse  refund_gate  issue_refund  -> deny  1.1 ms  "Refunds over $500 need a hu..."

  and every other record as ``LEVEL logger: message``;
- :class:`JsonLogFormatter`: one JSON object per line, for a log collector; a decision's
  fields are top-level keys, every other record is ``{"time", "level", "logger", "message"}``.

What is never logged: tool inputs, prompts, tokens. The reason is the handler's own text for
the model (truncated); a principal is the authenticator's name for the caller (``token#0``),
never the credential. The tool name and session id come from the caller: the text line
escapes their control characters (a newline cannot forge a line, an escape sequence cannot
reach the terminal) and cuts each column at :data:`TEXT_COLUMN_CHARS`; the JSON line keeps
at most :data:`JSON_FIELD_CHARS` of each.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import TYPE_CHECKING, Any

from handler_kit.ops.audit.records import output_decision, worst_status

if TYPE_CHECKING:
    from handler_kit.core.app import HookApp
    from handler_kit.core.vocabulary import Answer

__all__ = ["LOGGER_NAME", "DecisionLog", "JsonLogFormatter", "TextLogFormatter"]

LOGGER_NAME = "handler_kit.decisions"
# the reason as the console shows it: enough to recognise it, short enough for one line
TEXT_REASON_CHARS = 60
# the reason as the JSON line keeps it: whole in practice, bounded against a runaway handler
JSON_REASON_CHARS = 1000
# the decision column fits every value below without moving the next one
_DECISION_WIDTH = len("-> timeout")
# a column (event, handlers, tool) as the console shows it: one odd tool name must not widen
# every later line
TEXT_COLUMN_CHARS = 40
# a caller's text (tool name, session id) as the JSON line keeps it
JSON_FIELD_CHARS = 200
# what a terminal or a line-based log reader would act on: C0 and C1 controls, DEL, the
# Unicode line and paragraph separators, and the bidirectional overrides that reorder text
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class DecisionLog:
    """The observer that logs each answer as one record on ``handler_kit.decisions``.

    Column widths start at what ``hook_app``'s handlers need (its longest event and handler
    names) and only grow, so the console's columns line up from the first line on.
    """

    def __init__(self, hook_app: HookApp, logger: logging.Logger | None = None) -> None:
        self.app = hook_app.name
        self.logger = logger if logger is not None else logging.getLogger(LOGGER_NAME)
        self._widths = [
            max((len(h.event) for h in hook_app.handlers), default=10),
            max((len(h.name) for h in hook_app.handlers), default=1),
            12,  # tool names vary the most: a floor, then whatever was seen
        ]

    def __call__(self, answer: Answer, transport: str, context: dict[str, Any]) -> None:
        if not self.logger.isEnabledFor(logging.INFO):
            return
        fields = decision_fields(answer)
        fields["app"] = self.app
        fields["transport"] = transport
        principal = context.get("principal")
        if principal is not None:
            fields["principal"] = principal
        self.logger.info(self.line(fields), extra={"decision": fields})

    def line(self, fields: dict[str, Any]) -> str:
        """The console form of one decision (columns padded to the widest seen so far)."""
        columns = [
            _shown(fields["event"]),
            _shown(",".join(fields["handlers"]) or "-"),
            _shown(fields["tool"] or "-"),
        ]
        for index, text in enumerate(columns):
            self._widths[index] = max(self._widths[index], len(text))
        padded = "  ".join(text.ljust(self._widths[i]) for i, text in enumerate(columns))
        parts = [
            padded,
            f"-> {fields['decision']}".ljust(_DECISION_WIDTH),
            f"{fields['duration_ms']:.1f} ms",
        ]
        if fields["status"] != "ok":
            parts.append(f"[{fields['status']}]")
        reason = fields["reason"]
        if reason:
            if len(reason) > TEXT_REASON_CHARS:
                reason = reason[: TEXT_REASON_CHARS - 3] + "..."
            # JSON escapes the C0 controls, not DEL, C1 or the separators
            parts.append(printable(json.dumps(reason, ensure_ascii=False)))
        return "  ".join(parts)


def printable(text: str) -> str:
    """``text`` with every control character written as an escape (``\\u001b``): one log
    line stays one line, and handler or caller text cannot move the cursor, colour the
    terminal or forge a line of its own."""
    return _CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _shown(text: str) -> str:
    text = printable(text)
    if len(text) > TEXT_COLUMN_CHARS:
        return text[: TEXT_COLUMN_CHARS - 3] + "..."
    return text


def _bounded(value: Any) -> str | None:
    """A caller's text for the JSON line: a string, at most :data:`JSON_FIELD_CHARS`."""
    if not isinstance(value, str):
        return None
    return value if len(value) <= JSON_FIELD_CHARS else value[: JSON_FIELD_CHARS - 3] + "..."


def decision_fields(answer: Answer) -> dict[str, Any]:
    """The plain fields of one answer: what both forms show."""
    event = answer.event
    invocations = answer.invocations
    decision, reason = output_decision(answer.output)
    if answer.failed:
        # no answer to give: the webhook says 500, MCP an error result, the agent proceeds
        decision = "timeout" if answer.timed_out else "error"
        reason = next((inv.error for inv in invocations if inv.error), None)
    elif decision is None:
        specific = answer.output.get("hookSpecificOutput")
        has_context = isinstance(specific, dict) and specific.get("additionalContext")
        decision = "context" if has_context else "none"
    if isinstance(reason, str) and len(reason) > JSON_REASON_CHARS:
        reason = reason[: JSON_REASON_CHARS - 3] + "..."
    tool = getattr(event, "tool_name", None)
    return {
        "event": event.hook_event_name,
        "handlers": [inv.handler.name for inv in invocations],
        "tool": _bounded(tool),
        "decision": decision,
        "reason": reason if isinstance(reason, str) else None,
        # handlers of one event run together from the answer's start: the slowest is its time
        "duration_ms": round(max((inv.latency_ms for inv in invocations), default=0.0), 1),
        "status": worst_status(inv.status for inv in invocations),
        "session_id": _bounded(getattr(event, "session_id", None)),
    }


class TextLogFormatter(logging.Formatter):
    """Decision records as their aligned line; every other record as ``LEVEL logger: msg``."""

    def __init__(self, fmt: str | None = None, **options: Any) -> None:
        super().__init__(fmt or "%(levelname)s %(name)s: %(message)s", **options)

    def format(self, record: logging.LogRecord) -> str:
        if hasattr(record, "decision"):
            return record.getMessage()
        return super().format(record)


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (UTC, ms), ``level``, ``logger``, then a
    decision's fields or the ``message`` (with ``exception`` when there is one)."""

    def __init__(self, *args: Any, **options: Any) -> None:
        # the dictConfig of uvicorn's own formatters passes fmt/use_colors: ignored here
        super().__init__()

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": _iso(record.created),
            "level": record.levelname,
            "logger": record.name,
        }
        fields = getattr(record, "decision", None)
        if isinstance(fields, dict):
            out.update(fields)
        else:
            out["message"] = record.getMessage()
            if record.exc_info:
                out["exception"] = self.formatException(record.exc_info)
        # valid JSON escapes: what json.dumps leaves raw (DEL, C1, separators, bidi) included
        return printable(json.dumps(out, ensure_ascii=False, default=str))


def _iso(created: float) -> str:
    seconds = int(created)
    millis = int((created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
