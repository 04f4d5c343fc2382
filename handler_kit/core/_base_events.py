"""The base model of every hook input and the models of four of the five events every runtime
sends (UserPromptSubmit's is defined on first use, in :mod:`handler_kit.core._prompt_event`).

Defined apart from :mod:`handler_kit.core.events` so that the models defined on first use
(:mod:`handler_kit.core._claude_events` for the Claude-Code-only ones) can build on them without
an import cycle. Import them from :mod:`handler_kit.core.events`.
"""

# No ``from __future__ import annotations`` in this module: with it, pydantic evaluates the
# annotation string of every field, inherited ones included, again for each model class, and a
# command hook defines these classes in every process it starts.
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from handler_kit.core.names import EVENT_NAMES

_EVENT_NAME = "Name of the event that fired the hook."
_EVENT_NAME_SET = frozenset(EVENT_NAMES)
_CONFIG = ConfigDict(extra="allow", defer_build=True, frozen=False, populate_by_name=True)


class HookEvent(BaseModel):
    """Fields every event may carry: Claude Code's common fields and Runbear's shared ones.

    Also the model of an event this module does not know: it parses with every field kept.
    """

    model_config = _CONFIG
    # The field a matcher is tested against for this event (None: the event has no matcher).
    matcher_field: ClassVar[str | None] = None
    # The event a model built in code is of when it is not named: the model's own (set for
    # each known event's model and inherited by its subclasses; None on this generic one).
    default_event_name: ClassVar[str | None] = None
    # The project folder the runtime named to this process (a command hook's
    # $CLAUDE_PROJECT_DIR or $PA_PROJECT_DIR), set once by the command hook, which runs one
    # event per process; None in a server, which serves many projects.
    runtime_project_dir: ClassVar[str | None] = None

    if TYPE_CHECKING:
        # For type checkers, a default: ``PreToolUse(tool_name="Bash")`` names its event itself.
        hook_event_name: str = Field(default="", description=_EVENT_NAME)
    else:
        # Required when an input is read: a runtime must name the event it sends.
        hook_event_name: str = Field(description=_EVENT_NAME)
    session_id: str | None = Field(
        default=None,
        description=(
            "Session identifier: a UUID on Claude Code; on Runbear, the conversation thread's."
        ),
    )
    transcript_path: str | None = Field(
        default=None,
        description=(
            "Claude Code: path of the session's transcript (JSONL), written asynchronously, so it "
            "may lag."
        ),
    )
    cwd: str | None = Field(
        default=None,
        description=(
            "Claude Code: the agent's current working directory (it follows cd and worktrees)."
        ),
    )
    permission_mode: str | None = Field(
        default=None,
        description=(
            "Claude Code: permission mode of the session: default, plan, acceptEdits, auto, "
            "dontAsk or bypassPermissions. Not sent on every event."
        ),
    )
    prompt_id: str | None = Field(
        default=None,
        description=(
            "Claude Code: identifier (a UUID) of the current user prompt, from the first prompt on."
        ),
    )
    effort: dict[str, Any] | None = Field(
        default=None,
        description=(
            'Claude Code: the model\'s reasoning effort, {"level": "low" | "medium" | "high" | '
            '"xhigh" | "max"}, on tool events when the model supports it.'
        ),
    )
    agent_id: str | None = Field(
        default=None,
        description=(
            "Agent identifier: on Runbear the agent's (a UUID); on Claude Code the subagent's the "
            "event comes from."
        ),
    )
    agent_type: str | None = Field(
        default=None,
        description=(
            "Claude Code: agent type, in --agent sessions and inside a subagent (may be empty); "
            "what SubagentStart and SubagentStop matchers are tested against."
        ),
    )
    agent_name: str | None = Field(
        default=None, description="Runbear: display name of the agent, e.g. Support."
    )
    org_id: str | None = Field(
        default=None, description="Runbear: identifier of the organization the agent belongs to."
    )
    thread_id: str | None = Field(
        default=None, description="Runbear: identifier of the conversation thread."
    )
    turn_id: str | None = Field(
        default=None,
        description=(
            "Identifier of the current turn: on Runbear the message's timestamp, e.g. "
            "1720000000.000100; on Claude Code sent with MessageDisplay."
        ),
    )
    channel: str | None = Field(
        default=None, description="Runbear: kind of channel the conversation is in, e.g. slack."
    )
    channel_id: str | None = Field(
        default=None, description="Runbear: identifier of the channel, e.g. C0123456789."
    )
    channel_user_id: str | None = Field(
        default=None,
        description=(
            "Runbear: the user's identifier in the channel, e.g. a Slack user id such as "
            "U0123456789."
        ),
    )
    user_name: str | None = Field(
        default=None, description="Runbear: display name of the user, e.g. Dana."
    )
    user_email: str | None = Field(
        default=None,
        description=(
            "Runbear: e-mail address of the user; missing where the channel cannot supply it (a "
            "template key that refers to it is then dropped)."
        ),
    )
    prompt: str | None = Field(
        default=None,
        description=(
            "The user's message: the one arriving on UserPromptSubmit (on Runbear, the current "
            "turn's on every event); the expanded prompt on UserPromptExpansion."
        ),
    )

    if not TYPE_CHECKING:
        # Hidden from type checkers: they keep reading pydantic's signature (a keyword per
        # field), not this one's **data.

        def __init__(self, /, **data: Any) -> None:
            """Build an event in code; a known event's model fills in ``hook_event_name``."""
            if "hook_event_name" not in data and self.default_event_name is not None:
                data["hook_event_name"] = self.default_event_name
            super().__init__(**data)

        # Marked as pydantic's own __init__, so that validating an input (the webhook, the
        # command hook, model_validate) does not go through it: a hook input must name its
        # event, and the hot path stays in pydantic-core.
        __init__.__pydantic_base_init__ = True

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # Each known event's model is named after its event (checked by the tests).
        if cls.__name__ in _EVENT_NAME_SET and cls.__module__.startswith("handler_kit.core."):
            cls.default_event_name = cls.__name__

    @property
    def project_dir(self) -> str | None:
        """The project's folder: the one the runtime named to a command hook
        (``$CLAUDE_PROJECT_DIR`` on Claude Code, ``$PA_PROJECT_DIR`` on Posit Assistant), else
        the session's working directory (``cwd``), else None. ``cwd`` follows the agent's
        ``cd``, so in a server (which no runtime names a project to) this is where the session
        is, not necessarily the project's root. A field of that name in the input is not
        this: the runtime's variable is not something the caller can send."""
        return self.runtime_project_dir or self.cwd

    def matcher_value(self) -> str | None:
        """The value this event's matchers are tested against, if the event has matchers."""
        field = self.matcher_field
        if field is None:
            return None
        value = getattr(self, field, None)
        return value if isinstance(value, str) else None


