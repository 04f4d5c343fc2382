"""Hook inputs: one pydantic model per event, lenient by design.

Runtimes add fields to hook inputs release after release (``cwd``, ``permission_mode``,
``prompt_id``, ``effort``, an ``mcp_server`` object...), so every model keeps unknown fields
(``extra="allow"``, reachable as attributes and in ``model_extra``) and every field but
``hook_event_name`` may be missing or null. Types are still checked where a field has one: a
``tool_name`` that is a number is a bad request, not something to guess about.

Schemas are built on first use (``defer_build``), and the classes of the Claude-Code-only events
are only defined on first use (they live in :mod:`handler_kit._claude_events`): a command hook
that handles one PreToolUse pays for a few classes and one schema, not forty.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from handler_kit._claude_events import (
        ConfigChange,
        CwdChanged,
        DirectoryAdded,
        Elicitation,
        ElicitationResult,
        FileChanged,
        InstructionsLoaded,
        MessageDisplay,
        Notification,
        PermissionDenied,
        PermissionRequest,
        PostCompact,
        PostToolBatch,
        PostToolUseFailure,
        PreCompact,
        SessionEnd,
        Setup,
        StopFailure,
        SubagentStart,
        SubagentStop,
        TaskCompleted,
        TaskCreated,
        TeammateIdle,
        UserPromptExpansion,
        WorktreeCreate,
        WorktreeRemove,
    )

__all__ = [
    "EVENT_MODELS",
    "EVENT_NAMES",
    "RUNBEAR_EVENTS",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "Elicitation",
    "ElicitationResult",
    "FileChanged",
    "HookEvent",
    "InstructionsLoaded",
    "MessageDisplay",
    "Notification",
    "PermissionDenied",
    "PermissionRequest",
    "PostCompact",
    "PostToolBatch",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PreToolUse",
    "SessionEnd",
    "SessionStart",
    "Setup",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "TaskCompleted",
    "TaskCreated",
    "TeammateIdle",
    "UserPromptExpansion",
    "UserPromptSubmit",
    "WorktreeCreate",
    "WorktreeRemove",
    "model_for",
    "parse_event",
]

_CONFIG = ConfigDict(extra="allow", defer_build=True, frozen=False, populate_by_name=True)


class HookEvent(BaseModel):
    """Fields every event may carry: Claude Code's common fields and Runbear's shared ones.

    Also the model of an event this module does not know: it parses with every field kept.
    """

    model_config = _CONFIG
    # The field a matcher is tested against for this event (None: the event has no matcher).
    matcher_field: ClassVar[str | None] = None

    hook_event_name: str = Field(description="Name of the event that fired the hook.")
    session_id: str | None = Field(None, description="Session (Runbear: thread) identifier.")
    transcript_path: str | None = Field(None, description="Path of the session transcript.")
    cwd: str | None = Field(None, description="Current working directory of the agent.")
    permission_mode: str | None = Field(None, description="Permission mode of the session.")
    prompt_id: str | None = Field(None, description="Identifier of the current user prompt.")
    effort: dict[str, Any] | None = Field(None, description="Reasoning effort, e.g. {level}.")
    agent_id: str | None = Field(None, description="Agent (or subagent) identifier.")
    agent_type: str | None = Field(None, description="Agent type, for --agent or subagents.")
    agent_name: str | None = Field(None, description="Runbear: display name of the agent.")
    org_id: str | None = Field(None, description="Runbear: organization identifier.")
    thread_id: str | None = Field(None, description="Runbear: conversation thread identifier.")
    turn_id: str | None = Field(None, description="Runbear: identifier of the current turn.")
    channel: str | None = Field(None, description="Runbear: channel kind, e.g. slack.")
    channel_id: str | None = Field(None, description="Runbear: channel identifier.")
    channel_user_id: str | None = Field(None, description="Runbear: user id in the channel.")
    user_name: str | None = Field(None, description="Runbear: display name of the user.")
    user_email: str | None = Field(None, description="Runbear: e-mail address of the user.")
    prompt: str | None = Field(None, description="The user message of the current turn.")

    def matcher_value(self) -> str | None:
        """The value this event's matchers are tested against, if the event has matchers."""
        field = self.matcher_field
        if field is None:
            return None
        value = getattr(self, field, None)
        return value if isinstance(value, str) else None


