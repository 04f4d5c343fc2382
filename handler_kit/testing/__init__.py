"""Testing helpers: :class:`HookClient`, :func:`running_server` and the pytest fixtures.

The names load on first use (PEP 562): pytest imports this package for the fixture plugin
in every run of every project that has handler-kit installed, and the client brings the
server stack with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handler_kit.testing.client import (
        HookClient,
        HookResult,
        RunningServer,
        read_result,
        running_server,
    )

__all__ = ["HookClient", "HookResult", "RunningServer", "read_result", "running_server"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(importlib.import_module("handler_kit.testing.client"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
