"""Names shared by every layer, once, with no import beyond the standard library: the hook
events and the statuses of a handler run.

:data:`EVENTS` is the one table of the events: every other list of event names, safe decisions,
loop-guarded events and timeouts is derived from it, here or by ``make generate``
(:mod:`handler_kit.core._generate` writes the per-event decorators and the public exports), or
checked against it by a test. Processes that
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


class EventSpec:
    """One hook event as every other list of handler-kit sees it: a row of :data:`EVENTS`.

    ``module`` is the module of :mod:`handler_kit.core` that defines the event's model (a class
    named as the event); ``matcher_field`` the field of the input a matcher is tested against
    (None: the runtimes ignore a matcher there); ``safe_decision`` what a fail-closed handler
    answers when it fails (None: no handler of the event can fail closed); ``loop_guarded``
    whether the event has a stop loop to guard; ``runtimes`` the runtimes that send the event;
    ``default_timeout`` and ``max_timeout`` a handler's timeout where it differs from the
    general default, and the most it may be; ``note`` a sentence added to the decorator's
    docstring.
    """

    __slots__ = (
        "default_timeout",
        "loop_guarded",
        "matcher_field",
        "max_timeout",
        "module",
        "name",
        "note",
        "runtimes",
        "safe_decision",
    )

    def __init__(
        self,
        name: str,
        module: str,
        matcher_field: str | None,
        *,
        safe_decision: str | None = None,
        loop_guarded: bool = False,
        runtimes: tuple[str, ...] = ("claude-code",),
        default_timeout: float | None = None,
        max_timeout: float | None = None,
        note: str = "",
    ) -> None:
        self.name = name
        self.module = module
        self.matcher_field = matcher_field
        self.safe_decision = safe_decision
        self.loop_guarded = loop_guarded
        self.runtimes = runtimes
        self.default_timeout = default_timeout
        self.max_timeout = max_timeout
        self.note = note

    @property
    def decorator(self) -> str:
        """The name of the event's decorator: ``PreToolUse`` -> ``pre_tool_use``."""
        return "".join("_" + c.lower() if c.isupper() else c for c in self.name).lstrip("_")

    def __repr__(self) -> str:
        return f"EventSpec({self.name!r})"


_BASE = "_base_events"
_CLAUDE = "_claude_events"
_CC = "claude-code"
_CODEX = "codex"
_POSIT = "posit"
_RUNBEAR = "runbear"

