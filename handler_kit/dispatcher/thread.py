"""What the runtime remembers about one conversation thread between events.

Three Runbear rules need memory across events of a thread:

- SessionStart runs once per thread; its context stays in the system prompt for the thread's life;
- a UserPromptSubmit context identical to one injected earlier in the thread is not injected
  again (handlers may statelessly return every relevant fragment on every message);
- a Stop block is honoured once per turn: the next Stop of that turn is the continuation, its
  input carries ``stop_hook_active: true`` and a further block is ignored.

A :class:`Thread` is plain data, so a test can build one in a given state or inspect it after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Thread:
    """State of one thread as the runtime keeps it."""

    thread_id: str | None = None
    session_started: bool = False
    # SessionStart context: added to the system prompt for the life of the thread.
    session_context: list[str] = field(default_factory=list)
    # UserPromptSubmit context fragments already injected, in the order they were.
    injected_contexts: list[str] = field(default_factory=list)
    # Turns whose Stop was blocked once: their next Stop is the continuation.
    continued_turns: set[str] = field(default_factory=set)
    current_turn: str | None = None
    _turns_without_id: int = 0

    def turn_of(self, event: dict[str, Any]) -> str:
        """The turn an event belongs to: its ``turn_id``, else the thread's current turn.

        Events without a ``turn_id`` (hand-written test files) count a new turn at each
        UserPromptSubmit, so a Stop block is still honoured once per turn.
        """
        turn_id = event.get("turn_id")
        if isinstance(turn_id, str) and turn_id:
            self.current_turn = turn_id
            return turn_id
        if event.get("hook_event_name") == "UserPromptSubmit" or self.current_turn is None:
            self._turns_without_id += 1
            self.current_turn = f"#turn-{self._turns_without_id}"
        return self.current_turn

    def is_continuation(self, turn: str) -> bool:
        """True when a Stop of ``turn`` was already blocked: this Stop is the continuation."""
        return turn in self.continued_turns

    def fresh_contexts(self, contexts: list[str]) -> list[str]:
        """The UserPromptSubmit contexts not injected earlier in the thread."""
        seen = set(self.injected_contexts)
        return [c for c in contexts if c not in seen]

    def record_injected(self, contexts: list[str]) -> None:
        """Remember UserPromptSubmit contexts that reached the model."""
        self.injected_contexts.extend(contexts)
