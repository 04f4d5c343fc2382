"""handler-kit: typed agent hook handlers, served as a webhook, MCP tools or command hooks.

Importing this package loads only the core (events, outputs, registry): a command hook pays
for nothing else. Server-side names are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from handler_kit.app import Answer, Handler, HookApp, Invocation
from handler_kit.events import (
    EVENT_MODELS,
    EVENT_NAMES,
    RUNBEAR_EVENTS,
    HookEvent,
    PostToolUse,
    PreToolUse,
    SessionStart,
    Stop,
    UserPromptSubmit,
    parse_event,
)
from handler_kit.matchers import MatcherError, compile_matcher
from handler_kit.merge import Failure, Merged, merge
from handler_kit.outputs import (
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

if TYPE_CHECKING:
    from handler_kit.auth import BearerAuth, JWTAuth, StaticTokenAuth
    from handler_kit.events import (
        ConfigChange,
        CwdChanged,
        DirectoryAdded,
        Elicitation,
        ElicitationResult,
        FileChanged,
        InstructionsLoaded,
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
    from handler_kit.server import ServerConfig, create_asgi_app
    from handler_kit.testing import HookClient

# name -> module, imported on first access (PEP 562): the server stack stays out of command hooks,
# and so do the classes of the Claude-Code-only events (see handler_kit.events.EVENT_MODELS).
_LAZY = {
    # the Claude-Code-only event classes: handler_kit.events defines them on first use too
    **dict.fromkeys(
        (name for name in EVENT_NAMES if name not in RUNBEAR_EVENTS), "handler_kit.events"
    ),
    "BearerAuth": "handler_kit.auth",
    "StaticTokenAuth": "handler_kit.auth",
    "JWTAuth": "handler_kit.auth",
    "ServerConfig": "handler_kit.server",
    "create_asgi_app": "handler_kit.server",
    "HookClient": "handler_kit.testing",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'handler_kit' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "EVENT_MODELS",
    "Answer",
    "BearerAuth",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "Elicitation",
    "ElicitationResult",
    "Failure",
    "FileChanged",
    "Handler",
    "HookApp",
    "HookClient",
    "HookEvent",
    "InstructionsLoaded",
    "Invocation",
    "JWTAuth",
    "MatcherError",
    "Merged",
    "MessageDisplay",
    "Notification",
    "Output",
    "OutputError",
    "PermissionDenied",
    "PermissionRequest",
    "PostCompact",
    "PostToolBatch",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PreToolUse",
    "ServerConfig",
    "SessionEnd",
    "SessionStart",
    "Setup",
    "StaticTokenAuth",
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
    "allow",
    "ask",
    "block",
    "compile_matcher",
    "context",
    "create_asgi_app",
    "deny",
    "halt",
    "merge",
    "parse_event",
    "parse_output",
    "rewrite",
]
