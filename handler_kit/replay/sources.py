"""Where recorded decisions are read from: a JSON-lines file, ``sqlite:PATH`` or a
``postgresql://`` URL, the three sinks of the audit trail, oldest decision first.

The SQL stores are read in pages by row id (the order of writing), through the audit trail's
own connection helpers; only the columns the filters need are used, so a store written by
either schema version reads the same.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from handler_kit.ops.audit.reading import decisions
from handler_kit.replay.recorded import DECISION_KINDS, RecordedDecision, from_record, is_decision

PAGE = 500


# A line that holds a decision, told without parsing it (counting is a quick first pass)
_DECISION_LINE = re.compile(r'"kind"\s*:\s*"(?:answer|decision)"')


class SourceError(Exception):
    """A source that cannot be read: the message names it (a URL without its password)."""


@dataclass(frozen=True)
class Filters:
    """Which decisions to replay: ``since``/``until`` (seconds since the epoch, ``until``
    excluded), the ``event`` name, a ``handler`` that took part, at most ``limit``."""

    since: float | None = None
    until: float | None = None
    event: str | None = None
    handler: str | None = None
    limit: int | None = None

    def keeps(self, decision: RecordedDecision) -> bool:
        if self.since is not None and decision.ts < self.since:
            return False
        if self.until is not None and decision.ts >= self.until:
            return False
        if self.event is not None and decision.event != self.event:
            return False
        return self.handler is None or self.handler in decision.handler_names


class Source(Protocol):
    """Recorded decisions, oldest first."""

    name: str

    def count(self, filters: Filters) -> int | None:
        """About how many decisions :meth:`decisions` reads (for a progress bar)."""

    def decisions(self, filters: Filters) -> Iterator[RecordedDecision]: ...

    def close(self) -> None: ...


def open_source(spec: str) -> Source:
    """The source ``spec`` names: ``sqlite:PATH``, ``postgresql://...`` (or ``postgres://``),
    else a JSON-lines file (``jsonl:PATH`` or the path)."""
    from handler_kit.ops.audit.postgres import is_postgres_url

    if spec.startswith("sqlite:"):
        return SQLiteSource(spec.removeprefix("sqlite:"))
    if is_postgres_url(spec):
        return PostgresSource(spec)
    return JsonLinesSource(spec.removeprefix("jsonl:"))


def limited(decisions: Iterator[RecordedDecision], filters: Filters) -> Iterator[RecordedDecision]:
    kept = 0
    for decision in decisions:
        if filters.limit is not None and kept >= filters.limit:
            return
        if filters.keeps(decision):
            kept += 1
            yield decision


class JsonLinesSource:
    """A file of JSON lines, as the ``jsonl:`` sink writes it (both versions, mixed)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.name = str(path)
        if not self.path.is_file():
            raise SourceError(
                f"{path}: no such file (a JSON-lines audit log, sqlite:PATH or a postgresql:// URL)"
            )

    def count(self, filters: Filters) -> int | None:
        total = 0
        with self._open() as lines:
            for line in lines:
                if _DECISION_LINE.search(line):
                    total += 1
        return total

    def _open(self) -> Any:
        try:
            return self.path.open(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise SourceError(f"cannot read {self.path}: {exc.strerror or exc}") from None

    def decisions(self, filters: Filters) -> Iterator[RecordedDecision]:
        return limited(self._all(), filters)

    def _all(self) -> Iterator[RecordedDecision]:
        # the audit trail's own reading: each version-1 answer with its invocations
        for record in decisions(self._records()):
            if is_decision(record):
                yield from_record(record)

    def _records(self) -> Iterator[dict[str, Any]]:
        with self._open() as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    raise SourceError(
                        f"{self.path}:{number}: not a JSON line (is it an audit log?)"
                    ) from None
                if isinstance(record, dict):
                    yield record

    def close(self) -> None:
        pass


class _SQLSource:
    """What the SQLite and Postgres sources share: pages of decision rows by row id, a
    version-1 answer's invocations by ``answer_id``."""

    name: str
    placeholder = "?"
    table = "audit"

    def _rows(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _record(self, value: Any) -> dict[str, Any]:
        record: dict[str, Any] = json.loads(value) if isinstance(value, str) else dict(value)
        return record

    def _time_clause(self, op: str) -> str:
        raise NotImplementedError

    def _where(self, filters: Filters) -> tuple[str, list[Any]]:
        p = self.placeholder
        clauses = [f"kind IN ({', '.join(p for _ in DECISION_KINDS)})"]
        params: list[Any] = list(DECISION_KINDS)
        if filters.event is not None:
            clauses.append(f"event = {p}")
            params.append(filters.event)
        if filters.since is not None:
            clauses.append(self._time_clause(">="))
            params.append(filters.since)
        if filters.until is not None:
            clauses.append(self._time_clause("<"))
            params.append(filters.until)
        return " AND ".join(clauses), params

    def count(self, filters: Filters) -> int | None:
        where, params = self._where(filters)
        rows = self._rows(f"SELECT count(*) FROM {self.table} WHERE {where}", params)
        return int(rows[0][0])

    def decisions(self, filters: Filters) -> Iterator[RecordedDecision]:
        return limited(self._all(filters), filters)

    def _all(self, filters: Filters) -> Iterator[RecordedDecision]:
        p = self.placeholder
        where, params = self._where(filters)
        last = 0
        while True:
            rows = self._rows(
                f"SELECT id, record FROM {self.table} WHERE {where} AND id > {p} "
                f"ORDER BY id LIMIT {PAGE}",
                [*params, last],
            )
            for row_id, value in rows:
                last = row_id
                record = self._record(value)
                invocations: list[dict[str, Any]] = []
                if record.get("kind") == "answer":
                    children = self._rows(
                        f"SELECT record FROM {self.table} WHERE answer_id = {p} ORDER BY id",
                        [record.get("event_id")],
                    )
                    invocations = [self._record(child[0]) for child in children]
                yield from_record(record, invocations)
            if len(rows) < PAGE:
                return


class SQLiteSource(_SQLSource):
    """The ``audit`` table of a SQLite sink's file, read only."""

    def __init__(self, path: str) -> None:
        import sqlite3

        from handler_kit.ops.audit.sqlite import connect

        self.name = f"sqlite:{path}"
        if not Path(path).is_file():
            raise SourceError(f"{self.name}: no such file")
        try:
            self.conn = connect(path)
            self.conn.execute("PRAGMA query_only=ON")
            found = self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit'"
            ).fetchone()
        except sqlite3.Error as exc:
            raise SourceError(f"{self.name}: not a SQLite audit store ({exc})") from None
        if found is None:
            self.conn.close()
            raise SourceError(f"{self.name}: no audit table (not a handler-kit audit store)")

    def _time_clause(self, op: str) -> str:
        return f"ts {op} ?"

    def _rows(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self.conn.execute(sql, params).fetchall()
        return rows

    def close(self) -> None:
        self.conn.close()


class PostgresSource(_SQLSource):
    """The audit table of a Postgres sink, in a read-only session."""

    placeholder = "%s"

    def __init__(self, url: str) -> None:
        from handler_kit.ops.audit import postgres

        self.name = postgres.redact_url(url)
        self.table = postgres.TABLE
        try:
            postgres.require_driver(url)
            import psycopg

            params = postgres._conninfo(url, connect_timeout="10")
            self.conn: Any = psycopg.connect(**params, autocommit=True)
            self.conn.execute("SET default_transaction_read_only = on")
        except ValueError as exc:  # an unreadable URL, named without its password
            raise SourceError(str(exc)) from None
        except Exception as exc:
            raise SourceError(f"cannot read {self.name}: {_one_line(exc, url)}") from None
        found = self.conn.execute("SELECT to_regclass(%s) IS NOT NULL", (self.table,)).fetchone()
        if not (found and found[0]):
            self.conn.close()
            raise SourceError(f"{self.name}: no {self.table} table (no audit records)")

    def _time_clause(self, op: str) -> str:
        return f"time {op} to_timestamp(%s)"

    def _rows(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self.conn.execute(sql, params).fetchall()
        return rows

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


def _one_line(exc: BaseException, url: str) -> str:
    """The driver's message, on one line, the URL's password taken out of it."""
    from urllib.parse import urlsplit

    text = " ".join(str(exc).split()) or type(exc).__name__
    password = urlsplit(url).password
    return text.replace(password, "***") if password else text


Progress = Callable[[int], None]
