"""The stop-loop guard's one test, importing only the generated names: the core's answer and
every command-hook dialect (including ``handler-kit forward``, which must start fast) use it."""

from __future__ import annotations

from handler_kit.core.names import LOOP_GUARDED_EVENTS as LOOP_GUARDED_EVENTS


def in_stop_loop(event_name: str, stop_hook_active: object) -> bool:
    """True when the agent is already going on because of a Stop hook (the input's
    ``stop_hook_active`` is true on a Stop or SubagentStop): a block now, a handler's or one a
    dialect makes of context, would keep it going again with nothing to end the loop."""
    return stop_hook_active is True and event_name in LOOP_GUARDED_EVENTS
