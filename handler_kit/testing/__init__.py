"""Testing helpers: :class:`HookClient`, :func:`running_server` and the pytest fixtures."""

from handler_kit.testing.client import (
    HookClient,
    HookResult,
    RunningServer,
    read_result,
    running_server,
)

__all__ = ["HookClient", "HookResult", "RunningServer", "read_result", "running_server"]
