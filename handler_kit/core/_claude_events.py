"""The models of the Claude-Code-only hook events (every event but Runbear's five), and of
Codex's own Interrupt.

Imported on first use through :data:`handler_kit.core.events.EVENT_MODELS` or an attribute of
:mod:`handler_kit.core.events` / :mod:`handler_kit`: a command hook that never sees these events
never pays for defining their classes. Import them from :mod:`handler_kit.core.events`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from handler_kit.core._base_events import HookEvent, Stop, _ToolEvent

# <generated: all> from core/_event_table.py by `make generate`; do not edit
__all__ = [
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "Elicitation",
    "ElicitationResult",
    "FileChanged",
    "InstructionsLoaded",
    "Interrupt",
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
# </generated: all>


class PostToolUseFailure(_ToolEvent):
    """After a tool call that failed."""

    error: str | None = Field(
        default=None,
        description="Error message of the failed call (cut in the middle past 10,000 characters).",
    )
    is_interrupt: bool | None = Field(
        default=None, description="Whether the call failed because the user interrupted it."
    )


class PostToolBatch(HookEvent):
    """After a batch of parallel tool calls."""

    tool_calls: list[Any] | None = Field(
        default=None,
        description=(
            "The calls of the batch, each {tool_name, tool_input, tool_use_id, tool_response}, "
            "tool_response being the text the model sees."
        ),
    )


class PermissionRequest(_ToolEvent):
    """A permission prompt would be shown: allow or deny it."""

    permission_suggestions: list[Any] | None = Field(
        default=None,
        description="Permission updates the user could pick in the prompt; may be missing.",
    )


class PermissionDenied(_ToolEvent):
    """A tool call was denied by the permission system."""

    reason: str | None = Field(
        default=None, description="Why the permission system (auto mode) denied the call."
    )


class SubagentStop(Stop):
    """A subagent finished. Same contract as Stop."""

    matcher_field: ClassVar[str | None] = "agent_type"
    agent_transcript_path: str | None = Field(
        default=None, description="Path of the subagent's own transcript."
    )


class SubagentStart(HookEvent):
    """A subagent starts. Context only."""

    matcher_field: ClassVar[str | None] = "agent_type"


class StopFailure(HookEvent):
    """The turn ended on an API error."""

    matcher_field: ClassVar[str | None] = "error"
    error: str | None = Field(
        default=None,
        description=(
            "Kind of API error: rate_limit, overloaded, authentication_failed, billing_error, "
            "invalid_request, model_not_found, server_error, max_output_tokens, unknown...; what "
            "matchers are tested against."
        ),
    )
    error_details: str | None = Field(default=None, description="Details of the error, when given.")
    last_assistant_message: str | None = Field(
        default=None, description="The API error text, shown in place of a reply."
    )


class SessionEnd(HookEvent):
    """The session ends."""

    matcher_field: ClassVar[str | None] = "reason"
    reason: str | None = Field(
        default=None,
        description=(
            "Why the session ended: clear, resume, logout, prompt_input_exit or other; what "
            "matchers are tested against."
        ),
    )


class Setup(HookEvent):
    """Repository setup (--init / --maintenance)."""

    matcher_field: ClassVar[str | None] = "trigger"
    trigger: str | None = Field(
        default=None,
        description="What ran the setup: init or maintenance; what matchers are tested against.",
    )


class InstructionsLoaded(HookEvent):
    """An instructions file (CLAUDE.md...) was loaded."""

    matcher_field: ClassVar[str | None] = "load_reason"
    file_path: str | None = Field(default=None, description="Path of the instructions file loaded.")
    memory_type: str | None = Field(
        default=None, description="Kind of memory the file is: User, Project, Local or Managed."
    )
    load_reason: str | None = Field(
        default=None,
        description=(
            "Why it was loaded: session_start, nested_traversal, path_glob_match, include or "
            "compact; what matchers are tested against."
        ),
    )
    globs: list[Any] | None = Field(default=None, description="Path globs the file applies to.")
    trigger_file_path: str | None = Field(
        default=None, description="File whose access caused the load."
    )
    parent_file_path: str | None = Field(default=None, description="File that included this one.")


class UserPromptExpansion(HookEvent):
    """A slash command or MCP prompt expands into a prompt."""

    matcher_field: ClassVar[str | None] = "command_name"
    expansion_type: str | None = Field(
        default=None, description="What expands: slash_command or mcp_prompt."
    )
    command_name: str | None = Field(
        default=None, description="Name of the command or prompt; what matchers are tested against."
    )
    command_args: str | None = Field(default=None, description="Arguments given after the command.")
    command_source: str | None = Field(default=None, description="Where the command comes from.")


class MessageDisplay(HookEvent):
    """A message is displayed."""

    message_id: str | None = Field(
        default=None, description="Identifier (a UUID) of the message being displayed."
    )
    index: int | None = Field(default=None, description="Index of this chunk in the message.")
    final: bool | None = Field(
        default=None, description="Whether this is the message's last chunk."
    )
    delta: str | None = Field(default=None, description="Text of this chunk.")


class Notification(HookEvent):
    """The agent shows a notification."""

    matcher_field: ClassVar[str | None] = "notification_type"
    message: str | None = Field(default=None, description="Text of the notification.")
    title: str | None = Field(
        default=None, description="Title of the notification, when it has one."
    )
    notification_type: str | None = Field(
        default=None,
        description=(
            "Kind of notification: permission_prompt, idle_prompt, auth_success, "
            "elicitation_dialog, agent_needs_input, agent_completed...; what matchers are tested "
            "against."
        ),
    )


class TaskCreated(HookEvent):
    """A task is created."""

    task_id: str | None = Field(default=None, description="Identifier of the task.")
    task_subject: str | None = Field(default=None, description="Subject of the task.")
    task_description: str | None = Field(
        default=None, description="Description of the task, when it has one."
    )
    teammate_name: str | None = Field(default=None, description="Teammate the task belongs to.")
    team_name: str | None = Field(
        default=None, description="Name of the team (deprecated by Claude Code)."
    )


class TaskCompleted(TaskCreated):
    """A task is completed."""


class TeammateIdle(HookEvent):
    """A teammate is idle."""

    teammate_name: str | None = Field(
        default=None, description="Name of the teammate that is idle."
    )
    team_name: str | None = Field(
        default=None, description="Name of the team (deprecated by Claude Code)."
    )


class ConfigChange(HookEvent):
    """A settings file changed."""

    matcher_field: ClassVar[str | None] = "source"
    source: str | None = Field(
        default=None,
        description=(
            "Which settings changed: user_settings, project_settings, local_settings, "
            "policy_settings or skills; what matchers are tested against."
        ),
    )
    file_path: str | None = Field(
        default=None, description="Path of the settings file that changed, when there is one."
    )


class CwdChanged(HookEvent):
    """The working directory changed."""

    old_cwd: str | None = Field(default=None, description="Working directory before the change.")
    new_cwd: str | None = Field(default=None, description="Working directory after the change.")


class DirectoryAdded(HookEvent):
    """A directory was added to the workspace."""

    matcher_field: ClassVar[str | None] = "source"
    directory: str | None = Field(
        default=None, description="Path of the directory added to the workspace."
    )
    source: str | None = Field(
        default=None,
        description=(
            "How it was added: slash_command or register_repo_root; what matchers are tested "
            "against."
        ),
    )


class FileChanged(HookEvent):
    """A watched file changed."""

    matcher_field: ClassVar[str | None] = "file_path"
    file_path: str | None = Field(
        default=None, description="Path of the watched file; what matchers are tested against."
    )
    event: str | None = Field(
        default=None, description="What happened to the file: change, add or unlink."
    )


class WorktreeCreate(HookEvent):
    """A worktree is to be created."""

    name: str | None = Field(default=None, description="Name of the worktree to create.")


class WorktreeRemove(HookEvent):
    """A worktree is removed."""

    worktree_path: str | None = Field(
        default=None, description="Path of the worktree being removed."
    )


class PreCompact(HookEvent):
    """Before context compaction."""

    matcher_field: ClassVar[str | None] = "trigger"
    trigger: str | None = Field(
        default=None,
        description=(
            "What started the compaction: manual (/compact) or auto; what matchers are tested "
            "against."
        ),
    )
    custom_instructions: str | None = Field(
        default=None, description="Instructions given with /compact for the summary (null on auto)."
    )


class PostCompact(HookEvent):
    """After context compaction."""

    matcher_field: ClassVar[str | None] = "trigger"
    trigger: str | None = Field(
        default=None,
        description=(
            "What started the compaction: manual (/compact) or auto; what matchers are tested "
            "against."
        ),
    )
    compact_summary: str | None = Field(
        default=None, description="The summary the compaction produced."
    )


class Elicitation(HookEvent):
    """An MCP server asks the user for input."""

    matcher_field: ClassVar[str | None] = "mcp_server_name"
    mcp_server_name: str | None = Field(
        default=None, description="Name of the MCP server asking; what matchers are tested against."
    )
    message: str | None = Field(default=None, description="The question shown to the user.")
    mode: str | None = Field(default=None, description="How the input is asked for: form or url.")
    url: str | None = Field(default=None, description="Address the user is sent to, in url mode.")
    elicitation_id: str | None = Field(default=None, description="Identifier of the elicitation.")
    requested_schema: dict[str, Any] | None = Field(
        default=None, description="JSON schema of the form, in form mode."
    )


class ElicitationResult(HookEvent):
    """The user answered an elicitation."""

    matcher_field: ClassVar[str | None] = "mcp_server_name"
    mcp_server_name: str | None = Field(
        default=None,
        description="Name of the MCP server that asked; what matchers are tested against.",
    )
    action: str | None = Field(
        default=None, description="The user's answer: accept, decline or cancel."
    )
    mode: str | None = Field(default=None, description="How the input was asked for: form or url.")
    elicitation_id: str | None = Field(default=None, description="Identifier of the elicitation.")
    content: dict[str, Any] | None = Field(
        default=None, description="The values the user entered, on accept in form mode."
    )


class Interrupt(HookEvent):
    """Codex: the user interrupted the turn (Codex's own event; Claude Code and Runbear have
    none). Codex reads only ``systemMessage`` of the answer, and plain text is invalid there;
    it waits at most 3 s for the hook (1 s by default)."""

    turn_id: str | None = Field(default=None, description="Codex: the turn that was interrupted.")
    permission_mode: str | None = Field(
        default=None,
        description=(
            "Codex: permission mode of the session: default, acceptEdits, plan, dontAsk or "
            "bypassPermissions."
        ),
    )
