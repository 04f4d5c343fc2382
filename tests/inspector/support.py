"""What the inspector tests share with their fixtures (tests/inspector/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from handler_kit import HookApp
from handler_kit.testing import RunningServer

# the bearer token of every server the inspector tests start, and what its login form takes
TOKEN = "inspector-test-token-0123456789"

# ``inspected(tls=..., **config)``: what the ``inspected`` fixture gives
Inspected = Callable[..., AbstractContextManager[tuple[RunningServer, HookApp]]]