class _ToolEvent(HookEvent):
    matcher_field: ClassVar[str | None] = "tool_name"

    tool_name: str | None = Field(None, description="Name of the tool as the model sees it.")
    tool_input: dict[str, Any] | None = Field(None, description="Arguments of the tool call.")
    tool_use_id: str | None = Field(None, description="Identifier of the tool call.")


class SessionStart(HookEvent):
    """A session (Runbear: thread) starts. Context only."""

    matcher_field: ClassVar[str | None] = "source"
    source: str | None = Field(None, description="startup, resume, clear, compact or fork.")
    model: str | None = Field(None, description="Model of the session, when known.")
    session_title: str | None = Field(None, description="Title of the session, when set.")


class UserPromptSubmit(HookEvent):
    """A user message arrives, before the model sees it. Context or block."""

    session_title: str | None = Field(None, description="Title of the session, when set.")


class PreToolUse(_ToolEvent):
    """Before a tool call: allow, deny, ask, or rewrite its arguments."""


class PostToolUse(_ToolEvent):
    """After a successful tool call: context next to the result, or block feedback."""

    tool_response: Any = Field(None, description="Result of the tool: any JSON value.")
    duration_ms: int | None = Field(None, description="How long the tool ran.")


class Stop(HookEvent):
    """The reply is ready. A block sends the agent back to work, once."""

    stop_hook_active: bool | None = Field(
        None, description="True on a continuation caused by an earlier Stop block."
    )
    last_assistant_message: str | None = Field(None, description="The reply text.")
    background_tasks: list[Any] | None = Field(None, description="Running background tasks.")
    session_crons: list[Any] | None = Field(None, description="Scheduled prompts.")


# Every event name, in the order of the docs; the models of the five Runbear events are defined
# above, the others in handler_kit._claude_events, imported on first use (see _EventModels).
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
)
_EAGER: dict[str, type[HookEvent]] = {
    cls.__name__: cls for cls in (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop)
}
_LAZY_MODULE = "handler_kit._claude_events"


class _EventModels(Mapping[str, "type[HookEvent]"]):
    """``{event name: model}`` for every known event, defining a model only when it is asked for.

    Creating a pydantic class costs about a millisecond even with ``defer_build`` (its fields are
    collected at class creation); a command hook, a new process per tool call, should pay for the
    models it uses, not for all of them. Iteration and ``in`` never import anything.
    """

    def __getitem__(self, name: str) -> type[HookEvent]:
        model = _EAGER.get(name)
        if model is not None:
            return model
        if name not in _NAME_SET:
            raise KeyError(name)
        return getattr(importlib.import_module(_LAZY_MODULE), name)

    def __contains__(self, name: object) -> bool:
        return name in _NAME_SET

    def __iter__(self) -> Iterator[str]:
        return iter(EVENT_NAMES)

    def __len__(self) -> int:
        return len(EVENT_NAMES)

    def __repr__(self) -> str:
        return f"EVENT_MODELS({', '.join(EVENT_NAMES)})"


_NAME_SET = frozenset(EVENT_NAMES)
EVENT_MODELS: Mapping[str, type[HookEvent]] = _EventModels()


def __getattr__(name: str) -> Any:
    """The Claude-Code-only event models, defined on first access (PEP 562)."""
    if name in _NAME_SET:
        return getattr(importlib.import_module(_LAZY_MODULE), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The five events Runbear runs; the others are Claude Code's.
RUNBEAR_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
)


def model_for(event_name: str) -> type[HookEvent]:
    """The model of ``event_name``; the generic :class:`HookEvent` for an unknown name."""
    model = _EAGER.get(event_name)
    if model is not None:
        return model
    return EVENT_MODELS[event_name] if event_name in _NAME_SET else HookEvent


def parse_event(data: dict[str, Any] | bytes | str) -> HookEvent:
    """Parse one hook input (a dict, or JSON text) into its event's model.

    Raises ``pydantic.ValidationError`` when a known field has the wrong type or
    ``hook_event_name`` is missing, and ``ValueError`` when JSON text is not an object.
    """
    if isinstance(data, dict):
        name = data.get("hook_event_name")
        return model_for(name if isinstance(name, str) else "").model_validate(data)
    import json

    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueError("a hook input must be a JSON object")
    return parse_event(obj)
