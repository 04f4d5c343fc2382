"""Audit records: what is written for each answer, redaction, and the sinks.

Pure functions of a :class:`Capture` (plain values copied out of an answer), so the same code
builds the records in the server's writer thread, in the audit writer process
(:mod:`handler_kit.ops.audit.process`) and in a command hook. This module imports nothing of the
server or of the handler models: the writer process stays small and starts fast.

**What is recorded** (``SCHEMA_VERSION`` 1), every record:

- ``schema_version``, ``kind`` (``invocation`` or ``answer``), ``event_id`` (new, unique,
  time-ordered), ``time`` (ISO 8601 UTC, when the answer was given), ``app``, ``transport``
  (``webhook``/``mcp``/``command``/``direct``), ``app_version`` (``HANDLER_KIT_APP_VERSION``,
  else null), ``replica`` (``HANDLER_KIT_REPLICA``, else ``hostname:pid`` of the server: see
  :func:`default_replica`), ``pid``, ``principal`` (who authenticated: ``token#N`` or the JWT
  subject; never the token);
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
blocks, ``sk-``/``ghp_``/``xox?-``/``AKIA`` keys, ``user:password@`` in URLs); and the server's
own secrets (its bearer tokens, its JWT HMAC secret) wherever a string holds one. Strings longer
than ``max_chars`` (default 2,000) are truncated with a marker.

**What cannot be written as it is** never costs the record: an object or array nested deeper
than :data:`MAX_RECORD_DEPTH` levels is replaced by :data:`TOO_DEEP`, and a lone surrogate
(``"\\ud800"``: valid in a JSON escape, impossible in UTF-8) is written as U+FFFD, in keys and
values (:func:`writable`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import random
import re
import socket
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic_core import PydanticSerializationError, from_json, to_json

from handler_kit.config import AuditSink
from handler_kit.core.names import Status

SCHEMA_VERSION = 1
REDACTED = "[REDACTED]"
DEFAULT_MAX_CHARS = 2000
# How deeply a recorded value (``tool_input``, ``updatedInput``...) nests objects and arrays,
# the value itself being level 1: as deep as the server reads an input
# (``handler_kit.core.vocabulary.MAX_INPUT_DEPTH``), so what was read is recorded whole. Deeper
# (an MCP argument, a handler's own output) is cut: the record around it must stay within the
# depth pydantic-core writes (255), and the walks that build it within Python's recursion limit.
MAX_RECORD_DEPTH = 200
TOO_DEEP = f"[truncated: nested deeper than {MAX_RECORD_DEPTH} levels]"
_SURROGATE = re.compile("[\ud800-\udfff]")

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
# One search for them all (one call instead of a loop over the hints).
_HINTS = re.compile("|".join(re.escape(hint) for hint in _SECRET_VALUE_HINTS))
# Identifiers copied from the hook input onto every record.
ID_FIELDS = ("session_id", "turn_id", "tool_use_id", "agent_id")
# Values the redactor keeps as they are (no string inside, nothing nested).
_KEPT = frozenset({int, float, bool, type(None)})


# Ids come from the random module, as OpenTelemetry's own do: it is seeded from the OS at start
# and reseeded in a forked child, and it costs no system call per id (ids are not secrets).


# What records() draws at once for an answer, in bytes: its trace id (16), span id (8) and the
# random part of its event id (10), then a span id and an event id's part per invocation.
_ID_BYTES = 16 + 8 + 10
_INVOCATION_ID_BYTES = 8 + 10
_ONE_HANDLER_ID_BYTES = _ID_BYTES + _INVOCATION_ID_BYTES
_ONE_HANDLER_ID_BITS = _ONE_HANDLER_ID_BYTES * 8
_ZERO_TRACE, _ONE_TRACE = f"{0:032x}", f"{1:032x}"
_ZERO_SPAN, _ONE_SPAN = f"{0:016x}", f"{1:016x}"
getrandbits = random.getrandbits
_sha256 = hashlib.sha256


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


def input_digest_of(input_json: str) -> str:
    """The digest of a hook input serialized as received (nulls dropped): the same body gives
    the same digest in every worker and replica. Key order counts, so an input whose keys come
    in another order is another call: the safe direction (an idempotent handler runs again)."""
    return hashlib.sha256(input_json.encode()).hexdigest()[:16]


SCOPE_FIELDS = ("tool_use_id", "turn_id", "prompt_id", "session_id")


def scope_of(values: dict[str, Any]) -> str:
    """The most specific identifier of a call: tool_use_id, then turn_id, prompt_id,
    session_id (``kind=value``), or ``-`` when the input has none."""
    for name in SCOPE_FIELDS:
        value = values.get(name)
        if isinstance(value, str) and value:
            return f"{name}={value}"
    return "-"


def make_key(scope: str, event: str, handler: str | None, digest: str) -> str:
    """``scope:event:handler:digest``; ``handler`` None (``*``) is the answer's key."""
    return f"{scope}:{event}:{handler or '*'}:{digest}"


# -- redaction ----------------------------------------------------------------------------


