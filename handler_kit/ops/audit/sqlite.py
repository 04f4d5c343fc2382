"""The SQLite audit sink (``HANDLER_KIT_AUDIT=sqlite:PATH``) and its query API.

SQLite because an operator inspecting decisions on one machine should need nothing else: one
file, readable with ``sqlite3`` or :class:`AuditStore` (which the live inspector page uses).
WAL mode lets several worker processes append while a reader queries; each batch is one
transaction. Every record is kept whole in ``record`` (JSON); the columns the inspector filters
on are copied out and indexed.

**Versions.** The file's schema version is its ``user_version``: a store of version 1 (one row
per handler invocation and one per answer) is upgraded on first open (:func:`ensure_schema`,
one ``BEGIN IMMEDIATE`` transaction, so workers opening it at once do it one at a time). The
upgrade only adds columns and indexes: a version-1 writer (a replica not yet upgraded) keeps
inserting its rows, and the readers show them as decisions
(:mod:`handler_kit.ops.audit.reading`).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

from handler_kit.ops.audit.reading import DECISION_KINDS, V1_ANSWER, decision_of_v1

SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    answer_id TEXT,
    ts REAL NOT NULL,
    time TEXT NOT NULL,
    app TEXT,
    transport TEXT,
    event TEXT,
    handler TEXT,
    tool_name TEXT,
    decision TEXT,
    status TEXT,
    latency_ms REAL,
    session_id TEXT,
    tool_use_id TEXT,
    trace_id TEXT,
    idempotency_key TEXT,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_event ON audit (event, id);
CREATE INDEX IF NOT EXISTS audit_decision ON audit (decision, id);
CREATE INDEX IF NOT EXISTS audit_status ON audit (status, id);
CREATE INDEX IF NOT EXISTS audit_answer ON audit (answer_id);
"""
# The store's version (its ``user_version``): 2 adds what one record per decision and its
# shadow records need, to a version-1 table as it is.
STORE_VERSION = 2
ADDED_COLUMNS = (("decision_id", "TEXT"), ("agrees", "INTEGER"), ("schema_version", "INTEGER"))
ADDED_INDEXES = (
    # a decision's shadow records, and the decisions a shadow disagreed with
    "CREATE INDEX IF NOT EXISTS audit_decision_id ON audit (decision_id)",
    # decisions (or shadows) newest first, without the other kind's rows
    "CREATE INDEX IF NOT EXISTS audit_kind ON audit (kind, id)",
)
# Indexed: what the inspector filters on, and answer_id for an answer's invocations (each index
# costs every insert). ``id`` is the rowid: it increases in write order, so "newest first" and
# "since_id" need no index of their own. Add your own indexes for other queries.
COLUMNS = (
    "event_id",
    "kind",
    "answer_id",
    "ts",
    "time",
    "app",
    "transport",
    "event",
    "handler",
    "tool_name",
    "decision",
    "status",
    "latency_ms",
    "session_id",
    "tool_use_id",
    "trace_id",
    "idempotency_key",
    "decision_id",
    "agrees",
    "schema_version",
)
_INSERT = (
    f"INSERT INTO audit ({', '.join(COLUMNS)}, record) "
    f"VALUES ({', '.join('?' for _ in COLUMNS)}, ?)"
)
# Filters recent() accepts: each an indexed or cheap column.
FILTERS = (
    "kind",
    "event",
    "handler",
    "tool_name",
    "decision",
    "status",
    "transport",
    "disagrees",
)
# a decision any of whose handlers has the name (version 2: objects; version 1: names)
_HANDLER_IN = (
    "EXISTS (SELECT 1 FROM json_each(audit.record, '$.handlers') AS h WHERE "
    "CASE h.type WHEN 'object' THEN json_extract(h.value, '$.name') ELSE h.value END = ?)"
)
_DISAGREED = (
    "event_id IN (SELECT decision_id FROM audit WHERE kind = 'shadow' AND agrees = 0 "
    "AND decision_id IS NOT NULL)"
)


