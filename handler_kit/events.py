"""Hook inputs: one pydantic model per event, lenient by design.

Runtimes add fields to hook inputs release after release (``cwd``, ``permission_mode``,
``prompt_id``, ``effort``, an ``mcp_server`` object...), so every model keeps unknown fields
(``extra="allow"``, reachable as attributes and in ``model_extra``) and every field but
``hook_event_name`` may be missing or null. Types are still checked where a field has one: a
``tool_name`` that is a number is a bad request, not something to guess about.

Schemas are built on first use (``defer_build``): a command hook that handles one PreToolUse
pays for one model, not forty.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

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


class PostToolUseFailure(_ToolEvent):
    """After a tool call that failed."""

    error: str | None = Field(None, description="Error message of the failed call.")
    is_interrupt: bool | None = Field(None, description="Whether the user interrupted it.")


class PostToolBatch(HookEvent):
    """After a batch of parallel tool calls."""

    tool_calls: list[Any] | None = Field(None, description="The calls of the batch.")


class PermissionRequest(_ToolEvent):
    """A permission prompt would be shown: allow or deny it."""

    permission_suggestions: list[Any] | None = Field(
        None, description="Permission updates the user could pick."
    )


class PermissionDenied(_ToolEvent):
    """A tool call was denied by the permission system."""

    reason: str | None = Field(None, description="Why the call was denied.")


class Stop(HookEvent):
    """The reply is ready. A block sends the agent back to work, once."""

    stop_hook_active: bool | None = Field(
        None, description="True on a continuation caused by an earlier Stop block."
    )
    last_assistant_message: str | None = Field(None, description="The reply text.")
    background_tasks: list[Any] | None = Field(None, description="Running background tasks.")
    session_crons: list[Any] | None = Field(None, description="Scheduled prompts.")


class SubagentStop(Stop):
    """A subagent finished. Same contract as Stop."""

    matcher_field: ClassVar[str | None] = "agent_type"
    agent_transcript_path: str | None = Field(None, description="The subagent's transcript.")


class SubagentStart(HookEvent):
    """A subagent starts. Context only."""

    matcher_field: ClassVar[str | None] = "agent_type"


class StopFailure(HookEvent):
    """The turn ended on an API error."""

    matcher_field: ClassVar[str | None] = "error"
    error: str | None = Field(None, description="Error kind, e.g. rate_limit.")
    error_details: str | None = Field(None, description="Error details.")
    last_assistant_message: str | None = Field(None, description="The API error text.")


class SessionEnd(HookEvent):
    """The session ends."""

    matcher_field: ClassVar[str | None] = "reason"
    reason: str | None = Field(None, description="clear, resume, logout, prompt_input_exit...")


class Setup(HookEvent):
    """Repository setup (--init / --maintenance)."""

    matcher_field: ClassVar[str | None] = "trigger"
    trigger: str | None = Field(None, description="init or maintenance.")


class InstructionsLoaded(HookEvent):
    """An instructions file (CLAUDE.md...) was loaded."""

    matcher_field: ClassVar[str | None] = "load_reason"
    file_path: str | None = Field(None, description="The file loaded.")
    memory_type: str | None = Field(None, description="User, Project, Local or Managed.")
    load_reason: str | None = Field(None, description="Why it was loaded.")
    globs: list[Any] | None = Field(None, description="Path globs of the file.")
    trigger_file_path: str | None = Field(None, description="File that triggered the load.")
    parent_file_path: str | None = Field(None, description="File that included it.")


class UserPromptExpansion(HookEvent):
    """A slash command or MCP prompt expands into a prompt."""

    matcher_field: ClassVar[str | None] = "command_name"
    expansion_type: str | None = Field(None, description="slash_command or mcp_prompt.")
    command_name: str | None = Field(None, description="Name of the command.")
    command_args: str | None = Field(None, description="Arguments of the command.")
    command_source: str | None = Field(None, description="Where the command comes from.")


class MessageDisplay(HookEvent):
    """A message is displayed."""

    message_id: str | None = Field(None, description="Identifier of the message.")
    index: int | None = Field(None, description="Index of the chunk.")
    final: bool | None = Field(None, description="Whether this is the last chunk.")
    delta: str | None = Field(None, description="Text of the chunk.")


class Notification(HookEvent):
    """The agent shows a notification."""

    matcher_field: ClassVar[str | None] = "notification_type"
    message: str | None = Field(None, description="Notification text.")
    title: str | None = Field(None, description="Notification title.")
    notification_type: str | None = Field(None, description="Kind of notification.")


class TaskCreated(HookEvent):
    """A task is created."""

    task_id: str | None = Field(None, description="Task identifier.")
    task_subject: str | None = Field(None, description="Task subject.")
    task_description: str | None = Field(None, description="Task description.")
    teammate_name: str | None = Field(None, description="Teammate the task belongs to.")
    team_name: str | None = Field(None, description="Deprecated team name.")


class TaskCompleted(TaskCreated):
    """A task is completed."""


class TeammateIdle(HookEvent):
    """A teammate is idle."""

    teammate_name: str | None = Field(None, description="The idle teammate.")
    team_name: str | None = Field(None, description="Deprecated team name.")


class ConfigChange(HookEvent):
    """A settings file changed."""

    matcher_field: ClassVar[str | None] = "source"
    source: str | None = Field(None, description="Which settings changed.")
    file_path: str | None = Field(None, description="The settings file.")


class CwdChanged(HookEvent):
    """The working directory changed."""

    old_cwd: str | None = Field(None, description="Previous directory.")
    new_cwd: str | None = Field(None, description="New directory.")


class DirectoryAdded(HookEvent):
    """A directory was added to the workspace."""

    matcher_field: ClassVar[str | None] = "source"
    directory: str | None = Field(None, description="The directory.")
    source: str | None = Field(None, description="slash_command or register_repo_root.")


class FileChanged(HookEvent):
    """A watched file changed."""

    matcher_field: ClassVar[str | None] = "file_path"
    file_path: str | None = Field(None, description="The file.")
    event: str | None = Field(None, description="change, add or unlink.")


class WorktreeCreate(HookEvent):
    """A worktree is to be created."""

    name: str | None = Field(None, description="Name of the worktree.")


class WorktreeRemove(HookEvent):
    """A worktree is removed."""

    worktree_path: str | None = Field(None, description="Path of the worktree.")


class PreCompact(HookEvent):
    """Before context compaction."""

    matcher_field: ClassVar[str | None] = "trigger"
    trigger: str | None = Field(None, description="manual or auto.")
    custom_instructions: str | None = Field(None, description="Instructions for the summary.")


class PostCompact(HookEvent):
    """After context compaction."""

    matcher_field: ClassVar[str | None] = "trigger"
    trigger: str | None = Field(None, description="manual or auto.")
    compact_summary: str | None = Field(None, description="The summary.")


class Elicitation(HookEvent):
    """An MCP server asks the user for input."""

    matcher_field: ClassVar[str | None] = "mcp_server_name"
    mcp_server_name: str | None = Field(None, description="The asking MCP server.")
    message: str | None = Field(None, description="The question.")
    mode: str | None = Field(None, description="form or url.")
    url: str | None = Field(None, description="URL, in url mode.")
    elicitation_id: str | None = Field(None, description="Identifier of the elicitation.")
    requested_schema: dict[str, Any] | None = Field(None, description="Schema of the form.")


class ElicitationResult(HookEvent):
    """The user answered an elicitation."""

    matcher_field: ClassVar[str | None] = "mcp_server_name"
    mcp_server_name: str | None = Field(None, description="The asking MCP server.")
    action: str | None = Field(None, description="accept, decline or cancel.")
    mode: str | None = Field(None, description="form or url.")
    elicitation_id: str | None = Field(None, description="Identifier of the elicitation.")
    content: dict[str, Any] | None = Field(None, description="The answer.")


EVENT_MODELS: dict[str, type[HookEvent]] = {
    cls.__name__: cls
    for cls in (
        SessionStart,
        UserPromptSubmit,
        PreToolUse,
        PostToolUse,
        Stop,
        PostToolUseFailure,
        PostToolBatch,
        PermissionRequest,
        PermissionDenied,
        SubagentStart,
        SubagentStop,
        StopFailure,
        SessionEnd,
        Setup,
        InstructionsLoaded,
        UserPromptExpansion,
        MessageDisplay,
        Notification,
        TaskCreated,
        TaskCompleted,
        TeammateIdle,
        ConfigChange,
        CwdChanged,
        DirectoryAdded,
        FileChanged,
        WorktreeCreate,
        WorktreeRemove,
        PreCompact,
        PostCompact,
        Elicitation,
        ElicitationResult,
    )
}

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
    return EVENT_MODELS.get(event_name, HookEvent)


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
