"""The models of the Claude-Code-only hook events (every event but Runbear's five).

Imported on first use through :data:`handler_kit.core.events.EVENT_MODELS` or an attribute of
:mod:`handler_kit.core.events` / :mod:`handler_kit`: a command hook that never sees these events
never pays for defining their classes. Import them from :mod:`handler_kit.core.events`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from handler_kit.core._base_events import HookEvent, Stop, _ToolEvent

__all__ = [
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "Elicitation",
    "ElicitationResult",
    "FileChanged",
    "InstructionsLoaded",
    "MessageDisplay",
    "Notification",
    "PermissionDenied",
    "PermissionRequest",
    "PostCompact",
    "PostToolBatch",
    "PostToolUseFailure",
    "PreCompact",
    "SessionEnd",
    "Setup",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "TaskCompleted",
    "TaskCreated",
    "TeammateIdle",
    "UserPromptExpansion",
    "WorktreeCreate",
    "WorktreeRemove",
]


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
