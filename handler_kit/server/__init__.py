"""The server: one ASGI app per HookApp serving ``/healthz``, the webhook and MCP tools."""

from __future__ import annotations

import warnings
from typing import Any

from handler_kit.server.app import HandlerKitASGI, app_from_env, create_asgi_app, describe_routes

__all__ = ["HandlerKitASGI", "app_from_env", "create_asgi_app", "describe_routes"]

# names this module had when it was a single module, now in handler_kit.config
_MOVED_TO_CONFIG = frozenset({"ServerConfig", "ConfigError", "DEFAULT_MAX_BODY_BYTES"})


def __getattr__(name: str) -> Any:
    if name in _MOVED_TO_CONFIG:
        warnings.warn(
            f"handler_kit.server.{name} is deprecated: import it from handler_kit.config "
            "(or handler_kit); the old path will be removed in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        import handler_kit.config

        value = getattr(handler_kit.config, name)
        globals()[name] = value  # warn once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
