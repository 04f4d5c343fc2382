"""The PostgreSQL audit sink (``HANDLER_KIT_AUDIT=postgresql://...``) and its query API.

PostgreSQL when several replicas serve one app: they all write one table, so one inspector
(or one SQL query) sees every replica's decisions. Each record says which app, app version and
replica wrote it (``app``, ``app_version``, ``replica``; :mod:`handler_kit.ops.audit.records`).
It needs the ``postgres`` extra (psycopg 3 and psycopg-pool).

**Writing** (:class:`PostgresSink`): the sink runs where every sink runs, on the audit writer's
thread or process, never on the event loop, and its contract is synchronous (``write`` returns
once the batch is written, and raises on failure), so it holds one plain psycopg connection:
one writer has no use for a pool or an event loop. Each ``write`` is one transaction holding
one multi-row ``INSERT`` (the columns sent as arrays and unnested: one statement, prepared once,
whatever the batch size), committed before ``write`` returns: what the durable audit mode
relies on (group commit: one commit per batch of answers). ``ON CONFLICT (event_id) DO NOTHING``
makes a batch written again after a commit whose acknowledgement was lost harmless. A broken
connection is dropped and opened again by the next ``write``; ``write([])`` is a probe (a
round trip in a transaction), as the sink contract asks.

**Schema**: set up when the sink opens, idempotently and versioned: the version of each
component is kept in ``handler_kit_schema``; migrations run inside one transaction that first
takes a transaction-level advisory lock, so replicas starting at once run them one at a time
(the others then find the work done). A sink whose schema is current takes no lock at all.
Migrations only ever add: an older handler-kit keeps writing to a newer schema. Version 2
(one record per decision) adds ``decision_id``, ``agrees`` and ``schema_version``; the readers
show a version-1 answer and its invocation rows as one decision
(:mod:`handler_kit.ops.audit.reading`).

**Reading** (:class:`PostgresStore`): the inspector's query API, on the server's event loop
through a small async connection pool, in read-only sessions, filters done in SQL with bound
parameters (column names come from a fixed list, never from the request).

PostgreSQL cannot hold a NUL character in a text or ``jsonb`` value, where JSON can: such a
character is written as U+FFFD, as a lone surrogate is
(:func:`~handler_kit.ops.audit.records.writable`).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from handler_kit.ops.audit.reading import DECISION_KINDS, V1_ANSWER, decision_of_v1

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import AsyncConnectionPool

SCHEMES = ("postgresql://", "postgres://")
INSTALL_HINT = "pip install 'handler-kit[postgres]'"
TABLE = "handler_kit_audit"
VERSIONS_TABLE = "handler_kit_schema"
COMPONENT = "audit"
# pg_advisory_xact_lock key of the schema set-up: "hk-audit" as a big-endian integer
LOCK_KEY = int.from_bytes(b"hk-audit", "big", signed=True)

# Each migration: (version, statements). Only ever append; never edit one that shipped.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            f"""
            CREATE TABLE IF NOT EXISTS {TABLE} (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                event_id text NOT NULL UNIQUE,
                kind text NOT NULL,
                answer_id text,
                time timestamptz NOT NULL,
                app text,
                app_version text,
                replica text,
                transport text,
                event text,
                handler text,
                tool_name text,
                decision text,
                status text,
                latency_ms double precision,
                principal text,
                session_id text,
                tool_use_id text,
                trace_id text,
                idempotency_key text,
                record jsonb NOT NULL
            )
            """,
            # what the inspector filters on, newest first; answer_id for an answer's handler
            # calls (each index costs every insert: add your own for other queries)
            f"CREATE INDEX IF NOT EXISTS {TABLE}_event ON {TABLE} (event, id)",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_decision ON {TABLE} (decision, id)",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_status ON {TABLE} (status, id)",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_kind ON {TABLE} (kind, id)",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_replica ON {TABLE} (replica, id)",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_answer ON {TABLE} (answer_id)",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_session ON {TABLE} (session_id)",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_time ON {TABLE} (time)",
        ),
    ),
    (
        # one record per decision: a shadow record's link to its decision and whether it
        # agreed, and each row's schema version; version-1 rows keep theirs (null)
        2,
        (
            f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS decision_id text",
            f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS agrees boolean",
            f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS schema_version integer",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_decision_id ON {TABLE} (decision_id)",
        ),
    ),
)
DB_SCHEMA_VERSION = MIGRATIONS[-1][0]

# (column, SQL array type) copied out of each record, besides ``time`` and ``record``
COLUMNS: tuple[tuple[str, str], ...] = (
    ("event_id", "text"),
    ("kind", "text"),
    ("answer_id", "text"),
    ("app", "text"),
    ("app_version", "text"),
    ("replica", "text"),
    ("transport", "text"),
    ("event", "text"),
    ("handler", "text"),
    ("tool_name", "text"),
    ("decision", "text"),
    ("status", "text"),
    ("latency_ms", "float8"),
    ("principal", "text"),
    ("session_id", "text"),
    ("tool_use_id", "text"),
    ("trace_id", "text"),
    ("idempotency_key", "text"),
    ("decision_id", "text"),
    ("agrees", "boolean"),
    ("schema_version", "int4"),
)
_NAMES = [name for name, _ in COLUMNS]
_INSERT = (
    f"INSERT INTO {TABLE} ({', '.join(_NAMES)}, time, record) "
    f"SELECT * FROM unnest({', '.join(f'%s::{kind}[]' for _, kind in COLUMNS)}, "
    "%s::timestamptz[], %s::text[]::jsonb[]) "
    "ON CONFLICT (event_id) DO NOTHING"
)
# Filters PostgresStore accepts (equality), each a column.
FILTERS = (
    "disagrees",
    "kind",
    "event",
    "handler",
    "tool_name",
    "decision",
    "status",
    "transport",
    "app",
    "app_version",
    "replica",
    "session_id",
    "tool_use_id",
    "trace_id",
)
MAX_LIMIT = 1000
TCP_USER_TIMEOUT_MS = 30_000
# ``\u0000`` in a JSON text (an odd number of backslashes before it: not an escaped backslash)
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def is_postgres_url(spec: str) -> bool:
    return spec.startswith(SCHEMES)


def redact_url(url: str) -> str:
    """``url`` with its password (in the user part or a ``password=`` parameter) replaced by
    ``***``: how a sink or store names its database in a message."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://***"
    netloc = parts.netloc
    user, at, host = netloc.rpartition("@")
    if at and ":" in user:
        netloc = f"{user.split(':', 1)[0]}:***@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, "***" if k.lower() == "password" else v) for k, v in pairs], safe="*"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def require_driver(spec: str) -> None:
    """Raise ValueError (one line, naming the extra) when psycopg or psycopg-pool is missing."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise ValueError(
            f"audit sink {redact_url(spec)}: {exc.name or 'psycopg'} is not installed: "
            f"{INSTALL_HINT}"
        ) from None


def check_url(url: str) -> dict[str, Any]:
    """The libpq parameters of ``url``; ValueError naming it by :func:`redact_url` when libpq
    cannot read it. libpq's own message is not passed on: it quotes the text it stumbled on,
    which can be the whole URL, password included (an unclosed ``[``, a bad ``%`` escape),
    and a sink's failure ends up in the log."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        return conninfo_to_dict(url)
    except ProgrammingError:
        raise ValueError(
            f"audit sink {redact_url(url)}: not a database URL libpq can read (check its "
            "host, port, [IPv6] brackets and %-escapes; postgresql://user@host:5432/db)"
        ) from None


def _conninfo(url: str, **defaults: str) -> dict[str, Any]:
    """libpq parameters of ``url``, with ``defaults`` for those it does not set.

    Always defaulted: ``tcp_user_timeout``, so a database that vanished without closing the
    connection (a partition, a dead host) fails a write within seconds instead of holding
    the writer until the kernel gives up (many minutes)."""
    defaults.setdefault("tcp_user_timeout", str(TCP_USER_TIMEOUT_MS))
    params = check_url(url)
    for key, value in defaults.items():
        params.setdefault(key, value)
    return params


def _text(value: Any) -> Any:
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


def _json_text(line: str) -> str:
    if "\\u0000" in line:
        return _NUL_ESCAPE.sub(lambda m: m.group(1) + "\\ufffd", line)
    return line


def columns_of(records: Sequence[tuple[dict[str, Any], str]]) -> list[list[Any]]:
    """The INSERT's parameters: one array per column, then times and JSON records."""
    arrays: list[list[Any]] = [[] for _ in range(len(COLUMNS) + 2)]
    times, lines = arrays[-2], arrays[-1]
    for record, line in records:
        for index, name in enumerate(_NAMES):
            arrays[index].append(_text(record.get(name)))
        ts = record.get("ts")
        times.append(
            _dt.datetime.fromtimestamp(ts, _dt.UTC)
            if isinstance(ts, int | float)
            else _dt.datetime.now(_dt.UTC)
        )
        lines.append(_json_text(line))
    return arrays


# -- schema ---------------------------------------------------------------------------------


def schema_version(conn: psycopg.Connection[Any]) -> int:
    """The audit schema's version in the connected database (0: none yet)."""
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (VERSIONS_TABLE,)).fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute(
        f"SELECT version FROM {VERSIONS_TABLE} WHERE component = %s", (COMPONENT,)
    ).fetchone()
    return int(found[0]) if found else 0


