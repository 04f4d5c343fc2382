"""The decision audit trail: one record per handler invocation and one per merged answer.

A hook server decides what an agent may do, so every decision must be explainable afterwards:
which event arrived, which handler said what, why, how long it took, whether it failed and
what the failure policy made of it. This module turns each :class:`~handler_kit.app.Answer`
(whatever transport carried it: webhook, MCP, command, direct) into records and writes them to
sinks: JSON lines (stdout, stderr or a file) and SQLite (:mod:`handler_kit.audit_sqlite`).

The hot path only enqueues: an observer puts one small item per answer on a bounded queue and
returns; a background thread builds the records (ids, redaction, JSON) and writes them in
batches. :meth:`AuditTrail.close` drains the queue, so a graceful shutdown loses nothing. A
command hook (one process per call, no time for a thread) writes synchronously instead.

**What is recorded** (``SCHEMA_VERSION`` 1), every record:

- ``schema_version``, ``kind`` (``invocation`` or ``answer``), ``event_id`` (new, unique,
  time-ordered), ``time`` (ISO 8601 UTC, when the answer was given), ``app``, ``transport``
  (``webhook``/``mcp``/``command``/``direct``), ``pid``, ``principal`` (who authenticated:
  ``token#N`` or the JWT subject; never the token);
- from the hook input, only identifiers: ``event`` (hook_event_name), ``tool_name``,
  ``session_id``, ``turn_id``, ``tool_use_id``, ``agent_id``;
- ``idempotency_key`` (see :func:`idempotency_key`), ``trace_id``, ``span_id``,
  ``parent_span_id`` (from the incoming W3C ``traceparent`` when sent, else new);
- ``status`` (ok / error / timeout / fail_closed / loop_guarded), ``decision``, ``reason``,
  ``latency_ms``, ``output`` (the Claude Code JSON answered, redacted as below).

Invocation records add ``handler``, ``answer_id`` (the ``event_id`` of their answer record),
``error`` (the failure message: exception type and text) and ``replayed`` (true when an
idempotent handler's recorded answer was replayed without running it). Answer records add
``handlers`` (names, in order), ``failed`` (no answer could be given: 500 / ``isError``) and
``input``: ``tool_input`` (unless ``tool_input=False``), and ``prompt`` /
``last_assistant_message`` only with ``text=True``. Nothing else of the input is ever written
(no ``transcript_path``, ``cwd``, ``user_email``, ``tool_response``...).

**Redaction** (:class:`Redactor`), applied to everything recorded from the input and to every
``updatedInput``: values under keys that look secret (:data:`SECRET_KEY_PATTERN`: password,
secret, token, api key, authorization, cookie, credential, private key, access key, ssn, card
number, cvv...) at any depth; values at configured dotted paths (``tool_input.card.number``,
``tool_input.*.email``; ``*`` matches one key or list index; a ``tool_input.`` path applies to
``updatedInput`` too; ``prompt`` drops a whole top-level field); and, inside any string,
secret-looking values (:data:`SECRET_VALUE_PATTERN`: bearer/basic credentials, JWTs, private-key
blocks, ``sk-``/``ghp_``/``xox?-``/``AKIA`` keys, ``user:password@`` in URLs). Strings longer
than ``max_chars`` (default 2,000) are truncated with a marker.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import datetime as _dt
import hashlib
import logging
import os
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic_core import to_json

from handler_kit.app import FAIL_CLOSED, fail_closed_notice
from handler_kit.outputs import SAFE_DECISIONS

if TYPE_CHECKING:
    from handler_kit.app import Answer, Invocation
    from handler_kit.events import HookEvent

logger = logging.getLogger("handler_kit.audit")

SCHEMA_VERSION = 1
REDACTED = "[REDACTED]"
DEFAULT_MAX_CHARS = 2000
DEFAULT_QUEUE_SIZE = 10_000
BATCH_SIZE = 512

# Keys whose values are never written, at any depth (matched anywhere in the key, any case).
SECRET_KEY_PATTERN = re.compile(
    r"pass(?:word|wd|phrase)|secret|token|api[-_]?key|authori[sz]ation|cookie|credential"
    r"|private[-_]?key|access[-_]?key|session[-_]?key|signature|(?:^|[-_])ssn$"
    r"|card[-_]?(?:number|num|no)|cvv|cvc",
    re.IGNORECASE,
)
# Secret-looking substrings of any recorded string.
SECRET_VALUE_PATTERN = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|(?i:\b(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=-]{8,}"
    r"|\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"
    r"|\b(?:sk|rk|pk)-[A-Za-z0-9_-]{16,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abeprs]-[A-Za-z0-9-]{10,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"
)
# Substrings (of the lower-cased text) without which SECRET_VALUE_PATTERN cannot match: a
# cheap test that spares almost every string the full regular expression.
_SECRET_VALUE_HINTS = (
    "private key",
    "bearer",
    "basic",
    "token",
    "eyj",
    "sk-",
    "rk-",
    "pk-",
    "gh",
    "github_pat_",
    "xox",
    "akia",
    "asia",
    "://",
)
# Identifiers copied from the hook input onto every record.
ID_FIELDS = ("session_id", "turn_id", "tool_use_id", "agent_id")


# -- ids ----------------------------------------------------------------------------------


# Ids come from the random module, as OpenTelemetry's own do: it is seeded from the OS at start
# and reseeded in a forked child, and it costs no system call per id (ids are not secrets).


def new_event_id() -> str:
    """``evt_`` + 32 hex digits: 48 bits of milliseconds then 80 random bits, so ids sort by
    time (like a UUIDv7) and do not collide across workers or replicas."""
    return f"evt_{time.time_ns() // 1_000_000:012x}{random.getrandbits(80):020x}"


def new_trace_id() -> str:
    return f"{random.getrandbits(128) or 1:032x}"


def new_span_id() -> str:
    return f"{random.getrandbits(64) or 1:016x}"


_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$")


def parse_traceparent(value: str | None) -> tuple[str, str] | None:
    """(trace_id, parent span_id) of a valid W3C ``traceparent``, else None."""
    if not value:
        return None
    match = _TRACEPARENT.match(value.strip().lower())
    if match is None:
        return None
    version, trace_id, span_id, _ = match.groups()
    if version == "ff" or trace_id == "0" * 32 or span_id == "0" * 16:
        return None
    return trace_id, span_id


def input_digest(event: HookEvent) -> str:
    """A digest of the whole hook input as received (nulls dropped): the same body gives the
    same digest whichever worker or replica computes it. Key order counts, so an input whose
    keys come in another order is another call: the safe direction (the handler runs)."""
    return hashlib.sha256(event.model_dump_json(exclude_none=True).encode()).hexdigest()[:16]


def idempotency_scope(event: HookEvent) -> str:
    """The most specific identifier the input carries: tool_use_id, then turn_id, prompt_id,
    session_id (``kind=value``), or ``-`` when it has none."""
    for name in ("tool_use_id", "turn_id", "prompt_id", "session_id"):
        value = getattr(event, name, None)
        if isinstance(value, str) and value:
            return f"{name}={value}"
    return "-"


def idempotency_key(event: HookEvent, handler: str | None, digest: str | None = None) -> str:
    """``scope:event:handler:digest``: what makes two calls "the same call".

    The scope (tool_use_id / turn_id / prompt_id / session_id) names the call; the input digest
    makes a reused identifier with a different input a different call, so a replay can never
    hand a recorded "no opinion" to a changed tool input. ``handler`` None is the answer's key.
    """
    digest = digest or input_digest(event)
    return f"{idempotency_scope(event)}:{event.hook_event_name}:{handler or '*'}:{digest}"


# -- redaction ----------------------------------------------------------------------------


class Redactor:
    """Removes secrets from what the audit trail records (see the module docstring).

    ``paths``: dotted paths relative to the hook input (``tool_input.card.number``); ``*``
    matches any one key or list index. ``secret_keys`` / ``secret_values``: the default
    key-name and value-pattern rules (on unless turned off in code).
    """

    def __init__(
        self,
        paths: Iterable[str] = (),
        *,
        secret_keys: bool = True,
        secret_values: bool = True,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self.paths = [tuple(p.strip().split(".")) for p in paths if p.strip()]
        self.secret_keys = secret_keys
        self.secret_values = secret_values
        self.max_chars = max_chars
        # The same short strings (reasons, tool names, ids) and keys come back on every call.
        self._texts: dict[str, str] = {}
        self._keys: dict[str, bool] = {}

    def _path_redacted(self, path: tuple[str, ...]) -> bool:
        for pattern in self.paths:
            if len(pattern) == len(path) and all(
                p == "*" or p == s for p, s in zip(pattern, path, strict=True)
            ):
                return True
        return False

    def text(self, value: str) -> str:
        """A string as recorded: secret-looking substrings replaced, long text truncated."""
        found = self._texts.get(value)
        if found is not None:
            return found
        original = value
        if self.secret_values and len(value) >= 8:
            lowered = value.lower()
            for hint in _SECRET_VALUE_HINTS:
                if hint in lowered:
                    value = SECRET_VALUE_PATTERN.sub(REDACTED, value)
                    break
        if len(value) > self.max_chars:
            dropped = len(value) - self.max_chars
            value = f"{value[: self.max_chars]}...[truncated {dropped} chars]"
        if len(original) <= 200:
            if len(self._texts) >= 4096:
                self._texts.clear()
            self._texts[original] = value
        return value

    def secret_key(self, key: str) -> bool:
        """True when values under ``key`` are never written (cached: keys repeat)."""
        if not self.secret_keys:
            return False
        found = self._keys.get(key)
        if found is None:
            found = SECRET_KEY_PATTERN.search(key) is not None
            if len(self._keys) >= 4096:
                self._keys.clear()
            self._keys[key] = found
        return found

    def value(self, value: Any, path: tuple[str, ...]) -> Any:
        """A copy of ``value`` (found at ``path`` of the input) with the rules applied."""
        if not self.paths:
            return self._walk(value)
        if self._path_redacted(path):
            return REDACTED
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                key: REDACTED if self.secret_key(key) else self.value(item, (*path, key))
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.value(item, (*path, str(i))) for i, item in enumerate(value)]
        return value

    def _walk(self, value: Any) -> Any:
        """:meth:`value` when no path is configured: no path to keep track of."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                key: REDACTED if self.secret_key(key) else self._walk(item)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._walk(item) for item in value]
        return value

    def output(self, output: dict[str, Any]) -> dict[str, Any]:
        """A Claude Code output as recorded: ``updatedInput`` redacted as ``tool_input``."""
        out = {}
        for key, item in output.items():
            if key == "hookSpecificOutput" and isinstance(item, dict):
                specific = {}
                for k, v in item.items():
                    if k == "updatedInput":
                        specific[k] = self.value(v, ("tool_input",))
                    elif k == "decision" and isinstance(v, dict):
                        specific[k] = {
                            dk: self.value(dv, ("tool_input",) if dk == "updatedInput" else ())
                            for dk, dv in v.items()
                        }
                    else:
                        specific[k] = self.value(v, ())
                out[key] = specific
            else:
                out[key] = self.value(item, ())
        return out


