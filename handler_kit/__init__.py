"""handler-kit: typed agent hook handlers, served as a webhook, MCP tools or command hooks.

Every public name is importable from here. Importing this package loads nothing but the
standard library: each name is imported on first use (PEP 562), so ``handler-kit forward``
and the CLI's help start fast, a command hook pays only for the core, and the server stack
(starlette, uvicorn, mcp) loads only in a server.
"""

from __future__ import annotations

from handler_kit import _compat
from handler_kit._version import __version__

# typing is a measurable share of a start-up that must stay close to bare Python's (the
# forwarder); type checkers read this name as typing.TYPE_CHECKING
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler_kit.auth import BearerAuth, JWTAuth, StaticTokenAuth
    from handler_kit.config import OperationsConfig, ServerConfig

    # <generated: models> from core/_event_table.py by `make generate`; do not edit
    from handler_kit.core._base_events import (
        PostToolUse,
        PreToolUse,
        SessionStart,
        Stop,
    )
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
    from handler_kit.core.app import Answer, Handler, HookApp, Invocation
    from handler_kit.core.events import (
        EVENT_MODELS,
        EVENT_NAMES,
        RUNBEAR_EVENTS,
        HookEvent,
        parse_event,
    )
    from handler_kit.core.matchers import MatcherError, compile_matcher, tool_matcher
    from handler_kit.core.merge import Failure, Merged, merge
    from handler_kit.core.outputs import (
        Output,
        OutputError,
        allow,
        ask,
        block,
        context,
        deny,
        halt,
        parse_output,
        rewrite,
    )
    from handler_kit.ops.audit import AuditStore
    from handler_kit.server import create_asgi_app
    from handler_kit.server.mcp import create_mcp_mount
    from handler_kit.testing import HookClient

_EVENTS = "handler_kit.core.events"
# name -> the module that defines it, imported on first access
_LAZY: dict[str, str] = {
    "Answer": "handler_kit.core.app",
    "Handler": "handler_kit.core.app",
    "HookApp": "handler_kit.core.app",
    "Invocation": "handler_kit.core.app",
    "EVENT_MODELS": _EVENTS,
    "EVENT_NAMES": _EVENTS,
    "RUNBEAR_EVENTS": _EVENTS,
    "HookEvent": _EVENTS,
    "parse_event": _EVENTS,
    "MatcherError": "handler_kit.core.matchers",
    "compile_matcher": "handler_kit.core.matchers",
    "tool_matcher": "handler_kit.core.matchers",
    "Failure": "handler_kit.core.merge",
    "Merged": "handler_kit.core.merge",
    "merge": "handler_kit.core.merge",
    **dict.fromkeys(
        (
            "Output",
            "OutputError",
            "allow",
            "ask",
            "block",
            "context",
            "deny",
            "halt",
            "parse_output",
            "rewrite",
        ),
        "handler_kit.core.outputs",
    ),
    "BearerAuth": "handler_kit.auth",
    "StaticTokenAuth": "handler_kit.auth",
    "JWTAuth": "handler_kit.auth",
    "ServerConfig": "handler_kit.config",
    "OperationsConfig": "handler_kit.config",
    "AuditStore": "handler_kit.ops.audit",
    "create_asgi_app": "handler_kit.server",
    "create_mcp_mount": "handler_kit.server.mcp",
    "HookClient": "handler_kit.testing",
}
# <generated: event-classes> from core/_event_table.py by `make generate`; do not edit
_EVENT_CLASSES = (
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
)
# </generated: event-classes>
_LAZY.update(dict.fromkeys(_EVENT_CLASSES, _EVENTS))


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'handler_kit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


_compat.install()

__all__ = [
    "EVENT_MODELS",
    "EVENT_NAMES",
    "RUNBEAR_EVENTS",
    "Answer",
    "AuditStore",
    "BearerAuth",
    "Failure",
    "Handler",
    "HookApp",
    "HookClient",
    "HookEvent",
    "Invocation",
    "JWTAuth",
    "MatcherError",
    "Merged",
    "OperationsConfig",
    "Output",
    "OutputError",
    "ServerConfig",
    "StaticTokenAuth",
    "__version__",
    "allow",
    "ask",
    "block",
    "compile_matcher",
    "context",
    "create_asgi_app",
    "create_mcp_mount",
    "deny",
    "halt",
    "merge",
    "parse_event",
    "parse_output",
    "rewrite",
    "tool_matcher",
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
