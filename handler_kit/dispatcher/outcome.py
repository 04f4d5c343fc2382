"""What the runtime made of one event: the decision, the context, and each handler's fate.

:meth:`Outcome.to_json` is the line ``handler-kit dispatch`` prints (DESIGN.md section 6)::

    {"event": "PreToolUse", "decision": "deny", "reason": "...", "additional_context": [],
     "updated_input": null,
     "handlers": [{"index": 0, "type": "http", "status": "ok", "duration_ms": 4.1,
                   "error": null}]}

Attributes that are not part of that line (each handler's parsed output and warnings, the input
actually sent, the merge) stay on the objects for tests to inspect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from handler_kit.core.merge import Merged
from handler_kit.core.outputs import Output

Status = Literal["ok", "failed", "timeout", "skipped"]


@dataclass(slots=True)
class HandlerReport:
    """One handler of the event, in document order across groups."""

    index: int
    type: str
    status: Status
    duration_ms: float = 0.0
    error: str | None = None
    output: Output | None = None
    warnings: list[str] = field(default_factory=list)
    fail_closed: bool = False
    # What the mcp_tool handler was called with, after templates and schema filtering.
    arguments: dict[str, Any] | None = None
    http_status: int | None = None
    http_body: bytes | None = None  # what was read of the response (at most 1 MB)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "type": self.type,
            "status": self.status,
            "duration_ms": round(self.duration_ms, 1),
            "error": self.error,
        }


@dataclass(slots=True)
class Outcome:
    """The runtime's reading of one event.

    ``decision``: ``allow``/``deny``/None on PreToolUse, ``block``/None elsewhere, None always
    on SessionStart. ``additional_context``: what reaches the model, capped, in document order
    (after de-duplication on UserPromptSubmit; empty on PreToolUse and Stop, which do not read
    context). ``continuation``: on a blocked Stop, the instruction the agent continues with.
    """

    event: str
    decision: str | None = None
    reason: str | None = None
    additional_context: list[str] = field(default_factory=list)
    updated_input: dict[str, Any] | None = None
    handlers: list[HandlerReport] = field(default_factory=list)
    input: dict[str, Any] = field(default_factory=dict)
    merged: Merged | None = None
    continuation: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "decision": self.decision,
            "reason": self.reason,
            "additional_context": list(self.additional_context),
            "updated_input": self.updated_input,
            "handlers": [h.to_json() for h in self.handlers],
        }

    def to_json_line(self) -> str:
        """One compact JSON line, as ``handler-kit dispatch`` prints it."""
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(", ", ": "))

    @property
    def statuses(self) -> list[str]:
        """Each handler's status in document order: handy in assertions."""
        return [h.status for h in self.handlers]
