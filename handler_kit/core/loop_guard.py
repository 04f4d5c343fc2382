"""The stop-loop guard's one test, with no import at all: the core's answer and every
command-hook dialect (including ``handler-kit forward``, which must start fast) use it."""

from __future__ import annotations

# The generated names (handler_kit.core.names) hold the same set, from the event table; this
# copy spares the forwarder that module's import, and tests/core/test_event_table.py holds the
# two equal.
LOOP_GUARDED_EVENTS = frozenset({"Stop", "SubagentStop"})


def in_stop_loop(event_name: str, stop_hook_active: object) -> bool:
    """True when the agent is already going on because of a Stop hook (the input's
    ``stop_hook_active`` is true on a Stop or SubagentStop): a block now, a handler's or one a
    dialect makes of context, would keep it going again with nothing to end the loop."""
    return stop_hook_active is True and event_name in LOOP_GUARDED_EVENTS
