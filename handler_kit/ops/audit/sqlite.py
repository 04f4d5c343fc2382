"""The SQLite audit sink (``HANDLER_KIT_AUDIT=sqlite:PATH``) and its query API.

SQLite because an operator inspecting decisions on one machine should need nothing else: one
file, readable with ``sqlite3`` or :class:`AuditStore` (which the live inspector page uses).
WAL mode lets several worker processes append while a reader queries; each batch is one
transaction. Every record is kept whole in ``record`` (JSON); the columns the inspector filters
on are copied out and indexed.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

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
)
_INSERT = (
    f"INSERT INTO audit ({', '.join(COLUMNS)}, record) "
    f"VALUES ({', '.join('?' for _ in COLUMNS)}, ?)"
)
# Filters recent() accepts: each an indexed or cheap column.
FILTERS = ("kind", "event", "handler", "tool_name", "decision", "status", "transport")


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
            conn.executescript(SCHEMA)
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
    write order, what ``since_id`` compares against).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = connect(self.path)
            conn.executescript(SCHEMA)  # an empty store reads as empty, not as an error
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
        """The newest records first, at most ``limit`` (capped at 1,000).

        ``since_id``: only records written after that row id (poll with the largest id seen).
        Filters (equality): ``kind`` (``answer``/``invocation``), ``event``, ``handler``,
        ``tool_name``, ``decision``, ``status``, ``transport``; ``decision="none"`` matches
        records without a decision.
        """
        where: list[str] = []
        params: list[Any] = []
        for key, value in filters.items():
            if key not in FILTERS:
                raise ValueError(f"unknown filter {key!r}; use one of {', '.join(FILTERS)}")
            if value is None:
                continue
            if key == "decision" and value == "none":
                where.append("decision IS NULL")
            else:
                where.append(f"{key} = ?")
                params.append(value)
        if since_id is not None:
            where.append("id > ?")
            params.append(int(since_id))
        sql = "SELECT id, record FROM audit"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(max(1, min(int(limit), 1000)))
        with self._lock:
            rows = self._connection().execute(sql, params).fetchall()
        return [_row(row) for row in rows]

    def get(self, event_id: str) -> dict[str, Any] | None:
        """One record by ``event_id``; an answer record comes with its ``invocations``."""
        with self._lock:
            conn = self._connection()
            row = conn.execute(
                "SELECT id, record FROM audit WHERE event_id = ?", (event_id,)
            ).fetchone()
            if row is None:
                return None
            record = _row(row)
            if record.get("kind") == "answer":
                children = conn.execute(
                    "SELECT id, record FROM audit WHERE answer_id = ? ORDER BY id", (event_id,)
                ).fetchall()
                record["invocations"] = [_row(child) for child in children]
        return record

    def count(self, **filters: str | None) -> int:
        """How many records match ``filters`` (same names as :meth:`recent`)."""
        where = []
        params = []
        for key, value in filters.items():
            if key not in FILTERS:
                raise ValueError(f"unknown filter {key!r}")
            if value is not None:
                where.append(f"{key} = ?")
                params.append(value)
        sql = "SELECT COUNT(*) FROM audit" + (" WHERE " + " AND ".join(where) if where else "")
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