class _ToolEvent(HookEvent):
    matcher_field: ClassVar[str | None] = "tool_name"

    tool_name: str | None = Field(
        default=None,
        description=(
            "Name of the tool as registered for the model, e.g. Bash, issue_refund or "
            "mcp__server__tool; what the tool events' matchers are tested against."
        ),
    )
    tool_input: dict[str, Any] | None = Field(
        default=None,
        description=(
            "Arguments of the tool call: an object whose shape depends on the tool (on "
            "PostToolUse, the arguments the tool ran with)."
        ),
    )
    tool_use_id: str | None = Field(
        default=None,
        description=(
            "Identifier of the tool call, e.g. toolu_01... (not sent on PermissionRequest)."
        ),
    )


class SessionStart(HookEvent):
    """A session (Runbear: thread) starts. Context only."""

    matcher_field: ClassVar[str | None] = "source"
    source: str | None = Field(
        default=None,
        description=(
            "How the session started: startup, resume, clear, compact or fork; what SessionStart "
            "matchers are tested against. Missing (as on Runbear, where a thread's first message "
            "starts it) means startup."
        ),
    )
    model: str | None = Field(
        default=None,
        description="Claude Code: the session's model, when known (absent after /clear, for one).",
    )
    session_title: str | None = Field(
        default=None, description="Claude Code: title of the session, when one is set."
    )

    def matcher_value(self) -> str | None:
        # Runbear sends no source: its SessionStart is always a startup (a thread's first
        # message), so matcher="startup" must select it.
        return "startup" if self.source is None else self.source


class PreToolUse(_ToolEvent):
    """Before a tool call: allow, deny, ask, or rewrite its arguments."""


class PostToolUse(_ToolEvent):
    """After a successful tool call: context next to the result, or block feedback."""

    tool_response: Any = Field(
        default=None,
        description=(
            "Result of the tool, any JSON value: an object for Claude Code's built-in tools, an "
            "array of content blocks for MCP tools."
        ),
    )
    duration_ms: int | None = Field(
        default=None, description="Claude Code: how long the tool ran, in milliseconds."
    )


class Stop(HookEvent):
    """The reply is ready. A block sends the agent back to work, once."""

    stop_hook_active: bool | None = Field(
        default=None,
        description=(
            "True when the agent is already working again because of an earlier Stop block: a "
            "further block is ignored then, so check it before blocking."
        ),
    )
    last_assistant_message: str | None = Field(
        default=None, description="Text of the agent's reply, ready to go out."
    )
    background_tasks: list[Any] | None = Field(
        default=None,
        description=(
            "Claude Code: background tasks still running, each {id, type, status, description, "
            "...}."
        ),
    )
    session_crons: list[Any] | None = Field(
        default=None,
        description=(
            "Claude Code: the session's scheduled prompts, each {id, schedule, recurring, prompt}."
        ),
    )
