"""The one table of the hook events, :data:`EVENTS`: a row per event, with everything any
other part of handler-kit lists per event.

Read by the generator (``make generate``, :mod:`handler_kit.core._generate`) and the tests,
never at run time: the lists derived from it (:mod:`handler_kit.core.names`' event lists, safe
decisions, loop-guarded events and timeouts, the per-event decorators, the public exports, the
docs' event table) are written out as literals, so a command hook, which imports the core on
every tool call, pays nothing for the table.

A new event is a row here and its model, then ``make generate``.
"""

from __future__ import annotations


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

# The hook events, in the order of Claude Code's docs, then Codex's own (Interrupt). Every
# other list of events is generated from this table (``make generate``) or checked against it
# by a test (the models' matcher fields, the command dialects' lists, the Runbear document).
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