# -- records ------------------------------------------------------------------------------


@dataclass(slots=True)
class TraceIds:
    """Ids an OpenTelemetry tracer gave the answer's spans, so records and spans agree."""

    trace_id: str
    answer_span_id: str
    parent_span_id: str | None
    span_ids: list[str]
    answer_event_id: str
    event_ids: list[str]


@dataclass(slots=True)
class Observed:
    """One answer as the observer saw it: what the background thread turns into records."""

    answer: Answer
    transport: str
    principal: str | None
    traceparent: str | None
    end_ns: int
    pid: int
    trace: TraceIds | None = None
    replayed: frozenset[str] = frozenset()


@dataclass
class RecordPolicy:
    """Which parts of the input are recorded, and how they are redacted."""

    redactor: Redactor = field(default_factory=Redactor)
    tool_input: bool = True
    text: bool = False


_STATUS_RANK = {"fail_closed": 5, "timeout": 4, "error": 3, "loop_guarded": 2, "ok": 1}


def output_decision(output: dict[str, Any]) -> tuple[str | None, str | None]:
    """(decision, reason) of a Claude Code output object; ``halt`` for ``continue: false``."""
    specific = output.get("hookSpecificOutput")
    if isinstance(specific, dict):
        if "permissionDecision" in specific:
            return specific["permissionDecision"], specific.get("permissionDecisionReason")
        verdict = specific.get("decision")
        if isinstance(verdict, dict) and "behavior" in verdict:
            return verdict["behavior"], verdict.get("message")
    if output.get("decision") is not None:
        return output["decision"], output.get("reason")
    if output.get("continue") is False:
        return "halt", output.get("stopReason")
    return None, None


