"""Old import paths, kept working for one release with a :class:`DeprecationWarning`.

handler-kit's modules moved into packages (``handler_kit.app`` is now
``handler_kit.core.app``, ``handler_kit.audit_sqlite`` is ``handler_kit.ops.audit.sqlite``...).
An import of an old path is answered by a small module that forwards every attribute to the
new one, so ``from handler_kit.audit_sqlite import AuditStore`` keeps working and says where
the name lives now. The finder is consulted only after the normal ones found nothing, so it
costs nothing to an import of a current module, and installing it imports nothing.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

# not typing's: importing typing is a share of every command hook's start-up
TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.abc import Loader as _LoaderBase
    from typing import Any
else:
    _LoaderBase = object

# old module -> the module its names live in now
MOVED: dict[str, str] = {
    "handler_kit.events": "handler_kit.core.events",
    "handler_kit.outputs": "handler_kit.core.outputs",
    "handler_kit.matchers": "handler_kit.core.matchers",
    "handler_kit.merge": "handler_kit.core.merge",
    "handler_kit.app": "handler_kit.core.app",
    "handler_kit.loader": "handler_kit.core.loader",
    "handler_kit.document": "handler_kit.runbear.document",
    "handler_kit.generate": "handler_kit.runbear.generate",
    "handler_kit.claude_settings": "handler_kit.claude_code.settings",
    "handler_kit.operations": "handler_kit.ops.operations",
    "handler_kit.audit": "handler_kit.ops.audit.trail",
    "handler_kit.audit_records": "handler_kit.ops.audit.records",
    "handler_kit.audit_process": "handler_kit.ops.audit.process",
    "handler_kit.audit_sqlite": "handler_kit.ops.audit.sqlite",
    "handler_kit.metrics": "handler_kit.ops.metrics",
    "handler_kit.tracing": "handler_kit.ops.tracing",
    "handler_kit.idempotency": "handler_kit.ops.idempotency",
    "handler_kit.http": "handler_kit.server.webhook",
    "handler_kit.mcp": "handler_kit.server.mcp",
    "handler_kit.dev_tls": "handler_kit.server.dev_tls",
    "handler_kit.pytest_plugin": "handler_kit.testing.pytest_plugin",
    "handler_kit.cli_serve": "handler_kit.cli.serve",
    "handler_kit.cli_dispatch": "handler_kit.cli.dispatch",
    "handler_kit.cli_document": "handler_kit.cli.document",
}


class _Forwarding(types.ModuleType):
    """An old module path: every attribute is read from the module that holds it now."""

    def __init__(self, name: str, target: str) -> None:
        super().__init__(name, f"Deprecated alias of {target}.")
        self.__target = target

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.__target), attr)

    def __dir__(self) -> list[str]:
        return dir(importlib.import_module(self.__target))


# Plain classes, not importlib.abc subclasses: importlib.abc imports importlib.resources, a cost
# every command hook would pay on start-up for a path it almost never takes.
class _Loader(_LoaderBase):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        target = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} is deprecated: import from {target} (or from handler_kit); "
            "the old path will be removed in the next release",
            DeprecationWarning,
            # the warnings module skips the import machinery's frames: this names the import
            stacklevel=2,
        )
        return _Forwarding(spec.name, target)

    def exec_module(self, module: types.ModuleType) -> None:
        importlib.import_module(MOVED[module.__name__])  # fail now if the target cannot load


class _Finder:
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader())


def install() -> None:
    """Answer the old paths (once per process)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())
