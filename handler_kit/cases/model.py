"""A policy test case: one hook input and what the answer to it must be.

Case files are written by the people who own a policy, often without writing Python, so the
models refuse every key they do not know (a misspelt ``expect.desicion`` would otherwise check
nothing and pass) and an event name that is not an event (a server answers it ``{}``, and a
case expecting no decision would pass without running a handler).
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from handler_kit.core.names import EVENT_NAMES

# ``none``: the answer carries no decision (no opinion, or context only)
Decision = Literal["allow", "deny", "ask", "defer", "block", "none"]
DECISIONS: tuple[str, ...] = ("allow", "deny", "ask", "defer", "block", "none")


class Expect(BaseModel):
    """What the answer must say. Only the fields given are checked.

    ``reason`` and ``system_message`` are regular expressions searched in the text (Python
    syntax; anchor them with ``^``/``$`` to match the whole text). ``context_contains`` and
    ``context_excludes`` are plain substrings of the context. ``updated_input`` is matched as a
    subset: every key given must be in the answer's ``updatedInput`` with that value (nested
    objects likewise); ``updated_input: null`` means the answer must not rewrite the input.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: Decision | None = None
    reason: str | None = None
    context_contains: list[str] = Field(default_factory=list)
    context_excludes: list[str] = Field(default_factory=list)
    updated_input: dict[str, Any] | None = None
    system_message: str | None = None

    @field_validator("context_contains", "context_excludes", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        # one string is the common case in a hand-written file
        return [value] if isinstance(value, str) else value

    @field_validator("reason", "system_message")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _checks_something(self) -> Expect:
        if not self.model_fields_set:
            raise ValueError(
                "expect names nothing to check (decision, reason, context_contains, "
                "context_excludes, updated_input, system_message)"
            )
        return self

    @property
    def checks_updated_input(self) -> bool:
        """Whether ``updated_input`` was given (``null`` included)."""
        return "updated_input" in self.model_fields_set


class Case(BaseModel):
    """One case: ``event`` (a hook input) sent to the app, or to ``/hooks/{handler}`` when
    ``handler`` names one handler, and the answer checked against ``expect``.

    The event's ``hook_event_name`` may be given in the event or as ``event_name``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    event_name: str | None = None
    event: dict[str, Any] = Field(default_factory=dict)
    handler: str | None = None
    expect: Expect

    @field_validator("handler")
    @classmethod
    def _route(cls, value: str | None) -> str | None:
        if value is not None and (not value or "/" in value or value != value.strip()):
            raise ValueError(f"not a handler name: {value!r}")
        return value

    @model_validator(mode="after")
    def _event_named(self) -> Case:
        given = self.event.get("hook_event_name")
        if given is not None and self.event_name is not None and given != self.event_name:
            raise ValueError(
                f"event_name {self.event_name!r} and the event's hook_event_name {given!r} differ"
            )
        name = given if given is not None else self.event_name
        if name is None:
            raise ValueError("the event has no hook_event_name (give it there or as event_name)")
        if name not in EVENT_NAMES:
            close = difflib.get_close_matches(str(name), EVENT_NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown hook event {name!r}{hint}")
        return self

    @property
    def hook_event_name(self) -> str:
        return str(self.event.get("hook_event_name") or self.event_name)

    @property
    def input(self) -> dict[str, Any]:
        """The hook input to send: the event, with its ``hook_event_name``."""
        return {"hook_event_name": self.hook_event_name, **self.event}