# The one table of the hook events, in the order of Claude Code's docs, then Codex's own
# (Interrupt). Every other list of events is derived from it, here or by the generator
# (``make generate``: the per-event decorators, the public exports), or checked against it by
# a test (the models' matcher fields, the command dialects' lists).
EVENTS: tuple[EventSpec, ...] = (
    EventSpec(
        "SessionStart",
        _BASE,
        "source",
        runtimes=(_CC, _CODEX, _POSIT, _RUNBEAR),
        default_timeout=5.0,
    ),
    EventSpec(
        "UserPromptSubmit",
        "_prompt_event",
        None,
        safe_decision="block",
        runtimes=(_CC, _CODEX, _POSIT, _RUNBEAR),
    ),
    EventSpec(
        "PreToolUse",
        _BASE,
        "tool_name",
        safe_decision="deny",
        runtimes=(_CC, _CODEX, _POSIT, _RUNBEAR),
    ),
    EventSpec("PostToolUse", _BASE, "tool_name", runtimes=(_CC, _CODEX, _POSIT, _RUNBEAR)),
    EventSpec("Stop", _BASE, None, loop_guarded=True, runtimes=(_CC, _CODEX, _POSIT, _RUNBEAR)),
    EventSpec("PostToolUseFailure", _CLAUDE, "tool_name"),
    EventSpec("PostToolBatch", _CLAUDE, None),
    EventSpec(
        "PermissionRequest",
        _CLAUDE,
        "tool_name",
        safe_decision="deny",
        runtimes=(_CC, _CODEX),
    ),
    EventSpec("PermissionDenied", _CLAUDE, "tool_name"),
    EventSpec("SubagentStart", _CLAUDE, "agent_type", runtimes=(_CC, _CODEX, _POSIT)),
    EventSpec(
        "SubagentStop",
        _CLAUDE,
        "agent_type",
        loop_guarded=True,
        runtimes=(_CC, _CODEX, _POSIT),
    ),
    EventSpec("StopFailure", _CLAUDE, "error"),
    EventSpec("SessionEnd", _CLAUDE, "reason", runtimes=(_CC, _CODEX, _POSIT)),
    EventSpec("Setup", _CLAUDE, "trigger"),
    EventSpec("InstructionsLoaded", _CLAUDE, "load_reason"),
    EventSpec("UserPromptExpansion", _CLAUDE, "command_name", safe_decision="block"),
    EventSpec("MessageDisplay", _CLAUDE, None),
    EventSpec("Notification", _CLAUDE, "notification_type", runtimes=(_CC, _POSIT)),
    EventSpec("TaskCreated", _CLAUDE, None),
    EventSpec("TaskCompleted", _CLAUDE, None),
    EventSpec("TeammateIdle", _CLAUDE, None),
    EventSpec("ConfigChange", _CLAUDE, "source"),
    EventSpec("CwdChanged", _CLAUDE, None),
    EventSpec("DirectoryAdded", _CLAUDE, "source"),
    EventSpec("FileChanged", _CLAUDE, "file_path"),
    EventSpec("WorktreeCreate", _CLAUDE, None),
    EventSpec("WorktreeRemove", _CLAUDE, None),
    EventSpec("PreCompact", _CLAUDE, "trigger", runtimes=(_CC, _CODEX)),
    EventSpec("PostCompact", _CLAUDE, "trigger", runtimes=(_CC, _CODEX)),
    EventSpec("Elicitation", _CLAUDE, "mcp_server_name"),
    EventSpec("ElicitationResult", _CLAUDE, "mcp_server_name"),
    EventSpec(
        "Interrupt",
        _CLAUDE,
        None,
        runtimes=(_CODEX,),
        # Codex waits at most 3 s on Interrupt, and a command hook is installed with a second
        # more than the handler's timeout for its start-up.
        default_timeout=1.0,
        max_timeout=2.0,
        note=(
            "Codex reads only ``systemMessage`` of its answer and waits at most 3 s: the "
            "timeout defaults to 1 s and may be at most 2 s (a command hook is installed with "
            "a second more)."
        ),
    ),
)

# Every event name, in the table's order.
EVENT_NAMES: tuple[str, ...] = tuple(e.name for e in EVENTS)

# The five events Runbear runs; the others are Claude Code's (and Codex's).
RUNBEAR_EVENTS: tuple[str, ...] = tuple(e.name for e in EVENTS if _RUNBEAR in e.runtimes)

# Events whose input has no field a matcher is tested against: the runtimes ignore a matcher
# there (each model's ``matcher_field`` is None).
MATCHERLESS_EVENTS: frozenset[str] = frozenset(e.name for e in EVENTS if e.matcher_field is None)

# Events whose safe answer, when a fail-closed handler fails, is known: the denying events
# first, as the error messages and the docs name them.
SAFE_DECISIONS: dict[str, str] = {
    e.name: decision
    for decision in ("deny", "block")
    for e in EVENTS
    if e.safe_decision == decision
}

# Events with a stop loop: a block there while ``stop_hook_active`` is dropped by the guard.
LOOP_GUARDED_EVENTS: frozenset[str] = frozenset(e.name for e in EVENTS if e.loop_guarded)

# A handler's timeout where it is not the general default, and the most it may be.
DEFAULT_TIMEOUTS: dict[str, float] = {
    e.name: e.default_timeout for e in EVENTS if e.default_timeout is not None
}
MAX_TIMEOUTS: dict[str, float] = {
    e.name: e.max_timeout for e in EVENTS if e.max_timeout is not None
}
