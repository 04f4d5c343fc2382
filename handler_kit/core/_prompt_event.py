"""The model of UserPromptSubmit, defined on first use.

Apart from the other Runbear events (:mod:`handler_kit.core._base_events`): a command hook, a
new process per tool call, defines the models its app imports by name and the one of the input
it reads, and an app that handles no prompts should not pay for this one. Import it from
:mod:`handler_kit.core.events`.
"""

# No ``from __future__ import annotations``: see handler_kit.core._base_events.
from pydantic import Field

from handler_kit.core._base_events import HookEvent

__all__ = ["UserPromptSubmit"]


class UserPromptSubmit(HookEvent):
    """A user message arrives, before the model sees it. Context or block."""

    session_title: str | None = Field(
        default=None, description="Claude Code: title of the session, when one is set."
    )
