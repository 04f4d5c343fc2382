"""The base model of every hook input and the models of the five events every runtime sends.

Defined apart from :mod:`handler_kit.core.events` so that the Claude-Code-only models
(:mod:`handler_kit.core._claude_events`) can build on them without an import cycle. Import them
from :mod:`handler_kit.core.events`.
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
    source: str | None = Field(
        None, description="startup, resume, clear, compact or fork; missing means startup."
    )
    model: str | None = Field(None, description="Model of the session, when known.")
    session_title: str | None = Field(None, description="Title of the session, when set.")

    def matcher_value(self) -> str | None:
        # Runbear sends no source: its SessionStart is always a startup (a thread's first
        # message), so matcher="startup" must select it.
        return "startup" if self.source is None else self.source


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
