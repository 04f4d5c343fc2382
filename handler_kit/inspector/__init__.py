"""The inspector: a live page of what the runtime sent and what the handlers answered.

Opt-in, for development: ``handler-kit serve --inspector`` (or ``HANDLER_KIT_INSPECTOR=1``, or
``ServerConfig(inspector=True)``) serves ``/_inspector`` behind the server's own tokens, with
a login form because a browser cannot send a bearer header by itself.

The page reads the audit trail, not a copy of its own: what it shows is exactly what was
recorded, redacted by the audit rules (:mod:`handler_kit.audit`), and it sees every worker's
records because they all write one SQLite file. When the audit trail has no SQLite sink, the
inspector adds one (``$XDG_CACHE_HOME/handler-kit/inspector/<app>.sqlite3``, one file per app
so the workers of one server share it and records survive a restart); set
``HANDLER_KIT_AUDIT=sqlite:PATH`` to choose the file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handler_kit.app import HookApp
    from handler_kit.auth import BearerAuth
    from handler_kit.inspector.core import Inspector

__all__ = ["audit_sqlite_path", "create_inspector", "default_audit_path"]


def default_audit_path(app_name: str) -> Path:
    """Where the inspector keeps the audit records of ``app_name`` when none is configured."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", app_name).strip("._") or "app"
    return Path(cache) / "handler-kit" / "inspector" / f"{safe}.sqlite3"


def audit_sqlite_path(operations: Any) -> str | None:
    """The file of the audit trail's first SQLite sink, if it has one."""
    if operations is None:
        return None
    for spec in getattr(operations, "audit", None) or []:
        kind, _, path = spec.strip().partition(":")
        if kind == "sqlite" and path:
            return path
    from handler_kit.audit_sqlite import SQLiteSink

    for sink in getattr(operations, "audit_sinks", None) or []:
        if isinstance(sink, SQLiteSink):
            return sink.path
    return None


def create_inspector(hook_app: HookApp, config: Any, auth: BearerAuth | None) -> Inspector:
    """The inspector of a server being built from ``config``.

    Called before the server installs its operations (audit trail), so that the SQLite sink
    it adds when there is none is part of the trail the operations build.
    """
    from handler_kit.audit_sqlite import AuditStore
    from handler_kit.inspector.core import Inspector
    from handler_kit.operations import OperationsConfig

    path = audit_sqlite_path(config.operations)
    source = f"audit trail: {path}"
    if path is None:
        default = default_audit_path(hook_app.name)
        default.parent.mkdir(parents=True, exist_ok=True)
        path = str(default)
        if config.operations is None:
            config.operations = OperationsConfig()
        config.operations.audit = [*config.operations.audit, f"sqlite:{path}"]
        source = f"audit trail (added by the inspector): {path}"
    store = AuditStore(path)
    return Inspector(
        store, auth=auth, app_name=hook_app.name, source=source, close_store=store.close
    )