def ensure_schema(conn: psycopg.Connection[Any]) -> int:
    """Create or upgrade the audit schema; return its version. Safe to run from any number of
    processes at once: the work is done under an advisory lock, in one transaction."""
    current = schema_version(conn)
    if current >= DB_SCHEMA_VERSION:
        return current
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {VERSIONS_TABLE} ("
            "component text PRIMARY KEY, version integer NOT NULL, "
            "updated_at timestamptz NOT NULL DEFAULT now())"
        )
        found = conn.execute(
            f"SELECT version FROM {VERSIONS_TABLE} WHERE component = %s", (COMPONENT,)
        ).fetchone()
        current = int(found[0]) if found else 0
        if current >= DB_SCHEMA_VERSION:
            return current
        for version, statements in MIGRATIONS:
            if version > current:
                for statement in statements:
                    conn.execute(statement)
        conn.execute(
            f"INSERT INTO {VERSIONS_TABLE} (component, version) VALUES (%s, %s) "
            "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, updated_at = now()",
            (COMPONENT, DB_SCHEMA_VERSION),
        )
    return DB_SCHEMA_VERSION


# -- the sink -------------------------------------------------------------------------------


class PostgresSink:
    """Appends records to the ``handler_kit_audit`` table (schema set up when it opens).

    ``url``: a libpq URL (``postgresql://user@host:5432/db?sslmode=require``). A password is
    better given as ``PGPASSWORD`` or a password file than in the URL; either way it is never
    shown: messages name the database by :func:`redact_url`.

    Every ``write`` commits before it returns. ``durable=True`` (the durable audit mode) also
    sets ``synchronous_commit=on`` for the session, whatever the server's default: the commit
    returns once it is flushed to the write-ahead log.
    """

    def __init__(self, url: str, *, durable: bool = False, connect_timeout: float = 10.0) -> None:
        self.url = url
        self.durable = durable
        self.connect_timeout = connect_timeout
        self.conn: psycopg.Connection[Any] | None = None

    def __repr__(self) -> str:
        return f"PostgresSink({redact_url(self.url)!r})"

    def open(self) -> None:
        self._connection()

    def _connection(self) -> psycopg.Connection[Any]:
        if self.conn is not None and not self.conn.closed:
            return self.conn
        import psycopg

        params = _conninfo(
            self.url,
            connect_timeout=str(max(1, round(self.connect_timeout))),
            application_name="handler-kit audit",
        )
        if self.durable:
            options = params.pop("options", "")
            params["options"] = f"{options} -c synchronous_commit=on".strip()
        conn = psycopg.connect(autocommit=True, **params)
        try:
            ensure_schema(conn)
        except BaseException:
            conn.close()
            raise
        self.conn = conn
        return conn

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        """Insert the batch in one transaction, committed before returning; raise (nothing of
        the batch written) otherwise. An empty batch is a probe: a round trip to the server."""
        arrays = columns_of(records) if records else None
        conn = self._connection()
        try:
            with conn.transaction():
                if arrays is None:
                    conn.execute("SELECT 1")
                else:
                    conn.execute(_INSERT, arrays, prepare=True)
        except BaseException:
            if conn.broken or conn.closed:  # opened again by the next write
                conn.close()
                self.conn = None
            raise

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


