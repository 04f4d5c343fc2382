"""The inspector: a live page of what the runtime sent and what the handlers answered.

Opt-in, for development: ``handler-kit serve --inspector`` (or ``HANDLER_KIT_INSPECTOR=1``, or
``ServerConfig(inspector=True)``) serves ``/_inspector`` behind the server's own tokens, with
a login form because a browser cannot send a bearer header by itself.

The page reads the audit trail, not a copy of its own: what it shows is exactly what was
recorded, redacted by the audit rules (:mod:`handler_kit.ops.audit`), and it sees every
worker's records because they all write one SQLite file, or every replica's when the trail
has a Postgres sink (``HANDLER_KIT_AUDIT=postgresql://...``: read before a SQLite sink, the
filters done in SQL). When the audit trail has neither, the inspector adds a SQLite sink
(``$XDG_CACHE_HOME/handler-kit/inspector/<app>.sqlite3``, one file per app so the workers of one
server share it and records survive a restart); set ``HANDLER_KIT_AUDIT=sqlite:PATH`` to choose
the file.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from handler_kit.config import Extension, OperationsConfig, ServerConfig

if TYPE_CHECKING:
    from handler_kit.auth import BearerAuth, FailedAuthLimiter
    from handler_kit.core.app import HookApp

__all__ = [
    "audit_postgres_url",
    "audit_sqlite_path",
    "default_audit_path",
    "inspector_extension",
    "with_audit_store",
]


def default_audit_path(config: ServerConfig, app_name: str) -> Path:
    """Where the inspector keeps the audit records of ``app_name`` when none is configured."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", app_name).strip("._") or "app"
    return config.user_cache_dir() / "handler-kit" / "inspector" / f"{safe}.sqlite3"


def audit_sqlite_path(operations: OperationsConfig) -> str | None:
    """The file of the audit trail's first SQLite sink, if it has one."""
    for spec in operations.audit:
        kind, _, path = spec.strip().partition(":")
        if kind == "sqlite" and path:
            return path
    from handler_kit.ops.audit.sqlite import SQLiteSink

    for sink in operations.audit_sinks:
        if isinstance(sink, SQLiteSink):
            return sink.path
    return None


def audit_postgres_url(operations: OperationsConfig) -> str | None:
    """The URL of the audit trail's first Postgres sink, if it has one."""
    for spec in operations.audit:
        if spec.strip().startswith(("postgresql://", "postgres://")):
            return spec.strip()
    from handler_kit.ops.audit.postgres import PostgresSink

    for sink in operations.audit_sinks:
        if isinstance(sink, PostgresSink):
            return sink.url
    return None


def with_audit_store(config: ServerConfig, app_name: str) -> ServerConfig:
    """``config`` with an audit sink for the inspector to read: itself when the audit trail
    has a Postgres or SQLite sink, else a copy that adds the default SQLite file."""
    operations = config.operations
    if audit_postgres_url(operations) is not None or audit_sqlite_path(operations) is not None:
        return config
    default = default_audit_path(config, app_name)
    operations = dataclasses.replace(
        config.operations, audit=(*config.operations.audit, f"sqlite:{default}")
    )
    return dataclasses.replace(config, operations=operations)


def inspector_extension(
    hook_app: HookApp,
    config: ServerConfig,
    auth: BearerAuth | None,
    *,
    failures: FailedAuthLimiter | None = None,
) -> Extension:
    """The inspector's routes, login paths and lifespan, reading the audit trail's Postgres
    database, else its SQLite file (``config`` must have one: see :func:`with_audit_store`).
    ``failures``: the count of failed authentications to share with the rest of the server
    (else one of its own, by ``config``'s limit)."""
    from handler_kit.auth import FailedAuthLimiter
    from handler_kit.inspector.core import AsyncRecordStore, Inspector, RecordStore
    from handler_kit.inspector.session import LoginCodes, SessionSigner, session_secret

    store: RecordStore | AsyncRecordStore
    close_store: Callable[[], object]
    url = audit_postgres_url(config.operations)
    if url is not None:
        from handler_kit.ops.audit.postgres import PostgresStore, require_driver

        require_driver(url)
        postgres = PostgresStore(url)
        store, close_store = postgres, postgres.aclose
        source = f"audit trail: {postgres.source}"
    else:
        from handler_kit.ops.audit.sqlite import AuditStore

        path = audit_sqlite_path(config.operations)
        if path is None:
            raise ValueError(
                "the inspector needs a Postgres or SQLite audit sink: use with_audit_store()"
            )
        added = path == str(default_audit_path(config, hook_app.name))
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        sqlite = AuditStore(path)
        store, close_store = sqlite, sqlite.close
        source = f"audit trail{' (added by the inspector)' if added else ''}: {path}"
    secret = session_secret(config.inspector_secret)
    inspector = Inspector(
        store,
        auth=auth,
        app_name=hook_app.name,
        signer=SessionSigner(secret),
        codes=LoginCodes(secret),
        source=source,
        close_store=close_store,
        failures=failures
        or FailedAuthLimiter(
            limit=config.auth_failure_limit,
            window=config.auth_failure_window,
            trusted_proxies=config.trusted_proxies,
        ),
    )
    return Extension(
        routes=tuple(inspector.routes),
        public_paths=frozenset(inspector.public_paths),
        lifespan=inspector.lifespan,
    )