class Redactor:
    """Removes secrets from what the audit trail records (see the module docstring).

    ``paths``: dotted paths relative to the hook input (``tool_input.card.number``); ``*``
    matches any one key or list index. ``secret_keys`` / ``secret_values``: the default
    key-name and value-pattern rules (on unless turned off in code). ``secrets``: exact values
    replaced wherever a string holds them (the server's own tokens: no pattern knows them).
    """

    def __init__(
        self,
        paths: Iterable[str] = (),
        *,
        secret_keys: bool = True,
        secret_values: bool = True,
        max_chars: int = DEFAULT_MAX_CHARS,
        secrets: Iterable[str] = (),
    ) -> None:
        self.paths = [tuple(p.strip().split(".")) for p in paths if p.strip()]
        self.secret_keys = secret_keys
        self.secret_values = secret_values
        self.max_chars = max_chars
        # longest first: a secret that holds another is replaced whole
        self.secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        # The same short strings (reasons, tool names, ids) and keys come back on every call.
        self._texts: dict[str, str] = {}
        self._keys: dict[str, bool] = {}
        # values recorded as identifiers or reasons, as written in a line (see quoted())
        self._quoted: dict[Any, str] = {}

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
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        if self.secret_values and len(value) >= 8 and _HINTS.search(value.lower()):
            value = SECRET_VALUE_PATTERN.sub(REDACTED, value)
        if len(value) > self.max_chars:
            dropped = len(value) - self.max_chars
            value = f"{value[: self.max_chars]}...[truncated {dropped} chars]"
        if len(original) <= 200:
            if len(self._texts) >= 4096:
                self._texts.clear()
            self._texts[original] = value
        return value

    def quoted(self, value: Any) -> str:
        """How ``value``, recorded as an identifier or a reason, is written in a JSON line:
        redacted as :meth:`text` does and between quotes (null unless a string), or "" when
        that needs an escape (the general path writes it then). Cached, as :meth:`text` is."""
        if isinstance(value, str):
            text = self.text(value)
            written = f'"{text}"' if _plain(text) else ""
            if len(value) > 200:
                return written
        else:
            written = "null"
        if len(self._quoted) >= 4096:
            self._quoted.clear()
        self._quoted[value] = written
        return written

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

    def value(self, value: Any, path: tuple[str, ...], depth: int = 1) -> Any:
        """A copy of ``value`` (found at ``path`` of the input, ``depth`` levels down) with
        the rules applied, cut at :data:`MAX_RECORD_DEPTH`."""
        if not self.paths:
            return self._walk(value, depth)
        if self._path_redacted(path):
            return REDACTED
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            if depth > MAX_RECORD_DEPTH:
                return TOO_DEEP
            return {
                key: REDACTED if self.secret_key(key) else self.value(item, (*path, key), depth + 1)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            if depth > MAX_RECORD_DEPTH:
                return TOO_DEEP
            return [self.value(item, (*path, str(i)), depth + 1) for i, item in enumerate(value)]
        return value

    def _walk(self, value: Any, depth: int) -> Any:
        """:meth:`value` when no path is configured: no path to keep track of."""
        kind = type(value)
        if kind is str:
            found = self._texts.get(value)
            return found if found is not None else self.text(value)
        if kind is dict:
            if depth > MAX_RECORD_DEPTH:
                return TOO_DEEP
            # A loop rather than a call per item: most items are strings seen before
            # (cached), numbers and booleans (kept as they are) or keys already judged.
            out = {}
            texts = self._texts
            keys = self._keys
            for key, item in value.items():
                secret = keys.get(key)
                if secret is None:
                    secret = self.secret_key(key)
                if secret:
                    out[key] = REDACTED
                    continue
                kind = type(item)
                if kind is str:
                    found = texts.get(item)
                    out[key] = found if found is not None else self.text(item)
                elif kind in _KEPT:
                    out[key] = item
                else:
                    out[key] = self._walk(item, depth + 1)
            return out
        if kind in _KEPT:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            if depth > MAX_RECORD_DEPTH:
                return TOO_DEEP
            return {
                key: REDACTED if self.secret_key(key) else self._walk(item, depth + 1)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            if depth > MAX_RECORD_DEPTH:
                return TOO_DEEP
            return [self._walk(item, depth + 1) for item in value]
        return value

    def output(self, output: dict[str, Any]) -> dict[str, Any]:
        """A Claude Code output as recorded: ``updatedInput`` redacted as ``tool_input``."""
        if not self.paths:
            return self._output(output)
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

    def _output(self, output: dict[str, Any]) -> dict[str, Any]:
        """:meth:`output` when no path is configured: ``updatedInput`` is then redacted as
        every other value, each value of the output's three levels at depth 1 as there."""
        walk = self._walk
        texts = self._texts
        out: dict[str, Any] = {}
        for key, item in output.items():
            if key == "hookSpecificOutput" and isinstance(item, dict):
                specific: dict[str, Any] = {}
                for k, v in item.items():
                    if type(v) is str:  # most are: the decision, its reason, the event name
                        found = texts.get(v)
                        specific[k] = found if found is not None else self.text(v)
                    elif k == "decision" and isinstance(v, dict):
                        specific[k] = {dk: walk(dv, 1) for dk, dv in v.items()}
                    else:
                        specific[k] = walk(v, 1)
                out[key] = specific
            else:
                out[key] = walk(item, 1)
        return out


# -- records ------------------------------------------------------------------------------


# -- records ------------------------------------------------------------------------------


class Capture(NamedTuple):
    """One answer as plain values: all the records need, cheap to copy and to pickle.

    ``invocations``: ``(handler, status, decision, reason, error, latency_ms, output,
    replayed)`` each, ``status`` being the status's text and ``output`` the rendered JSON (the
    very ``output`` object of the answer when one handler answered). The writer process is
    sent each as a plain tuple (:func:`records` takes either). ``trace``: ids the tracer gave
    the spans (``trace_id, answer_span_id, parent_span_id, span_ids, answer_event_id,
    event_ids``).
    """

    end_ns: int
    transport: str
    principal: str | None
    traceparent: str | None
    pid: int
    event: str
    input_json: str
    output: dict[str, Any]
    failed: bool
    invocations: tuple[tuple[Any, ...], ...]
    trace: tuple[Any, ...] | None


@dataclass
class RecordPolicy:
    """Which parts of the input are recorded, how they are redacted, and what every record
    says of its writer: the app's version and the replica (server) that wrote it."""

    redactor: Redactor = field(default_factory=Redactor)
    tool_input: bool = True
    text: bool = False
    app_version: str | None = None
    replica: str | None = None


def default_replica() -> str:
    """``hostname:pid``: what names a replica when ``HANDLER_KIT_REPLICA`` does not. Under
    ``handler-kit serve`` the pid is the server's (its workers share the name; each record
    also has its worker's ``pid``); elsewhere, the process's own."""
    return f"{socket.gethostname()}:{os.getpid()}"


_OK: str = Status.OK.value  # a plain string: what pydantic-core writes fastest
_OK_TEXT = f'"{_OK}"'
# worst first: an answer's status is the worst of its handlers'
_STATUS_RANK: dict[str, int] = {
    Status.FAIL_CLOSED: 5,
    Status.TIMEOUT: 4,
    Status.ERROR: 3,
    Status.LOOP_GUARDED: 2,
    Status.OK: 1,
}


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


def worst_status(statuses: Iterable[str]) -> str:
    """An answer's status: the most severe of its invocations' (fail_closed first)."""
    best: str = Status.OK
    for status in statuses:
        if _STATUS_RANK.get(status, 0) > _STATUS_RANK[best]:
            best = status
    return best


# The last second formatted (records come many per second), as one tuple: threads that
# replace it never pair one second with another's text.
_second: list[tuple[int, str]] = [(-1, "")]
_MILLIS = [f".{n:03d}Z" for n in range(1000)]


def iso_time(ns: int) -> str:
    """``2026-05-09T07:35:25.123Z`` (UTC, milliseconds)."""
    seconds, rest = divmod(ns, 1_000_000_000)
    last = _second[0]
    if last[0] != seconds:
        stamp = _dt.datetime.fromtimestamp(seconds, _dt.UTC)
        last = _second[0] = (seconds, stamp.strftime("%Y-%m-%dT%H:%M:%S"))
    return last[1] + _MILLIS[rest // 1_000_000]


_stamp: list[tuple[int, str]] = [(-1, "")]  # the last millisecond's, as _second


def event_stamp() -> str:
    """``evt_`` and the 12 hex digits of the time in milliseconds: how event ids begin."""
    millis = time.time_ns() // 1_000_000
    last = _stamp[0]
    if last[0] != millis:
        last = _stamp[0] = (millis, f"evt_{millis:012x}")
    return last[1]


# The keys of each kind of record, in the order written. A record is a copy of its template
# (the writer's constants filled in) with the rest set: a copy of a dict of known keys costs a
# fraction of building one of 30 keys.
INVOCATION_KEYS = (
    "schema_version",
    "kind",
    "event_id",
    "answer_id",
    "time",
    "ts",
    "app",
    "app_version",
    "replica",
    "transport",
    "pid",
    "principal",
    "event",
    "tool_name",
    *ID_FIELDS,
    "handler",
    "idempotency_key",
    "trace_id",
    "span_id",
    "parent_span_id",
    "status",
    "decision",
    "reason",
    "error",
    "latency_ms",
    "replayed",
    "output",
)
ANSWER_KEYS = (
    "schema_version",
    "kind",
    "event_id",
    "time",
    "ts",
    "app",
    "app_version",
    "replica",
    "transport",
    "pid",
    "principal",
    "event",
    "tool_name",
    *ID_FIELDS,
    "handler",
    "handlers",
    "idempotency_key",
    "trace_id",
    "span_id",
    "parent_span_id",
    "status",
    "failed",
    "decision",
    "reason",
    "latency_ms",
    "input",
    "output",
)
_TEMPLATES: dict[tuple[Any, ...], tuple[dict[str, Any], dict[str, Any]]] = {}
# The fields of a record that hold a scalar (all but ``output``, ``input`` and ``handlers``):
# what a sink copies into columns.
SCALAR_KEYS = frozenset(INVOCATION_KEYS + ANSWER_KEYS) - {"output", "input", "handlers"}


def record_keys_of(sinks: Iterable[Any]) -> frozenset[str] | None:
    """The keys of the records ``sinks`` read (each sink's ``record_keys``; the JSON line
    aside), or None when one may read any (no ``record_keys``) or reads one not in
    :data:`SCALAR_KEYS`: what :func:`record_lines` is given."""
    keys: set[str] = set()
    for sink in sinks:
        read = getattr(sink, "record_keys", None)
        if read is None:
            return None
        keys.update(read)
    return frozenset(keys) if keys <= SCALAR_KEYS else None


def _templates(
    app: str, app_version: str | None, replica: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The invocation and answer record templates of a writer."""
    shared = {
        "schema_version": SCHEMA_VERSION,
        "app": app,
        "app_version": app_version,
        "replica": replica,
    }
    invocation = {**dict.fromkeys(INVOCATION_KEYS), **shared, "kind": "invocation"}
    answer = {**dict.fromkeys(ANSWER_KEYS), **shared, "kind": "answer"}
    if len(_TEMPLATES) >= 64:
        _TEMPLATES.clear()
    _TEMPLATES[(app, app_version, replica)] = invocation, answer
    return invocation, answer


def records(capture: Capture, app: str, policy: RecordPolicy) -> list[dict[str, Any]]:
    """The invocation records and the answer record (last) of one captured answer.

    ``capture`` may be a plain tuple of the :class:`Capture` fields, as it comes off the pipe.
    """
    return _build(capture, app, policy)


def record_lines(
    capture: Capture,
    app: str,
    policy: RecordPolicy,
    *,
    record_keys: frozenset[str] | None = None,
) -> list[tuple[dict[str, Any], str]]:
    """``serialize(records(capture, app, policy))``: the records of one answer and their JSON
    lines, what the sinks write.

    ``record_keys``: the keys of the records the sinks read (:func:`record_keys_of`), when
    they are keys of :data:`SCALAR_KEYS`: a record may then hold only those fields (none, for
    sinks that write only the lines), which spares building the rest. The lines are the
    same."""
    if record_keys is not None and len(capture[9]) == 1:
        joined = _joined_lines(capture, app, policy, bool(record_keys))
        if joined is not None:
            return joined
    built = _build(capture, app, policy)
    try:
        return [(record, to_json(record, fallback=str).decode()) for record in built]
    except PydanticSerializationError:
        return serialize(built)  # what only writable() makes writable (a lone surrogate)


def _build(capture: Capture, app: str, policy: RecordPolicy) -> list[dict[str, Any]]:
    (
        end_ns,
        transport,
        principal,
        traceparent,
        pid,
        name,
        input_text,
        answer_output,
        failed,
        invocations,
        trace,
    ) = capture
    redactor = policy.redactor
    text = redactor.text
    texts = redactor._texts
    try:
        data = from_json(input_text)
    except ValueError:  # what only the standard library reads (a lone surrogate's escape)
        data = json.loads(input_text)
    digest = _sha256(input_text.encode()).hexdigest()[:16]
    get = data.get
    scope = "-"
    for key in SCOPE_FIELDS:
        value = get(key)
        if isinstance(value, str) and value:
            scope = f"{key}={value}"
            break
    if trace is not None:
        trace_id, answer_span, parent_span, span_ids, answer_id, event_ids = trace
    else:
        # every random id of the answer from one draw, cut into its ids
        parent_span = None
        size = _ID_BYTES + len(invocations) * _INVOCATION_ID_BYTES
        drawn = getrandbits(size * 8).to_bytes(size, "big").hex()
        parsed = parse_traceparent(traceparent) if traceparent else None
        if parsed is not None:
            trace_id, answer_span = parsed
        else:
            trace_id = drawn[:32]
            answer_span = drawn[32:48]
            if trace_id == _ZERO_TRACE:
                trace_id = _ONE_TRACE
            if answer_span == _ZERO_SPAN:
                answer_span = _ONE_SPAN
        stamp = event_stamp()
        answer_id = stamp + drawn[48:68]
        span_ids = []
        event_ids = []
        for at in range(68, size * 2, 36):
            span = drawn[at : at + 16]
            span_ids.append(_ONE_SPAN if span == _ZERO_SPAN else span)
            event_ids.append(stamp + drawn[at + 16 : at + 36])
    seconds, rest = divmod(end_ns, 1_000_000_000)
    last = _second[0]
    time_text = last[1] + _MILLIS[rest // 1_000_000] if last[0] == seconds else iso_time(end_ns)
    ts = end_ns / 1e9
    templates = _TEMPLATES.get((app, policy.app_version, policy.replica))
    if templates is None:
        templates = _templates(app, policy.app_version, policy.replica)
    # the identifiers copied onto every record (ID_FIELDS), redacted as any recorded string
    # (the redactor caches them: the same ids come back on every call)
    ids: list[str | None] = []
    for value in (
        get("tool_name"),
        get("session_id"),
        get("turn_id"),
        get("tool_use_id"),
        get("agent_id"),
    ):
        if type(value) is str:
            found = texts.get(value)
            ids.append(found if found is not None else text(value))
        else:
            ids.append(text(value) if isinstance(value, str) else None)
    tool_name, session_id, turn_id, tool_use_id, agent_id = ids
    out: list[dict[str, Any]] = []
    redacted_answer_output = None
    latency_max = 0.0
    worst = _OK
    rank = 1
    handlers = []
    template = templates[0]
    for index, (handler, status, decision, reason, error, latency, output, replayed) in enumerate(
        invocations
    ):
        recorded = redactor.output(output) if output else output
        if output is answer_output:
            redacted_answer_output = recorded
        latency = round(latency, 3)
        # the answer's latency: the longest of its handlers' (rounding keeps the order)
        if latency > latency_max or index == 0:
            latency_max = latency
        if _STATUS_RANK.get(status, 0) > rank:
            worst, rank = status, _STATUS_RANK[status]
        handlers.append(handler)
        if type(reason) is str:
            found = texts.get(reason)
            reason = found if found is not None else text(reason)
        elif reason is not None:
            reason = text(reason) if isinstance(reason, str) else None
        if error is not None:
            error = text(error) if isinstance(error, str) else None
        record = template.copy()
        record["event_id"] = event_ids[index]
        record["answer_id"] = answer_id
        record["time"] = time_text
        record["ts"] = ts
        record["transport"] = transport
        record["pid"] = pid
        record["principal"] = principal
        record["event"] = name
        record["tool_name"] = tool_name
        record["session_id"] = session_id
        record["turn_id"] = turn_id
        record["tool_use_id"] = tool_use_id
        record["agent_id"] = agent_id
        record["handler"] = handler
        record["idempotency_key"] = f"{scope}:{name}:{handler or '*'}:{digest}"
        record["trace_id"] = trace_id
        record["span_id"] = span_ids[index]
        record["parent_span_id"] = answer_span
        record["status"] = status
        record["decision"] = decision
        record["reason"] = reason
        record["error"] = error
        record["latency_ms"] = latency
        record["replayed"] = replayed
        record["output"] = recorded
        out.append(record)
    decision, reason = output_decision(answer_output)
    reason = text(reason) if isinstance(reason, str) else None
    recorded_input: dict[str, Any] = {}
    if policy.tool_input:
        tool_input = get("tool_input")
        if tool_input is not None:
            recorded_input["tool_input"] = (
                redactor.value(tool_input, ("tool_input",))
                if redactor.paths
                else redactor._walk(tool_input, 1)
            )
    if policy.text:
        for key in ("prompt", "last_assistant_message"):
            if get(key) is not None:
                recorded_input[key] = redactor.value(data[key], (key,))
    record = templates[1].copy()
    record["event_id"] = answer_id
    record["time"] = time_text
    record["ts"] = ts
    record["transport"] = transport
    record["pid"] = pid
    record["principal"] = principal
    record["event"] = name
    record["tool_name"] = tool_name
    record["session_id"] = session_id
    record["turn_id"] = turn_id
    record["tool_use_id"] = tool_use_id
    record["agent_id"] = agent_id
    record["handlers"] = handlers
    record["idempotency_key"] = f"{scope}:{name}:*:{digest}"
    record["trace_id"] = trace_id
    record["span_id"] = answer_span
    record["parent_span_id"] = parent_span
    record["status"] = worst
    record["failed"] = failed
    record["decision"] = decision
    record["reason"] = reason
    record["latency_ms"] = latency_max
    record["input"] = recorded_input
    record["output"] = (
        redacted_answer_output
        if redacted_answer_output is not None
        else redactor.output(answer_output)
    )
    out.append(record)
    return out


# -- the lines of a one-handler answer, joined from pieces --------------------------------
#
# Most answers come from one handler, and most of what their two lines hold is plain: ids and
# times made here, the writer's constants, identifiers from the input. pydantic-core writes a
# record's item for about the cost of a Python step, so a whole record written by it costs an
# item per key (each key escaped anew), after a dict of 30 keys built item by item. Here the
# lines are joined from pieces instead: keys and the writer's constants written once, strings
# that need no escape written between quotes as they are (each string's written form cached:
# the same identifiers, reasons and names come back), the part both records share joined
# once, and the rest (the two numbers, the recorded input, the output) written by pydantic-core
# in two calls. The records then hold only what the sinks read besides the lines (their
# scalar fields, or nothing). Anything else (several handlers, a string that needs an escape,
# a value of another type, what pydantic-core refuses) takes the general path; the lines and
# fields are the same either way (tests/ops/test_audit_records_equivalence.py).

# What a JSON string never holds as it is: an ASCII string without these bytes is written
# between quotes unchanged (any other string is checked by _NEEDS_ESCAPE).
_ESCAPED_BYTES = bytes(range(0x20)) + b'"\\'
_NEEDS_ESCAPE = re.compile('[\x00-\x1f"\\\\\ud800-\udfff]')
# per writer: what comes between "ts" and "transport": ,"app":..,"app_version":..,"replica":..,
_CONSTANTS: dict[tuple[Any, ...], str] = {}


def _constants(app: str, app_version: str | None, replica: str | None) -> str:
    written = to_json(
        {"app": app, "app_version": app_version, "replica": replica}, fallback=str
    ).decode()
    constants = f",{written[1:-1]},"
    if len(_CONSTANTS) >= 64:
        _CONSTANTS.clear()
    _CONSTANTS[(app, app_version, replica)] = constants
    return constants


def _plain(text: str) -> bool:
    """True when ``text`` is written between quotes as it is."""
    if text.isascii():
        return len(text.encode().translate(None, _ESCAPED_BYTES)) == len(text)
    return _NEEDS_ESCAPE.search(text) is None


# Strings written as they are (no redaction: the status, the handler, the event's name...)
# between quotes, ``null`` for None; by value, as they repeat.
_AS_IS: dict[Any, str] = {None: "null"}


def _as_is(value: Any) -> str:
    """``value`` written: between quotes, or "" when it is no string or needs an escape (the
    general path writes it)."""
    if type(value) is not str or not _plain(value):
        return ""
    written = f'"{value}"'
    if len(value) <= 200:
        if len(_AS_IS) >= 4096:
            _AS_IS.clear()
            _AS_IS[None] = "null"
        _AS_IS[value] = written
    return written


def _joined_lines(
    capture: Capture, app: str, policy: RecordPolicy, scalars: bool
) -> list[tuple[dict[str, Any], str]] | None:
    """The records of a one-handler answer whose plain values need no escape and their
    lines, as :func:`record_lines` writes them, each record holding only its scalar fields
    (``scalars``) or nothing; else None (the general path writes them)."""
    (
        end_ns,
        transport,
        principal,
        traceparent,
        pid,
        name,
        input_text,
        answer_output,
        failed,
        invocations,
        trace,
    ) = capture
    ((handler, status, decision, reason, error, latency, output, replayed),) = invocations
    if type(pid) is not int or type(failed) is not bool or type(replayed) is not bool:
        return None
    try:
        data = from_json(input_text)
    except ValueError:  # what only the standard library reads (a lone surrogate's escape)
        return None
    get = data.get
    scope = "-"
    for key in SCOPE_FIELDS:
        value = get(key)
        if isinstance(value, str) and value:
            scope = f"{key}={value}"
            break
    answer_decision, answer_reason = output_decision(answer_output)
    redactor = policy.redactor
    cached = redactor._quoted.get
    quoted = redactor.quoted
    try:
        # recorded as the general path records them (redacted; null unless a string), and
        # written; "" when that needs an escape
        tool_name = cached(get("tool_name")) or quoted(get("tool_name"))
        session_id = cached(get("session_id")) or quoted(get("session_id"))
        turn_id = cached(get("turn_id")) or quoted(get("turn_id"))
        tool_use_id = cached(get("tool_use_id")) or quoted(get("tool_use_id"))
        agent_id = cached(get("agent_id")) or quoted(get("agent_id"))
        reason = cached(reason) or quoted(reason)
        error = cached(error) or quoted(error)
        answer_reason = cached(answer_reason) or quoted(answer_reason)
        # written as they are
        as_is = _AS_IS.get
        transport_text = as_is(transport) or _as_is(transport)
        principal_text = as_is(principal) or _as_is(principal)
        handler_text = as_is(handler) or _as_is(handler)
        status_text = as_is(status) or _as_is(status)
        name_text = as_is(name) or _as_is(name)
        decision_text = as_is(decision) or _as_is(decision)
        answer_decision_text = as_is(answer_decision) or _as_is(answer_decision)
    except TypeError:  # an unhashable value (an identifier that is an object, say)
        return None
    if not (
        tool_name
        and session_id
        and turn_id
        and tool_use_id
        and agent_id
        and reason
        and error
        and answer_reason
        and transport_text
        and principal_text
        and handler_text
        and handler_text != "null"
        and handler
        and status_text
        and status_text != "null"
        and name_text
        and name_text != "null"
        and decision_text
        and answer_decision_text
        and (scope == "-" or _plain(scope))
    ):
        return None
    if trace is None:
        # every random id from one draw, cut into its ids (as _build() does)
        drawn = getrandbits(_ONE_HANDLER_ID_BITS).to_bytes(_ONE_HANDLER_ID_BYTES, "big").hex()
        parsed = parse_traceparent(traceparent) if traceparent else None
        if parsed is not None:
            trace_id, answer_span = parsed
        else:
            trace_id = drawn[:32]
            answer_span = drawn[32:48]
            if trace_id == _ZERO_TRACE:
                trace_id = _ONE_TRACE
            if answer_span == _ZERO_SPAN:
                answer_span = _ONE_SPAN
        stamp = event_stamp()
        answer_id = stamp + drawn[48:68]
        span_id = drawn[68:84]
        if span_id == _ZERO_SPAN:
            span_id = _ONE_SPAN
        event_id = stamp + drawn[84:104]
        parent_span = None
        parent_span_text = "null"
    else:
        trace_id, answer_span, parent_span, span_ids, answer_id, event_ids = trace
        if (
            len(span_ids) != 1
            or len(event_ids) != 1
            or not all(
                type(value) is str
                for value in (trace_id, answer_span, *span_ids, answer_id, *event_ids)
            )
            or not _plain(f"{trace_id}{answer_span}{span_ids[0]}{answer_id}{event_ids[0]}")
        ):
            return None
        (span_id,) = span_ids
        (event_id,) = event_ids
        parent_span_text = as_is(parent_span) or _as_is(parent_span)
        if not parent_span_text:
            return None
    recorded_output = redactor.output(output) if output else output
    ts = end_ns / 1e9
    latency = round(latency, 3)
    answer_recorded = recorded_output if output is answer_output else redactor.output(answer_output)
    recorded_input: dict[str, Any] = {}
    if policy.tool_input:
        tool_input = get("tool_input")
        if tool_input is not None:
            recorded_input["tool_input"] = (
                redactor.value(tool_input, ("tool_input",))
                if redactor.paths
                else redactor._walk(tool_input, 1)
            )
    if policy.text:
        for key in ("prompt", "last_assistant_message"):
            if get(key) is not None:
                recorded_input[key] = redactor.value(data[key], (key,))
    try:
        # the two numbers and the input in one call, cut at the commas after the numbers
        # (neither number's text holds a comma)
        ts_text, latency_text, input_written = (
            to_json((ts, latency, recorded_input), fallback=str).decode()[1:-1].split(",", 2)
        )
        output_written = to_json(recorded_output, fallback=str).decode()
        answer_output_written = (
            output_written
            if answer_recorded is recorded_output
            else to_json(answer_recorded, fallback=str).decode()
        )
    except PydanticSerializationError:
        return None  # what only writable() makes writable (a lone surrogate)
    digest = _sha256(input_text.encode()).hexdigest()[:16]
    constants = _CONSTANTS.get((app, policy.app_version, policy.replica))
    if constants is None:
        constants = _constants(app, policy.app_version, policy.replica)
    seconds, rest = divmod(end_ns, 1_000_000_000)
    last = _second[0]
    time_text = last[1] + _MILLIS[rest // 1_000_000] if last[0] == seconds else iso_time(end_ns)
    worst = status_text if _STATUS_RANK.get(status, 0) > 1 else _OK_TEXT
    # from "time" to "handler": the same in both records
    shared = (
        f'"time":"{time_text}","ts":{ts_text}{constants}"transport":{transport_text},'
        f'"pid":{pid},"principal":{principal_text},"event":{name_text},"tool_name":{tool_name},'
        f'"session_id":{session_id},"turn_id":{turn_id},"tool_use_id":{tool_use_id},'
        f'"agent_id":{agent_id},"handler":'
    )
    invocation_key = f"{scope}:{name}:{handler}:{digest}"
    answer_key = f"{scope}:{name}:*:{digest}"
    invocation_line = (
        f'{{"schema_version":{SCHEMA_VERSION},"kind":"invocation","event_id":"{event_id}",'
        f'"answer_id":"{answer_id}",{shared}{handler_text},'
        f'"idempotency_key":"{invocation_key}","trace_id":"{trace_id}",'
        f'"span_id":"{span_id}","parent_span_id":"{answer_span}","status":{status_text},'
        f'"decision":{decision_text},"reason":{reason},"error":{error},'
        f'"latency_ms":{latency_text},"replayed":{"true" if replayed else "false"},'
        f'"output":{output_written}}}'
    )
    answer_line = (
        f'{{"schema_version":{SCHEMA_VERSION},"kind":"answer","event_id":"{answer_id}",'
        f'{shared}null,"handlers":[{handler_text}],'
        f'"idempotency_key":"{answer_key}","trace_id":"{trace_id}",'
        f'"span_id":"{answer_span}","parent_span_id":{parent_span_text},"status":{worst},'
        f'"failed":{"true" if failed else "false"},"decision":{answer_decision_text},'
        f'"reason":{answer_reason},"latency_ms":{latency_text},"input":{input_written},'
        f'"output":{answer_output_written}}}'
    )
    if not scalars:
        return [({}, invocation_line), ({}, answer_line)]
    # the recorded strings, from their written form (plain: between quotes as they are)
    tool_name_value = None if tool_name == "null" else tool_name[1:-1]
    session_id_value = None if session_id == "null" else session_id[1:-1]
    turn_id_value = None if turn_id == "null" else turn_id[1:-1]
    tool_use_id_value = None if tool_use_id == "null" else tool_use_id[1:-1]
    agent_id_value = None if agent_id == "null" else agent_id[1:-1]
    version, replica = policy.app_version, policy.replica
    invocation = {
        "schema_version": SCHEMA_VERSION,
        "kind": "invocation",
        "event_id": event_id,
        "answer_id": answer_id,
        "time": time_text,
        "ts": ts,
        "app": app,
        "app_version": version,
        "replica": replica,
        "transport": transport,
        "pid": pid,
        "principal": principal,
        "event": name,
        "tool_name": tool_name_value,
        "session_id": session_id_value,
        "turn_id": turn_id_value,
        "tool_use_id": tool_use_id_value,
        "agent_id": agent_id_value,
        "handler": handler,
        "idempotency_key": invocation_key,
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_span_id": answer_span,
        "status": status,
        "decision": decision,
        "reason": None if reason == "null" else reason[1:-1],
        "error": None if error == "null" else error[1:-1],
        "latency_ms": latency,
        "replayed": replayed,
    }
    answer = {
        "schema_version": SCHEMA_VERSION,
        "kind": "answer",
        "event_id": answer_id,
        "time": time_text,
        "ts": ts,
        "app": app,
        "app_version": version,
        "replica": replica,
        "transport": transport,
        "pid": pid,
        "principal": principal,
        "event": name,
        "tool_name": tool_name_value,
        "session_id": session_id_value,
        "turn_id": turn_id_value,
        "tool_use_id": tool_use_id_value,
        "agent_id": agent_id_value,
        "handler": None,
        "idempotency_key": answer_key,
        "trace_id": trace_id,
        "span_id": answer_span,
        "parent_span_id": parent_span,
        "status": status if _STATUS_RANK.get(status, 0) > 1 else _OK,
        "failed": failed,
        "decision": answer_decision,
        "reason": None if answer_reason == "null" else answer_reason[1:-1],
        "latency_ms": latency,
    }
    return [(invocation, invocation_line), (answer, answer_line)]


def serialize(built: Iterable[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """``(record, its JSON line)`` pairs, the form sinks write (pydantic-core: several times
    faster than ``json.dumps``). A record pydantic-core cannot write (a lone surrogate) is
    written as :func:`writable` makes it, and so are the columns a SQLite sink copies out."""
    pairs = []
    for record in built:
        try:
            line = to_json(record, fallback=str)
        except PydanticSerializationError:
            record = writable(record)
            line = to_json(record, fallback=str)
        pairs.append((record, line.decode()))
    return pairs


def cut_deep(value: Any, depth: int = 1) -> Any:
    """``value`` (``depth`` levels down) with each object or array nested deeper than
    :data:`MAX_RECORD_DEPTH` replaced by :data:`TOO_DEEP`."""
    if isinstance(value, dict):
        if depth > MAX_RECORD_DEPTH:
            return TOO_DEEP
        return {key: cut_deep(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        if depth > MAX_RECORD_DEPTH:
            return TOO_DEEP
        return [cut_deep(item, depth + 1) for item in value]
    return value


def writable(value: Any) -> Any:
    """``value`` with each lone surrogate, in keys and strings, replaced by U+FFFD: JSON can
    carry one as an escape (``"\\ud800"``), and runtimes do send them, but UTF-8 (a JSON line,
    a SQLite column) cannot hold it. Its depth is already bounded: every nested value of a
    record comes through the :class:`Redactor`, which cuts at :data:`MAX_RECORD_DEPTH`."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {writable(key): writable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [writable(item) for item in value]
    return value


# -- sinks --------------------------------------------------------------------------------


class JsonLinesSink:
    """JSON lines appended to a file, or written to stdout/stderr.

    Files are opened ``O_APPEND`` and each batch goes down in one ``write``: several worker
    processes can share one file without interleaving lines. On stdout/stderr each line is one
    ``write`` (atomic on a pipe up to 4 KiB, the usual container log case).

    ``durable=True`` (the durable audit mode) syncs the file to disk after each batch, so
    ``write`` returns once the batch is on disk. A written batch is in the kernel already,
    which is enough to survive a ``kill -9`` of the server; the fsync is for a machine crash.
    stdout and stderr cannot be made durable (what reads them decides): refused.
    """

    # the keys of the records it reads: none, it writes the lines (see record_keys_of())
    record_keys: tuple[str, ...] = ()

    def __init__(self, target: str, *, durable: bool = False) -> None:
        self.target = target
        self.fd: int | None = None
        self.per_line = target in ("stdout", "stderr")
        if durable and self.per_line:
            raise ValueError(
                f"audit sink {target!r} cannot be durable (whatever reads it decides when its "
                "records are kept): use jsonl:PATH or sqlite:PATH with HANDLER_KIT_AUDIT_DURABLE"
            )
        self.durable = durable

    def open(self) -> None:
        if self.target == "stdout":
            self.fd = sys.stdout.fileno()
        elif self.target == "stderr":
            self.fd = sys.stderr.fileno()
        else:
            self.fd = os.open(self.target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            if self.durable:
                # a new file is on disk once its directory entry is
                folder = os.open(os.path.dirname(os.path.abspath(self.target)), os.O_RDONLY)
                try:
                    os.fsync(folder)
                finally:
                    os.close(folder)

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        if self.fd is None:
            self.open()
        assert self.fd is not None
        if self.per_line:
            for _, line in records:
                write_all(self.fd, (line + "\n").encode())
        else:
            # one join, no string per line (an empty batch writes nothing)
            text = "\n".join([line for _, line in records])
            write_all(self.fd, f"{text}\n".encode() if records else b"")
            if self.durable:
                _datasync(self.fd)

    def close(self) -> None:
        if self.fd is not None and not self.per_line:
            with contextlib.suppress(OSError):
                os.fsync(self.fd)
            os.close(self.fd)
        self.fd = None


# The lines and the file's new size, not its times (macOS has no fdatasync: fsync there).
_datasync = getattr(os, "fdatasync", os.fsync)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write part of it)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def parse_sinks(
    specs: Iterable[str], *, command: bool = False, durable: bool = False
) -> list[AuditSink]:
    """Sinks from ``HANDLER_KIT_AUDIT`` items: ``stdout``, ``stderr``, ``jsonl:PATH``,
    ``sqlite:PATH``, ``postgresql://...`` (or ``postgres://...``). Checked now (a bad spec, a
    missing directory or a missing database driver fails at start-up, before
    any worker starts); nothing is opened until the first record.

    A command hook's stdout is its answer, so there ``stdout`` is refused. ``durable``: each
    batch is committed to disk before ``write`` returns; ``stdout`` and ``stderr`` are refused.
    """
    sinks: list[AuditSink] = []
    for raw in specs:
        spec = raw.strip()
        if not spec:
            continue
        kind, _, path = spec.partition(":")
        if kind in ("postgresql", "postgres"):
            from handler_kit.ops.audit.postgres import (
                PostgresSink,
                check_url,
                redact_url,
                require_driver,
            )

            if not spec.startswith(f"{kind}://"):
                raise ValueError(f"audit sink {redact_url(spec)!r}: use postgresql://...")
            require_driver(spec)
            check_url(spec)  # at start-up, not in each failed write
            sinks.append(PostgresSink(spec, durable=durable))
        elif spec in ("stdout", "stderr"):
            if command and spec == "stdout":
                raise ValueError(
                    "HANDLER_KIT_AUDIT=stdout cannot be used by a command hook (stdout is its "
                    "answer): use jsonl:PATH or sqlite:PATH"
                )
            sinks.append(JsonLinesSink(spec, durable=durable))
        elif kind in ("jsonl", "sqlite") and path:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise ValueError(f"audit sink {spec!r}: directory {folder} does not exist")
            if kind == "jsonl":
                sinks.append(JsonLinesSink(path, durable=durable))
            else:
                from handler_kit.ops.audit.sqlite import SQLiteSink

                sinks.append(SQLiteSink(path, durable=durable))
        else:
            # not repeated: a mistyped database URL (Postgres://, postgresq://) holds a password
            secret = "@" in spec or "://" in spec or "password" in spec.lower()
            shown = f"{kind}:..." if secret else repr(spec)
            raise ValueError(
                f"unknown audit sink {shown}: use stdout, stderr, jsonl:PATH, sqlite:PATH "
                "or postgresql://..."
            )
    return sinks