# -- the query API --------------------------------------------------------------------------


class PostgresStore:
    """Read the audit records of a Postgres sink: the inspector's query API, async.

    The same methods as :class:`~handler_kit.ops.audit.sqlite.AuditStore`, as coroutines run
    on the server's event loop: ``recent``, ``get``, ``count``. Records come back as the dicts
    that were written, plus ``id`` (increasing in insertion order; what ``since_id`` compares
    against). The pool opens on first use, in the loop that uses it (each server worker has
    its own), with read-only sessions.
    """

    def __init__(self, url: str, *, max_size: int = 4, timeout: float = 10.0) -> None:
        self.url = url
        self.max_size = max_size
        self.timeout = timeout
        self._pool: AsyncConnectionPool | None = None
        self._opening = asyncio.Lock()

    def __repr__(self) -> str:
        return f"PostgresStore({redact_url(self.url)!r})"

    @property
    def source(self) -> str:
        """The database, as the inspector page names it (no password)."""
        return redact_url(self.url)

    async def _connections(self) -> AsyncConnectionPool:
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is None:
                from psycopg_pool import AsyncConnectionPool

                params = _conninfo(
                    self.url,
                    connect_timeout=str(max(1, round(self.timeout))),
                    application_name="handler-kit inspector",
                )
                # read-only sessions: the inspector can never change the trail it shows
                options = params.pop("options", "")
                params["options"] = f"{options} -c default_transaction_read_only=on".strip()
                pool: AsyncConnectionPool = AsyncConnectionPool(
                    kwargs={"autocommit": True, **params},
                    min_size=1,
                    max_size=self.max_size,
                    timeout=self.timeout,
                    open=False,
                    name="handler-kit-inspector",
                )
                await pool.open()
                self._pool = pool
        return self._pool

    async def _fetch(self, query: Any, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        from psycopg import errors

        pool = await self._connections()
        async with pool.connection() as conn:
            try:
                cursor = await conn.execute(query, params)
            except errors.UndefinedTable:  # no sink has written yet: an empty trail
                return []
            return await cursor.fetchall()

    @staticmethod
    def _where(filters: Mapping[str, str | None]) -> tuple[list[Any], list[Any]]:
        from psycopg import sql

        kind = filters.get("kind")
        where: list[Any] = []
        params: list[Any] = []
        if kind in (None, "decision", V1_ANSWER):
            where.append(sql.SQL("kind IN ('decision', 'answer')"))
        else:
            where.append(sql.SQL("kind = %s"))
            params.append(_text(kind))
        for key, value in filters.items():
            if key not in FILTERS:
                raise ValueError(f"unknown filter {key!r}; use one of {', '.join(FILTERS)}")
            if value is None or key == "kind":
                continue
            if key == "decision" and value == "none":
                where.append(sql.SQL("decision IS NULL"))
            elif key == "handler":
                # one of the decision's handlers: objects (version 2) or names (version 1)
                where.append(
                    sql.SQL(
                        "(record->'handlers' @> jsonb_build_array(jsonb_build_object('name', "
                        "%s::text)) OR record->'handlers' @> jsonb_build_array(%s::text))"
                    )
                )
                params += [_text(value), _text(value)]
            elif key == "disagrees":
                where.append(
                    sql.SQL(
                        "event_id IN (SELECT decision_id FROM {} WHERE kind = 'shadow' "
                        "AND agrees = false AND decision_id IS NOT NULL)"
                    ).format(sql.Identifier(TABLE))
                )
            else:
                where.append(sql.SQL("{} = %s").format(sql.Identifier(key)))
                # compared as written: a NUL was stored as U+FFFD (and cannot be sent)
                params.append(_text(value))
        return where, params

    async def recent(
        self, limit: int = 50, *, since_id: int | None = None, **filters: str | None
    ) -> list[dict[str, Any]]:
        """The newest decisions first, at most ``limit`` (capped at 1,000).

        ``since_id``: only records inserted after that id. Filters (equality): ``kind``
        (``decision``, the default, which version 1's ``answer`` records are too; or
        ``shadow``), ``disagrees`` (any value: decisions a shadow record disagreed with),
        ``event``, ``handler`` (one of the decision's handlers), ``tool_name``, ``decision``
        (``"none"``: no decision),
        ``status``, ``transport``, ``app``, ``app_version``, ``replica``, ``session_id``,
        ``tool_use_id``, ``trace_id``.
        """
        from psycopg import sql

        where, params = self._where(filters)
        if since_id is not None:
            where.append(sql.SQL("id > %s"))
            params.append(int(since_id))
        query = sql.SQL("SELECT id, record FROM {}").format(sql.Identifier(TABLE))
        query += sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where)
        query += sql.SQL(" ORDER BY id DESC LIMIT %s")
        params.append(max(1, min(int(limit), MAX_LIMIT)))
        return await self._grouped([_row(row) for row in await self._fetch(query, params)])

    async def _grouped(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``records`` with each version-1 answer as a decision, its invocation rows its
        handlers (one query for them all)."""
        answers = [r["event_id"] for r in records if r.get("kind") == V1_ANSWER]
        if not answers:
            return records
        found: dict[str, list[dict[str, Any]]] = {}
        for row in await self._fetch(
            f"SELECT id, record FROM {TABLE} WHERE answer_id = ANY(%s) ORDER BY id", (answers,)
        ):
            invocation = _row(row)
            found.setdefault(invocation["answer_id"], []).append(invocation)
        return [
            decision_of_v1(r, found.get(r["event_id"], [])) if r.get("kind") == V1_ANSWER else r
            for r in records
        ]

    async def get(self, event_id: str) -> dict[str, Any] | None:
        """One record by ``event_id``; a decision with its ``handlers`` (a version-1 answer's
        from its invocation rows) and its ``shadows`` (the shadow records linked to it)."""
        event_id = _text(event_id)
        rows = await self._fetch(f"SELECT id, record FROM {TABLE} WHERE event_id = %s", (event_id,))
        if not rows:
            return None
        (record,) = await self._grouped([_row(rows[0])])
        if record.get("kind") in DECISION_KINDS:
            shadows = await self._fetch(
                f"SELECT id, record FROM {TABLE} WHERE decision_id = %s AND kind = 'shadow' "
                "ORDER BY id",
                (event_id,),
            )
            record["shadows"] = [_row(shadow) for shadow in shadows]
        return record

    async def count(self, **filters: str | None) -> int:
        """How many records match ``filters`` (same names as :meth:`recent`)."""
        from psycopg import sql

        where, params = self._where(filters)
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(TABLE))
        query += sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where)
        rows = await self._fetch(query, params)
        return int(rows[0][0]) if rows else 0

    async def aclose(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()


def _row(row: tuple[Any, ...]) -> dict[str, Any]:
    record: dict[str, Any] = dict(row[1])
    record["id"] = row[0]
    return record
