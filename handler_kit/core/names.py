"""Names shared by every layer, once, with no import beyond the standard library: the hook
events and the statuses of a handler run.

The event lists here are generated (``make generate``) from the one table of the events,
:data:`handler_kit.core._event_table.EVENTS`, as literals: processes that must start fast (a
command hook, the audit writer) import this and nothing heavier, and pay nothing for the table.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """What became of one handler run (a ``str``: records and metrics carry the value)."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    FAIL_CLOSED = "fail_closed"
    LOOP_GUARDED = "loop_guarded"


# <generated: lists> from core/_event_table.py by `make generate`; do not edit
# Every event name, in the order of Claude Code's docs, then Codex's own (Interrupt).
EVENT_NAMES: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "PostToolUseFailure",
    "PostToolBatch",
    "PermissionRequest",
    "PermissionDenied",
    "SubagentStart",
    "SubagentStop",
    "StopFailure",
    "SessionEnd",
    "Setup",
    "InstructionsLoaded",
    "UserPromptExpansion",
    "MessageDisplay",
    "Notification",
    "TaskCreated",
    "TaskCompleted",
    "TeammateIdle",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "PreCompact",
    "PostCompact",
    "Elicitation",
    "ElicitationResult",
    "Interrupt",
)
# The events Runbear runs.
RUNBEAR_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
)
# Events whose input has no field a matcher is tested against: the runtimes ignore a
# matcher there (each model's ``matcher_field`` is None).
MATCHERLESS_EVENTS: frozenset[str] = frozenset(
    {
        "CwdChanged",
        "Interrupt",
        "MessageDisplay",
        "PostToolBatch",
        "Stop",
        "TaskCompleted",
        "TaskCreated",
        "TeammateIdle",
        "UserPromptSubmit",
        "WorktreeCreate",
        "WorktreeRemove",
    }
)
# Events whose safe answer, when a fail-closed handler fails, is known: the denying
# events first, as the error messages and the docs name them.
SAFE_DECISIONS: dict[str, str] = {
    "PreToolUse": "deny",
    "PermissionRequest": "deny",
    "UserPromptSubmit": "block",
    "UserPromptExpansion": "block",
}
# Events with a stop loop: a block there while ``stop_hook_active`` is dropped.
LOOP_GUARDED_EVENTS: frozenset[str] = frozenset({"Stop", "SubagentStop"})
# A handler's timeout where it is not the general default, and the most it may be.
DEFAULT_TIMEOUTS: dict[str, float] = {"SessionStart": 5.0, "Interrupt": 1.0}
MAX_TIMEOUTS: dict[str, float] = {"Interrupt": 2.0}
# </generated: lists>
