"""Names shared by every layer, once, with no import beyond the standard library: the hook
events and the statuses of a handler run.

The lists here are the single source for every other list of event names: the models, the
per-event decorators and the public exports are checked against them by tests. Processes that
must start fast (a command hook, the audit writer) import this and nothing heavier.
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

# The five events Runbear runs; the others are Claude Code's.
RUNBEAR_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
)

# Events whose input has no field a matcher is tested against: the runtimes ignore a matcher
# there (each model's ``matcher_field`` is None).
MATCHERLESS_EVENTS: frozenset[str] = frozenset(
    {
        "UserPromptSubmit",
        "Stop",
        "PostToolBatch",
        "MessageDisplay",
        "TaskCreated",
        "TaskCompleted",
        "TeammateIdle",
        "CwdChanged",
        "WorktreeCreate",
        "WorktreeRemove",
        "Interrupt",
    }
)