def invocation_decision(inv: Invocation, event_name: str) -> tuple[str | None, str | None]:
    """What one handler contributed: its own decision, or the safe one it failed closed to."""
    if inv.status == FAIL_CLOSED:
        return SAFE_DECISIONS.get(event_name), fail_closed_notice(inv)
    out = inv.output
    if out is None:
        return None, None
    if out.decision is not None:
        return out.decision, out.reason
    if out.continue_ is False:
        return "halt", out.stop_reason
    return None, None


def answer_status(answer: Answer) -> str:
    """The answer's status: the most severe of its invocations' (fail_closed first)."""
    best = "ok"
    for inv in answer.invocations:
        if _STATUS_RANK.get(inv.status, 0) > _STATUS_RANK[best]:
            best = inv.status
    return best


_second: list[Any] = [None, ""]  # the last second formatted: records come many per second


def iso_time(ns: int) -> str:
    """``2026-05-09T07:35:25.123Z`` (UTC, milliseconds)."""
    seconds, rest = divmod(ns, 1_000_000_000)
    if _second[0] != seconds:
        stamp = _dt.datetime.fromtimestamp(seconds, _dt.UTC)
        _second[:] = [seconds, stamp.strftime("%Y-%m-%dT%H:%M:%S")]
    return f"{_second[1]}.{rest // 1_000_000:03d}Z"


