"""How a case is played through a real agent: what the scripted model does, what prompt the
agent gets, and which tool the stub MCP server offers; or why the case cannot be played.

Pure functions of the case and the agent, so that the translation is tested without an agent.
A case is played only when the hook the agent fires carries the case's event: every field the
case gives must be one the run can make the agent send as given. A field the agent fills itself
(``session_id``, ``cwd``...) cannot be, and a case that gives one is not played, never passed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from handler_kit.agents.model import DONE_TEXT, Say, ToolCall, Turn
from handler_kit.agents.versions import CLAUDE_CODE
from handler_kit.cases.model import Case, Expect

DEFAULT_PROMPT = "Do the task."
# Claude Code connects MCP servers in the background; a tool called before its server is
# connected is "No such tool available". Its own WaitForMcpServers tool waits for them.
WAIT_FOR_MCP = ToolCall("WaitForMcpServers", {})
# The tools the agents build in: calling one would do on this machine what the case describes
# (a Bash case's command is often the very thing the policy forbids).
BUILT_IN_TOOLS = frozenset(
    {
        "Bash",
        "Read",
        "Write",
        "Edit",
        "MultiEdit",
        "NotebookEdit",
        "Glob",
        "Grep",
        "LS",
        "WebFetch",
        "WebSearch",
        "Task",
        "Agent",
        "TodoWrite",
        "apply_patch",
        "exec_command",
        "shell",
        "update_plan",
    }
)
# Claude Code's name of an MCP tool: mcp__SERVER__TOOL, both parts of these characters.
_MCP_NAME = re.compile(r"^mcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_-]+)$")
# The fields of each event the run can make the agent send as the case gives them.
PLAYABLE_FIELDS: dict[str, frozenset[str]] = {
    "PreToolUse": frozenset({"tool_name", "tool_input"}),
    "PostToolUse": frozenset({"tool_name", "tool_input"}),
    "UserPromptSubmit": frozenset({"prompt"}),
    "SessionStart": frozenset({"source"}),
    "Stop": frozenset({"last_assistant_message"}),
}
TOOL_EVENTS = ("PreToolUse", "PostToolUse")


@dataclass(frozen=True)
class Play:
    """One run of the agent for a case: its prompt, the model's script, and the tool the stub
    MCP server offers (``server``, ``tool``: the agent names it ``mcp__SERVER__TOOL``)."""

    prompt: str
    script: tuple[Turn, ...]
    server: str | None = None
    tool: str | None = None

    @property
    def tool_name(self) -> str | None:
        """The tool as the agent (and its hooks) name it."""
        return None if self.server is None else f"mcp__{self.server}__{self.tool}"


@dataclass(frozen=True)
class NotPlayed:
    """Why a case cannot be played through the agent."""

    why: str


def plan(case: Case, agent: str) -> Play | NotPlayed:
    """What to run for ``case`` with ``agent`` (``claude-code`` or ``codex``)."""
    event = case.hook_event_name
    if case.handler is not None:
        return NotPlayed(
            f"the case is sent to the handler {case.handler!r} alone; the agent runs every "
            f"handler of {event}"
        )
    fields = PLAYABLE_FIELDS.get(event)
    if fields is None:
        return NotPlayed(f"the scripted model cannot drive the agent to {event}")
    extra = sorted(set(case.event) - fields - {"hook_event_name"})
    if extra:
        return NotPlayed(
            f"the agent fills {extra[0]!r} itself; the case's value of it cannot be played"
        )
    unobservable = _unobservable(case, agent)
    if unobservable is not None:
        return NotPlayed(unobservable)
    if event in TOOL_EVENTS:
        return _tool_play(case, agent)
    if event == "UserPromptSubmit":
        prompt = case.event.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return NotPlayed("the case has no prompt to send")
        return Play(prompt, (Say(DONE_TEXT),))
    if event == "SessionStart":
        source = case.event.get("source", "startup")
        if source != "startup":
            return NotPlayed(f"a headless run starts a new session: source {source!r}")
        return Play(DEFAULT_PROMPT, (Say(DONE_TEXT),))
    # Stop: the model's reply is the case's last assistant message
    message = case.event.get("last_assistant_message")
    if not isinstance(message, str) or not message:
        return NotPlayed("the case has no last_assistant_message for the model to say")
    return Play(DEFAULT_PROMPT, (Say(message),))


def _tool_play(case: Case, agent: str) -> Play | NotPlayed:
    name = case.event.get("tool_name")
    tool_input: Any = case.event.get("tool_input", {})
    if not isinstance(name, str) or not isinstance(tool_input, dict):
        return NotPlayed("the case has no tool_name, or a tool_input that is not an object")
    if name in BUILT_IN_TOOLS:
        return NotPlayed(
            f"{name} is the agent's own tool: played, it would act on this machine (only "
            "tools a stub MCP server can offer are played)"
        )
    found = _MCP_NAME.match(name)
    if found is None:
        return NotPlayed(
            f"the agent has no tool named {name!r}: a tool it does not build in is named "
            "mcp__SERVER__TOOL, so its hooks would see another tool_name"
        )
    server, tool = found.groups()
    call = ToolCall(name, dict(tool_input))
    # Codex connects its MCP servers before the first turn, and has no WaitForMcpServers
    script = (
        (WAIT_FOR_MCP, call, Say(DONE_TEXT)) if agent == CLAUDE_CODE else (call, Say(DONE_TEXT))
    )
    return Play(DEFAULT_PROMPT, script, server, tool)


def _unobservable(case: Case, agent: str) -> str | None:
    """Why an expectation of ``case`` cannot be seen from outside the agent, if one cannot."""
    expect = case.expect
    event = case.hook_event_name
    why = (
        _unobservable_field(expect, event)
        or _unenforced_decision(expect, event)
        or _unseen_reason(expect, event, agent)
    )
    if why is not None:
        return why
    if not _expects_something_seen(expect, event):
        return f"nothing the case expects of {event} is seen from outside the agent"
    return None


def _unobservable_field(expect: Expect, event: str) -> str | None:
    """Why an expected field no run can observe is expected, if one is: a system message (the
    user's), a ``defer`` (up to the permission mode), an updated input off PreToolUse."""
    if expect.system_message is not None:
        return "a system message is shown to the user, not to the model"
    if expect.decision == "defer":
        return "what the agent does with 'defer' depends on its permission mode"
    if expect.checks_updated_input and event != "PreToolUse":
        return f"updated_input on {event} is not observed"
    return None


def _unenforced_decision(expect: Expect, event: str) -> str | None:
    """Why the expected decision is not one the agent enforces on ``event``, if it is not."""
    if event == "SessionStart" and expect.decision not in (None, "none"):
        return "SessionStart has no decision the agent enforces"
    if event == "Stop" and expect.decision not in (None, "none", "block"):
        return f"a Stop hook's {expect.decision!r} is not a decision the agent enforces"
    return None


def _unseen_reason(expect: Expect, event: str, agent: str) -> str | None:
    """Why the expected decision's reason (or, for a PostToolUse block, the decision itself,
    which only its reason reveals) does not reach anything the run can read, if it does not."""
    if (
        event == "UserPromptSubmit"
        and agent != CLAUDE_CODE
        and expect.reason is not None
        and expect.decision == "block"
    ):
        return "Codex does not show a blocked prompt's reason to anyone the run can read"
    if event in TOOL_EVENTS and expect.decision == "allow" and expect.reason is not None:
        return "an allow's reason is shown to the user, not to the model"
    if event == "PostToolUse" and expect.decision == "block" and expect.reason is None:
        return "a PostToolUse block is seen only by its reason reaching the model: give a reason"
    return None


def _expects_something_seen(expect: Expect, event: str) -> bool:
    """Whether the case expects anything the run can see: a decision the agent acts on (none
    on PostToolUse and SessionStart), a reason, context, or PreToolUse's updated input."""
    seen_decision = event not in ("PostToolUse", "SessionStart") and expect.decision is not None
    return bool(
        seen_decision
        or expect.reason is not None
        or expect.context_contains
        or expect.context_excludes
        or (expect.checks_updated_input and event == "PreToolUse")
    )
