"""Hook inputs: one pydantic model per event, lenient by design.

Runtimes add fields to hook inputs release after release (``cwd``, ``permission_mode``,
``prompt_id``, ``effort``, an ``mcp_server`` object...), so every model keeps unknown fields
(``extra="allow"``, reachable as attributes and in ``model_extra``) and every field but
``hook_event_name`` may be missing or null. Types are still checked where a field has one: a
``tool_name`` that is a number is a bad request, not something to guess about. Every field has a
description (the MCP tools' input schemas carry them), and a model built in code names its own
event (``PreToolUse(tool_name="Bash")``), while an input read from a runtime must name it.

Schemas are built on first use (``defer_build``), and the classes of the Claude-Code-only events
are only defined on first use (they live in :mod:`handler_kit.core._claude_events`), as is
UserPromptSubmit's (:mod:`handler_kit.core._prompt_event`): a command hook that handles one
PreToolUse pays for a few classes and one schema, not forty.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from handler_kit.core._base_events import HookEvent, PostToolUse, PreToolUse, SessionStart, Stop
from handler_kit.core.names import EVENT_NAMES, MATCHERLESS_EVENTS, RUNBEAR_EVENTS

if TYPE_CHECKING:
    # <generated: models> from core/_event_table.py by `make generate`; do not edit
    from handler_kit.core._claude_events import (
        ConfigChange,
        CwdChanged,
        DirectoryAdded,
        Elicitation,
        ElicitationResult,
        FileChanged,
        InstructionsLoaded,
        Interrupt,
        MessageDisplay,
        Notification,
        PermissionDenied,
        PermissionRequest,
        PostCompact,
        PostToolBatch,
        PostToolUseFailure,
        PreCompact,
        SessionEnd,
        Setup,
        StopFailure,
        SubagentStart,
        SubagentStop,
        TaskCompleted,
        TaskCreated,
        TeammateIdle,
        UserPromptExpansion,
        WorktreeCreate,
        WorktreeRemove,
    )
    from handler_kit.core._prompt_event import UserPromptSubmit
    # </generated: models>

__all__ = [
    "EVENT_MODELS",
    "EVENT_NAMES",
    "MATCHERLESS_EVENTS",
    "RUNBEAR_EVENTS",
    "HookEvent",
    "model_for",
    "parse_event",
]
# <generated: all> from core/_event_table.py by `make generate`; do not edit
__all__ += [
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
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PreToolUse",
    "SessionEnd",
    "SessionStart",
    "Setup",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "TaskCompleted",
    "TaskCreated",
    "TeammateIdle",
    "UserPromptExpansion",
    "UserPromptSubmit",
    "WorktreeCreate",
    "WorktreeRemove",
]
# </generated: all>

# The models of four Runbear events are in handler_kit.core._base_events; UserPromptSubmit's
# (which an app seldom imports by name) is in handler_kit.core._prompt_event, the others in
# handler_kit.core._claude_events, each imported on first use (see _EventModels); the table of
# events names each one's module.
_EAGER: dict[str, type[HookEvent]] = {
    cls.__name__: cls for cls in (SessionStart, PreToolUse, PostToolUse, Stop)
}
# <generated: modules> from core/_event_table.py by `make generate`; do not edit
_MODULES = {
    "SessionStart": "handler_kit.core._base_events",
    "UserPromptSubmit": "handler_kit.core._prompt_event",
    "PreToolUse": "handler_kit.core._base_events",
    "PostToolUse": "handler_kit.core._base_events",
    "Stop": "handler_kit.core._base_events",
    "PostToolUseFailure": "handler_kit.core._claude_events",
    "PostToolBatch": "handler_kit.core._claude_events",
    "PermissionRequest": "handler_kit.core._claude_events",
    "PermissionDenied": "handler_kit.core._claude_events",
    "SubagentStart": "handler_kit.core._claude_events",
    "SubagentStop": "handler_kit.core._claude_events",
    "StopFailure": "handler_kit.core._claude_events",
    "SessionEnd": "handler_kit.core._claude_events",
    "Setup": "handler_kit.core._claude_events",
    "InstructionsLoaded": "handler_kit.core._claude_events",
    "UserPromptExpansion": "handler_kit.core._claude_events",
    "MessageDisplay": "handler_kit.core._claude_events",
    "Notification": "handler_kit.core._claude_events",
    "TaskCreated": "handler_kit.core._claude_events",
    "TaskCompleted": "handler_kit.core._claude_events",
    "TeammateIdle": "handler_kit.core._claude_events",
    "ConfigChange": "handler_kit.core._claude_events",
    "CwdChanged": "handler_kit.core._claude_events",
    "DirectoryAdded": "handler_kit.core._claude_events",
    "FileChanged": "handler_kit.core._claude_events",
    "WorktreeCreate": "handler_kit.core._claude_events",
    "WorktreeRemove": "handler_kit.core._claude_events",
    "PreCompact": "handler_kit.core._claude_events",
    "PostCompact": "handler_kit.core._claude_events",
    "Elicitation": "handler_kit.core._claude_events",
    "ElicitationResult": "handler_kit.core._claude_events",
    "Interrupt": "handler_kit.core._claude_events",
}
# </generated: modules>


class _EventModels(Mapping[str, "type[HookEvent]"]):
    """``{event name: model}`` for every known event, defining a model only when it is asked for.

    Creating a pydantic class takes real time even with ``defer_build`` (its fields are
    collected at class creation); a command hook, a new process per tool call, should pay for the
    models it uses, not for all of them. Iteration and ``in`` never import anything.
    """

    def __getitem__(self, name: str) -> type[HookEvent]:
        model = _EAGER.get(name)
        if model is not None:
            return model
        if name not in _NAME_SET:
            raise KeyError(name)
        module = importlib.import_module(_MODULES[name])
        model_class: type[HookEvent] = getattr(module, name)
        return model_class

    def __contains__(self, name: object) -> bool:
        return name in _NAME_SET

    def __iter__(self) -> Iterator[str]:
        return iter(EVENT_NAMES)

    def __len__(self) -> int:
        return len(EVENT_NAMES)

    def __repr__(self) -> str:
        return f"EVENT_MODELS({', '.join(EVENT_NAMES)})"


_NAME_SET = frozenset(EVENT_NAMES)
EVENT_MODELS: Mapping[str, type[HookEvent]] = _EventModels()


def __getattr__(name: str) -> Any:
    """The event models not defined at import, each defined on first access (PEP 562)."""
    if name in _NAME_SET:
        return getattr(importlib.import_module(_MODULES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def model_for(event_name: str) -> type[HookEvent]:
    """The model of ``event_name``; the generic :class:`HookEvent` for an unknown name."""
    model = _EAGER.get(event_name)
    if model is not None:
        return model
    return EVENT_MODELS[event_name] if event_name in _NAME_SET else HookEvent


def json_validator(model: type[HookEvent]) -> Callable[[bytes], HookEvent]:
    """``model``'s own JSON validator (pydantic-core's ``validate_json``: parsing and
    validation in one pass), for a caller that validates many inputs of one event.

    ``model.model_validate_json`` calls the same validator from a Python frame of its own;
    pydantic's public :class:`~pydantic.TypeAdapter` hands out the validator itself (see
    :func:`_adapter`)."""
    validate_json: Callable[[bytes], HookEvent] = _adapter(model).validator.validate_json
    return validate_json


def python_validator(model: type[HookEvent]) -> Callable[[Any], HookEvent]:
    """``model``'s own validator of a Python object (a dict of arguments): what
    ``model.model_validate`` calls, without its frame (see :func:`json_validator`)."""
    validate_python: Callable[[Any], HookEvent] = _adapter(model).validator.validate_python
    return validate_python


def json_serializer(model: type[HookEvent]) -> Callable[..., bytes]:
    """``model``'s own JSON serializer (pydantic-core's ``SchemaSerializer.to_json``), for a
    caller that writes many inputs of one event: ``pydantic_core.to_json(event)`` reaches the
    same serializer through a lookup of the model's on every call."""
    to_json: Callable[..., bytes] = _adapter(model).serializer.to_json
    return to_json


@functools.cache
def _adapter(model: type[HookEvent]) -> Any:
    """The :class:`~pydantic.TypeAdapter` of ``model``, one per model (a caller that takes both
    the validator and the serializer builds one). The model is built now when its build was
    deferred, so the adapter shares the model's validator and serializer rather than building
    its own."""
    from pydantic import TypeAdapter

    model.model_rebuild()
    adapter = TypeAdapter(model)
    adapter.rebuild()
    return adapter


def parse_event(data: dict[str, Any] | bytes | str) -> HookEvent:
    """Parse one hook input (a dict, or JSON text) into its event's model.

    Raises ``pydantic.ValidationError`` when a known field has the wrong type or
    ``hook_event_name`` is missing, and ``ValueError`` when JSON text is not an object.
    """
    if isinstance(data, dict):
        name = data.get("hook_event_name")
        return model_for(name if isinstance(name, str) else "").model_validate(data)
    import json

    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueError("a hook input must be a JSON object")
    return parse_event(obj)