def build_records(item: Observed, app: str, policy: RecordPolicy) -> list[dict[str, Any]]:
    """The invocation records and the answer record (last) of one observed answer."""
    answer = item.answer
    event = answer.event
    name = event.hook_event_name
    redactor = policy.redactor
    digest = input_digest(event)
    parsed = parse_traceparent(item.traceparent)
    if item.trace is not None:
        trace_id = item.trace.trace_id
        answer_span = item.trace.answer_span_id
        parent_span = item.trace.parent_span_id
    elif parsed is not None:
        trace_id, answer_span = parsed
        parent_span = None
    else:
        trace_id, answer_span, parent_span = new_trace_id(), new_span_id(), None
    answer_id = item.trace.answer_event_id if item.trace is not None else new_event_id()
    common: dict[str, Any] = {
        "time": iso_time(item.end_ns),
        "ts": item.end_ns / 1e9,
        "app": app,
        "transport": item.transport,
        "pid": item.pid,
        "principal": item.principal,
        "event": name,
        "tool_name": getattr(event, "tool_name", None),  # a str: validated by the model
    }
    for key in ID_FIELDS:
        value = getattr(event, key, None)
        common[key] = redactor.text(value) if isinstance(value, str) else value
    records: list[dict[str, Any]] = []
    recorded_output: tuple[dict[str, Any], dict[str, Any]] | None = None
    for index, inv in enumerate(answer.invocations):
        decision, reason = invocation_decision(inv, name)
        if inv.output is None:
            output = None
        elif len(answer.invocations) == 1:
            output = answer.output  # the answer is this handler's output, rendered once
        else:
            output = inv.output.render(name)
        if item.trace is not None:
            event_id, span_id = item.trace.event_ids[index], item.trace.span_ids[index]
        else:
            event_id, span_id = new_event_id(), new_span_id()
        record = {
            "schema_version": SCHEMA_VERSION,
            "kind": "invocation",
            "event_id": event_id,
            "answer_id": answer_id,
            **common,
            "handler": inv.handler.name,
            "idempotency_key": idempotency_key(event, inv.handler.name, digest),
            "trace_id": trace_id,
            "span_id": span_id,
            "parent_span_id": answer_span,
            "status": inv.status,
            "decision": decision,
            "reason": redactor.text(reason) if reason else reason,
            "error": redactor.text(inv.error) if inv.error else None,
            "latency_ms": round(inv.latency_ms, 3),
            "replayed": inv.handler.name in item.replayed,
            "output": redactor.output(output) if output else output,
        }
        if output:
            recorded_output = (output, record["output"])
        records.append(record)
    decision, reason = output_decision(answer.output)
    recorded_input: dict[str, Any] = {}
    if policy.tool_input and getattr(event, "tool_input", None) is not None:
        recorded_input["tool_input"] = redactor.value(event.tool_input, ("tool_input",))  # type: ignore[attr-defined]
    if policy.text:
        for key in ("prompt", "last_assistant_message"):
            value = getattr(event, key, None)
            if value is not None:
                recorded_input[key] = redactor.value(value, (key,))
    records.append(
        {
            "schema_version": SCHEMA_VERSION,
            "kind": "answer",
            "event_id": answer_id,
            **common,
            "handler": None,
            "handlers": [inv.handler.name for inv in answer.invocations],
            "idempotency_key": idempotency_key(event, None, digest),
            "trace_id": trace_id,
            "span_id": answer_span,
            "parent_span_id": parent_span,
            "status": answer_status(answer),
            "failed": answer.failed,
            "decision": decision,
            "reason": redactor.text(reason) if isinstance(reason, str) else reason,
            "latency_ms": round(max((i.latency_ms for i in answer.invocations), default=0.0), 3),
            "input": recorded_input,
            "output": (
                recorded_output[1]  # one handler answered: its output is the answer
                if recorded_output is not None and recorded_output[0] is answer.output
                else redactor.output(answer.output)
            ),
        }
    )
    return records


