"""Command hooks: a HookApp run as one (``hook``), each runtime's dialect (``dialects``), and
``handler-kit forward``, a command hook that asks a running server (``forward``).

Nothing is imported here: ``handler-kit forward`` goes through this package and must load
only the standard library, so ``main`` and ``run`` (of ``hook``) are imported on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING to a type checker, without importing typing
if TYPE_CHECKING:
    from typing import Any

    from handler_kit.command.hook import main, run

__all__ = ["main", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from handler_kit.command import hook

        return getattr(hook, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