def connect(path: str, *, timeout: float = 10.0) -> sqlite3.Connection:
    """A connection in WAL mode with a busy timeout (several workers write one file)."""
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    for attempt in range(50):  # switching to WAL needs a moment alone with the file
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError:
            if attempt == 49:
                raise
            time.sleep(0.02)
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def ensure_schema(conn: sqlite3.Connection) -> int:
    """Create or upgrade the ``audit`` table to :data:`STORE_VERSION`; return the version.
    A store of a newer version is left as it is (an older handler-kit keeps writing)."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version >= STORE_VERSION:
        return version
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version < STORE_VERSION:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            present = {row[1] for row in conn.execute("PRAGMA table_info(audit)")}
            for name, kind in ADDED_COLUMNS:
                if name not in present:
                    conn.execute(f"ALTER TABLE audit ADD COLUMN {name} {kind}")
            for statement in ADDED_INDEXES:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {STORE_VERSION}")
            version = STORE_VERSION
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    return version


class SQLiteSink:
    """Appends records to the ``audit`` table of a SQLite file (created on first use): one
    transaction per batch.

    ``durable=True`` (the durable audit mode) commits with ``synchronous=FULL``: in WAL mode
    each commit fsyncs the log, so a commit is on disk when ``write`` returns. The default,
    ``NORMAL``, fsyncs only at checkpoints: a commit survives a ``kill -9`` of the server (it
    is in the kernel's hands) but the last ones may be lost in a machine crash. One fsync per
    batch, whatever its size, is what group commit pays for.
    """

    def __init__(self, path: str, *, durable: bool = False) -> None:
        self.path = path
        self.durable = durable
        self.conn: sqlite3.Connection | None = None

    def __repr__(self) -> str:
        return f"SQLiteSink({self.path!r})"

    def open(self) -> None:
        conn = connect(self.path)
        try:
            if self.durable:
                conn.execute("PRAGMA synchronous=FULL")
            ensure_schema(conn)
        except BaseException:
            conn.close()
            raise
        self.conn = conn

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        if self.conn is None:
            self.open()
        assert self.conn is not None
        # map() of the dict's own get: no Python frame per column
        rows = [(*map(record.get, COLUMNS), line) for record, line in records]
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany(_INSERT, rows)
            self.conn.execute("COMMIT")
        except BaseException:
            # nothing of the batch stays, and the connection can begin the next one
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class AuditStore:
    """Read the audit records of a SQLite sink: the query API of the inspector.

    Records come back as the dicts that were written, plus ``id`` (the row id: increasing in
    write order, what ``since_id`` compares against), one per decision: a version-1 answer
    with its invocation rows as its ``handlers`` (:func:`~handler_kit.ops.audit.reading.
    decision_of_v1`). Opening a version-1 store upgrades it (:func:`ensure_schema`).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = connect(self.path)
            # an empty store reads as empty, not as an error; a version-1 one is upgraded
            ensure_schema(conn)
            conn.execute("PRAGMA query_only=ON")
            self._conn = conn
        return self._conn

    def recent(
        self,
        limit: int = 50,
        *,
        since_id: int | None = None,
        **filters: str | None,
    ) -> list[dict[str, Any]]:
        """The newest decisions first, at most ``limit`` (capped at 1,000).

        ``since_id``: only records written after that row id (poll with the largest id seen).
        Filters (equality): ``kind`` (``decision``, the default, which version 1's ``answer``
        records are too; or ``shadow``), ``event``, ``handler`` (one of the decision's
        handlers), ``tool_name``, ``decision``, ``status``, ``transport``;
        ``decision="none"`` matches decisions without one; ``disagrees`` (any value) only
        decisions a shadow record disagreed with.
        """
        where, params = _where(filters)
        if since_id is not None:
            where.append("id > ?")
            params.append(int(since_id))
        sql = "SELECT id, record FROM audit WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(max(1, min(int(limit), 1000)))
        with self._lock:
            conn = self._connection()
            records = [_row(row) for row in conn.execute(sql, params).fetchall()]
            return _grouped(conn, records)

    def get(self, event_id: str) -> dict[str, Any] | None:
        """One record by ``event_id``; a decision with its ``handlers`` (a version-1 answer's
        from its invocation rows) and its ``shadows`` (the shadow records linked to it)."""
        with self._lock:
            conn = self._connection()
            row = conn.execute(
                "SELECT id, record FROM audit WHERE event_id = ?", (event_id,)
            ).fetchone()
            if row is None:
                return None
            (record,) = _grouped(conn, [_row(row)])
            if record.get("kind") in DECISION_KINDS:
                shadows = conn.execute(
                    "SELECT id, record FROM audit WHERE decision_id = ? AND kind = 'shadow' "
                    "ORDER BY id",
                    (event_id,),
                ).fetchall()
                record["shadows"] = [_row(shadow) for shadow in shadows]
        return record

    def count(self, **filters: str | None) -> int:
        """How many decisions (or shadow records) match ``filters`` (as :meth:`recent`)."""
        where, params = _where(filters)
        sql = "SELECT COUNT(*) FROM audit WHERE " + " AND ".join(where)
        with self._lock:
            return int(self._connection().execute(sql, params).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _row(row: tuple[int, str]) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(row[1])
    record["id"] = row[0]
    return record


def _where(filters: dict[str, str | None]) -> tuple[list[str], list[Any]]:
    """The conditions and parameters of ``filters`` (column names from :data:`FILTERS`)."""
    kind = filters.get("kind")
    where: list[str]
    params: list[Any]
    if kind in (None, "decision", V1_ANSWER):
        where, params = ["kind IN ('decision', 'answer')"], []
    else:
        where, params = ["kind = ?"], [kind]
    for key, value in filters.items():
        if key not in FILTERS:
            raise ValueError(f"unknown filter {key!r}; use one of {', '.join(FILTERS)}")
        if value is None or key == "kind":
            continue
        if key == "decision" and value == "none":
            where.append("decision IS NULL")
        elif key == "handler":
            where.append(_HANDLER_IN)
            params.append(value)
        elif key == "disagrees":
            where.append(_DISAGREED)
        else:
            where.append(f"{key} = ?")
            params.append(value)
    return where, params


def _grouped(conn: sqlite3.Connection, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` with each version-1 answer as a decision, its invocation rows its
    handlers (one query for them all)."""
    answers = [r["event_id"] for r in records if r.get("kind") == V1_ANSWER]
    if not answers:
        return records
    found: dict[str, list[dict[str, Any]]] = {}
    for start in range(0, len(answers), 500):  # within SQLite's bound parameters
        part = answers[start : start + 500]
        marks = ", ".join("?" for _ in part)
        for row in conn.execute(
            f"SELECT id, record FROM audit WHERE answer_id IN ({marks}) ORDER BY id", part
        ):
            invocation = _row(row)
            found.setdefault(invocation["answer_id"], []).append(invocation)
    return [
        decision_of_v1(r, found.get(r["event_id"], [])) if r.get("kind") == V1_ANSWER else r
        for r in records
    ]