# -- sinks --------------------------------------------------------------------------------


class AuditSink(Protocol):
    """Where records go. ``open`` and ``write`` run on the writer thread (or, for a command
    hook, the main thread), never on the event loop."""

    def open(self) -> None: ...

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        """Write ``(record, its JSON line)`` pairs; raise on failure."""

    def close(self) -> None: ...


class JsonLinesSink:
    """JSON lines appended to a file, or written to stdout/stderr.

    Files are opened ``O_APPEND`` and each batch goes down in one ``write``: several worker
    processes can share one file without interleaving lines. On stdout/stderr each line is one
    ``write`` (atomic on a pipe up to 4 KiB, the usual container log case).
    """

    def __init__(self, target: str) -> None:
        self.target = target
        self.fd: int | None = None
        self.per_line = target in ("stdout", "stderr")

    def open(self) -> None:
        if self.target == "stdout":
            self.fd = sys.stdout.fileno()
        elif self.target == "stderr":
            self.fd = sys.stderr.fileno()
        else:
            self.fd = os.open(self.target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        if self.fd is None:
            self.open()
        assert self.fd is not None
        if self.per_line:
            for _, line in records:
                _write_all(self.fd, (line + "\n").encode())
        else:
            _write_all(self.fd, "".join(line + "\n" for _, line in records).encode())

    def close(self) -> None:
        if self.fd is not None and not self.per_line:
            with contextlib.suppress(OSError):
                os.fsync(self.fd)
            os.close(self.fd)
        self.fd = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def parse_sinks(specs: Iterable[str], *, command: bool = False) -> list[AuditSink]:
    """Sinks from ``HANDLER_KIT_AUDIT`` items: ``stdout``, ``stderr``, ``jsonl:PATH``,
    ``sqlite:PATH``. Checked now (a bad spec or a missing directory fails at start-up, before
    any worker starts); nothing is opened until the first record.

    A command hook's stdout is its answer, so there ``stdout`` is refused.
    """
    sinks: list[AuditSink] = []
    for raw in specs:
        spec = raw.strip()
        if not spec:
            continue
        kind, _, path = spec.partition(":")
        if spec in ("stdout", "stderr"):
            if command and spec == "stdout":
                raise ValueError(
                    "HANDLER_KIT_AUDIT=stdout cannot be used by a command hook (stdout is its "
                    "answer): use jsonl:PATH or sqlite:PATH"
                )
            sinks.append(JsonLinesSink(spec))
        elif kind in ("jsonl", "sqlite") and path:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise ValueError(f"audit sink {spec!r}: directory {folder} does not exist")
            if kind == "jsonl":
                sinks.append(JsonLinesSink(path))
            else:
                from handler_kit.audit_sqlite import SQLiteSink

                sinks.append(SQLiteSink(path))
        else:
            raise ValueError(
                f"unknown audit sink {spec!r}: use stdout, stderr, jsonl:PATH or sqlite:PATH"
            )
    return sinks


# -- the trail ----------------------------------------------------------------------------


_STOP = object()


class AuditTrail:
    """A bounded queue of observed answers, drained by a background thread into the sinks.

    ``submit`` is the only hot-path call: an ``append`` to a deque, with no lock and no wake-up
    (waking a thread per request costs more than the request's own record). The writer thread
    wakes every ``interval`` seconds (or when asked: flush, close, a full queue), takes what is
    queued and writes it in batches. When ``queue_size`` answers are waiting (the sinks have
    stalled), ``on_full="block"`` (default) makes the request wait rather than lose a record;
    ``"drop"`` drops and counts it (``dropped``). ``synchronous=True`` writes in ``submit``
    itself (command hooks: a one-shot process has no time for a thread).
    """

    def __init__(
        self,
        sinks: Sequence[AuditSink],
        build: Callable[[Observed], list[dict[str, Any]]],
        *,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        on_full: str = "block",
        synchronous: bool = False,
        interval: float = 0.05,
    ) -> None:
        if on_full not in ("block", "drop"):
            raise ValueError("on_full is 'block' or 'drop'")
        self.sinks = list(sinks)
        self.build = build
        self.on_full = on_full
        self.synchronous = synchronous
        self.interval = interval
        self.queue_size = max(1, queue_size)
        self.written = 0
        self.dropped = 0
        self.failed = 0
        self._items: collections.deque[Any] = collections.deque()
        self._wake = threading.Event()
        self._drained = threading.Condition()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._opened = False
        self._closed = False

    # hot path
    def submit(self, item: Observed) -> None:
        if self._closed:
            logger.warning("audit record submitted after the audit trail was closed: dropped")
            self.dropped += 1
            return
        if self.synchronous:
            with self._lock:
                self._write_batch([item])
            return
        if self._thread is None:
            self._start()
        if len(self._items) >= self.queue_size:
            if self.on_full == "drop":
                self.dropped += 1
                if self.dropped in (1, 10, 100) or self.dropped % 1000 == 0:
                    logger.warning("audit queue full: %d records dropped so far", self.dropped)
                return
            with self._drained:
                while len(self._items) >= self.queue_size:
                    self._wake.set()
                    self._drained.wait(0.1)
        self._items.append(item)

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            thread = threading.Thread(target=self._run, name="handler-kit-audit", daemon=True)
            thread.start()
            self._thread = thread
            atexit.register(self.close)

    def _run(self) -> None:
        items = self._items
        stop = False
        while not stop:
            self._wake.wait(self.interval)
            self._wake.clear()
            while items:
                batch: list[Observed] = []
                markers: list[threading.Event] = []
                while items and len(batch) < BATCH_SIZE:
                    entry = items.popleft()
                    if entry is _STOP:
                        stop = True
                    elif isinstance(entry, threading.Event):
                        markers.append(entry)
                    else:
                        batch.append(entry)
                if batch:
                    self._write_batch(batch)
                for marker in markers:
                    marker.set()
                with self._drained:
                    self._drained.notify_all()
        self._close_sinks()

    def _write_batch(self, items: Sequence[Observed]) -> None:
        if not self._opened:
            self._open_sinks()
        lines: list[tuple[dict[str, Any], str]] = []
        for item in items:
            try:
                for record in self.build(item):
                    lines.append((record, to_json(record, fallback=str).decode()))
            except Exception:
                self.failed += 1
                logger.exception("could not build an audit record")
        if not lines:
            return
        for sink in self.sinks:
            try:
                sink.write(lines)
            except Exception:
                self.failed += len(lines)
                logger.exception("audit sink %r failed to write %d records", sink, len(lines))
        self.written += len(lines)

    def _open_sinks(self) -> None:
        self._opened = True
        for sink in self.sinks:
            try:
                sink.open()
            except Exception:
                logger.exception("audit sink %r could not be opened", sink)

    def _close_sinks(self) -> None:
        for sink in self.sinks:
            try:
                sink.close()
            except Exception:
                logger.exception("audit sink %r failed to close", sink)

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until everything submitted so far is written; False if ``timeout`` passed."""
        if self._thread is None or not self._thread.is_alive():
            return True
        marker = threading.Event()
        self._items.append(marker)
        self._wake.set()
        return marker.wait(timeout)

    def close(self, timeout: float | None = 10.0) -> None:
        """Write everything queued, close the sinks, stop the thread (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        if thread is not None and thread.is_alive():
            self._items.append(_STOP)
            self._wake.set()
            thread.join(timeout)
            if thread.is_alive():
                logger.error("the audit trail did not finish writing within %s s", timeout)
        elif self._opened:
            self._close_sinks()
