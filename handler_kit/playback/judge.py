"""What a run of the agent enforced, compared with what a case expects: the same
:class:`~handler_kit.cases.comparison.Mismatch` lines as ``handler-kit test``, in terms of what
was seen from outside the agent (the tool ran or not, what reached the model)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from handler_kit.agents.model import ModelRequest
from handler_kit.cases.comparison import Mismatch, _json, _subset, _text, search
from handler_kit.cases.model import Case
from handler_kit.playback.plan import WAIT_FOR_MCP, Play

# headless, an ask is a deny (no one is there to answer it); "block" is the old deny
STOPS = ("deny", "ask", "block")


@dataclass(frozen=True)
class Seen:
    """What one run showed: the model's requests, the stub tool's calls, the agent's output."""

    requests: tuple[ModelRequest, ...]
    calls: tuple[dict[str, Any], ...]
    output: str

    @property
    def main_requests(self) -> list[ModelRequest]:
        """The requests of the agent's loop (those offering tools), not its side requests."""
        return [r for r in self.requests if r.has_tools]

    def tool_results(self) -> list[str]:
        seen: list[str] = []
        for request in self.requests:
            for result in request.tool_results():
                if result not in seen:
                    seen.append(result)
        return seen


def offered(requests: Sequence[ModelRequest], name: str) -> bool:
    """Whether the agent offered the model the tool ``name`` (its stub server connected): a
    tool the agent does not have is not run either, and must not pass for a deny."""
    for request in requests:
        for tool in request.body.get("tools") or []:
            if not isinstance(tool, dict):
                continue
            if tool.get("name") == name:
                return True
            # Codex: an MCP server's tools in a namespace named mcp__SERVER
            inner = tool.get("tools") if tool.get("type") == "namespace" else None
            for member in inner if isinstance(inner, list) else []:
                if isinstance(member, dict) and f"{tool.get('name')}__{member.get('name')}" == name:
                    return True
    return False


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def model_text(requests: Sequence[ModelRequest]) -> str:
    """The text of the conversation of ``requests`` (no tool definitions), one string a line."""
    return "\n".join(s for r in requests for s in strings(json.loads(r.conversation)))


def judge(case: Case, play: Play, seen: Seen) -> list[Mismatch]:
    """Every way the run differs from ``case.expect``."""
    event = case.hook_event_name
    if event in ("PreToolUse", "PostToolUse"):
        return _tool(case, play, seen)
    if event == "UserPromptSubmit":
        return _prompt(case, play, seen)
    if event == "Stop":
        return _stop(case, seen)
    return _context(case, seen.requests)  # SessionStart


def _tool(case: Case, play: Play, seen: Seen) -> list[Mismatch]:
    expect = case.expect
    found: list[Mismatch] = []
    # on Claude Code the first tool result answers WaitForMcpServers; the case's call's follows
    results = seen.tool_results()[1 if play.script[0] == WAIT_FOR_MCP else 0 :]
    result = "\n".join(results) if results else None
    ran = bool(seen.calls)
    ran_with = f"the tool ran with {_json(seen.calls[0])}" if ran else ""
    stopping = case.hook_event_name == "PreToolUse" and expect.decision in STOPS
    if case.hook_event_name == "PreToolUse" and expect.decision is not None:
        if stopping and ran:
            found.append(
                Mismatch("decision", f"{expect.decision} (the tool does not run)", ran_with)
            )
        elif not stopping and not ran:
            got = f"the tool did not run; the model got {_text(result)}"
            found.append(Mismatch("decision", f"{expect.decision} (the tool runs)", got))
    if expect.reason is not None:
        where = result if stopping else model_text(seen.requests[1:])
        if where is None or not search(expect.reason, where):
            found.append(
                Mismatch(
                    "reason", f"to match /{expect.reason}/ in what reached the model", _text(where)
                )
            )
    if expect.checks_updated_input and ran:
        wanted = expect.updated_input
        call = seen.calls[0]
        if wanted is None:
            original = case.event.get("tool_input", {})
            if call != original:
                found.append(
                    Mismatch(
                        "updated_input", "none (the tool runs with the case's input)", _json(call)
                    )
                )
        else:
            found.extend(_subset("updated_input", wanted, call))
    return found + _context(case, seen.requests)


def _prompt(case: Case, play: Play, seen: Seen) -> list[Mismatch]:
    expect = case.expect
    found: list[Mismatch] = []
    asked = any(play.prompt in model_text([r]) for r in seen.main_requests)
    if expect.decision == "block" and asked:
        found.append(
            Mismatch("decision", "block (the model is never asked)", "the model got the prompt")
        )
    elif expect.decision in ("none", "allow") and not asked:
        found.append(
            Mismatch(
                "decision",
                f"{expect.decision} (the model gets the prompt)",
                "the model never got it",
            )
        )
    if expect.reason is not None:
        shown = _printed(seen.output) if expect.decision == "block" else model_text(seen.requests)
        if not search(expect.reason, shown):
            found.append(
                Mismatch(
                    "reason", f"to match /{expect.reason}/ in what the agent showed", _text(shown)
                )
            )
    return found + _context(case, seen.requests)


def _stop(case: Case, seen: Seen) -> list[Mismatch]:
    expect = case.expect
    found: list[Mismatch] = []
    later = seen.main_requests[1:]
    went_on = bool(later)
    if expect.decision == "block" and not went_on:
        found.append(Mismatch("decision", "block (the agent goes on)", "the agent stopped"))
    elif expect.decision in ("none", "allow") and went_on:
        said = _text(model_text(later[:1])[-500:])
        found.append(
            Mismatch(
                "decision", f"{expect.decision} (the agent stops)", f"the agent went on with {said}"
            )
        )
    if expect.reason is not None:
        text = model_text(later)
        if not search(expect.reason, text):
            found.append(
                Mismatch(
                    "reason",
                    f"to match /{expect.reason}/ in what reached the model",
                    _text(text or None),
                )
            )
    return found + _context(case, seen.requests)


def _context(case: Case, requests: Sequence[ModelRequest]) -> list[Mismatch]:
    text = model_text(requests)
    found: list[Mismatch] = []
    for needle in case.expect.context_contains:
        if needle not in text:
            found.append(
                Mismatch("context", f"{needle!r} to reach the model", "a conversation without it")
            )
    for needle in case.expect.context_excludes:
        if needle in text:
            found.append(
                Mismatch("context", f"{needle!r} not to reach the model", "a conversation with it")
            )
    return found


def _printed(output: str) -> str:
    """What the agent printed, its JSON lines (Claude Code's stream-json) read as text."""
    lines: list[str] = []
    for line in output.splitlines():
        try:
            lines.extend(strings(json.loads(line)))
        except ValueError:
            lines.append(line)
    return "\n".join(lines)
