"""Audit records: what is written for each answer, redaction, and the sinks.

Pure functions of a :class:`Capture` (plain values copied out of an answer), so the same code
builds the records in the server's writer thread, in the audit writer process
(:mod:`handler_kit.ops.audit.process`) and in a command hook. This module imports nothing of the
server; of the handler models, their validation of a webhook's body (the writer process derives
the input's text from it: :func:`~handler_kit.ops.keys.body_input`).

**What is recorded** (``SCHEMA_VERSION`` 2): one record per decision, as a policy engine's
decision log has it (``docs/production.md`` lists the fields):

- ``schema_version``, ``kind`` (``decision``, or ``shadow``: a candidate app's answer to a
  decision's input, linked to it by ``decision_id``, with ``agrees``), ``event_id`` (a
  decision's is its decision id, drawn when the answer was observed: time-ordered, unique),
  ``time``, ``ts``, ``app``, ``app_version``, ``replica`` (see :func:`default_replica`),
  ``transport``, ``pid``, ``principal`` (who authenticated; never the token);
- from the hook input, its identifiers: ``event``, ``tool_name``, ``session_id``, ``turn_id``,
  ``tool_use_id``, ``agent_id``; ``idempotency_key`` (:mod:`handler_kit.ops.keys`, unchanged
  since version 1), ``trace_id``, ``span_id``, ``parent_span_id``;
- ``status`` (the worst of the handlers'), ``failed``, ``decision``, ``reason``,
  ``latency_ms`` (the slowest handler's), ``input_digest`` (of the input as received),
  ``input`` and ``input_complete`` (:func:`_recorded_input`), ``output`` (the JSON answered);
- ``handlers``: each handler that took part, in order: ``name``, ``status``, ``decision``,
  ``reason``, ``error``, ``latency_ms``, ``replayed``, ``idempotency_key``, ``output``.

By default only ``tool_input`` of the input is kept (unless ``tool_input=False``), and
``prompt`` / ``last_assistant_message`` with ``text=True``; ``full_input=True`` keeps every field.

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

# the key helpers lived here before ops/keys.py: importable from here still
from handler_kit.ops.keys import SCOPE_FIELDS as SCOPE_FIELDS
from handler_kit.ops.keys import body_input, scope_of
from handler_kit.ops.keys import input_digest_of as input_digest_of
from handler_kit.ops.keys import make_key as make_key

SCHEMA_VERSION = 2
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


# What a record draws at once when no tracer gave its ids: its trace id and its span id.
_ID_BITS = (16 + 8) * 8
_ZERO_TRACE, _ONE_TRACE = f"{0:032x}", f"{1:032x}"
_ZERO_SPAN, _ONE_SPAN = f"{0:016x}", f"{1:016x}"
getrandbits = random.getrandbits
_sha256 = hashlib.sha256


def new_event_id(ns: int | None = None) -> str:
    """``evt_`` + 32 hex digits: 48 bits of milliseconds then 80 random bits, so ids sort by
    time (like a UUIDv7) and do not collide across workers or replicas. A decision's id is
    drawn on the answer path, so both parts are written as one number's 16 bytes in hex (one
    conversion: a format spec is parsed at each use). ``ns``: the time (``time.time_ns()``)
    when the caller has read it already."""
    millis = (time.time_ns() if ns is None else ns) // 1_000_000
    return "evt_" + (millis << 80 | getrandbits(80)).to_bytes(16, "big").hex()


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


class Capture(NamedTuple):
    """One record as plain values: all it needs, cheap to copy and to pickle.

    ``event_id``: the record's own id (a decision's is its decision id, assigned when the
    answer was captured); ``decision_id``: the decision it belongs to (a decision's own id; a
    shadow record's, the enforced decision's). ``input_json``: the hook input as serialized
    for the idempotency keys, None when ``body`` is the webhook's (whoever builds the record
    derives it: :func:`~handler_kit.ops.keys.body_input`, so the server's process does
    not write it); ``body``: the input as received, when the transport had it (the webhook's
    body: the input digest, and what ``HANDLER_KIT_AUDIT_INPUT=full`` records).
    ``invocations``: ``(handler, status, decision, reason, error, latency_ms, output,
    replayed)`` each, ``status`` being the status's text and ``output`` the rendered JSON (the
    very ``output`` object of the answer when one handler answered). ``trace``: ids the tracer
    gave the answer (``trace_id, answer_span_id, parent_span_id``). ``kind``: ``decision`` or
    ``shadow``; ``app``: the app that answered when it is not the writer's (a shadow
    candidate); ``agrees``: a shadow's answer compared with its decision's. The writer process
    is sent each as a plain tuple (:func:`records` takes either).
    """

    event_id: str
    decision_id: str
    end_ns: int
    transport: str
    principal: str | None
    traceparent: str | None
    pid: int
    event: str
    input_json: str | None
    body: bytes | None
    output: dict[str, Any]
    failed: bool
    invocations: tuple[tuple[Any, ...], ...]
    trace: tuple[Any, ...] | None
    kind: str = "decision"
    app: str | None = None
    agrees: bool | None = None


@dataclass
class RecordPolicy:
    """Which parts of the input are recorded, how they are redacted, and what every record
    says of its writer: the app's version and the replica (server) that wrote it."""

    redactor: Redactor = field(default_factory=Redactor)
    tool_input: bool = True
    text: bool = False
    # the whole input (every field, redacted), not only tool_input and the texts
    full_input: bool = False
    app_version: str | None = None
    replica: str | None = None


def default_replica() -> str:
    """``hostname:pid``: what names a replica when ``HANDLER_KIT_REPLICA`` does not. Under
    ``handler-kit serve`` the pid is the server's (its workers share the name; each record
    also has its worker's ``pid``); elsewhere, the process's own."""
    return f"{socket.gethostname()}:{os.getpid()}"


_OK: str = Status.OK.value  # a plain string: what pydantic-core writes fastest
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


def same_decision(decided: dict[str, Any], candidate: dict[str, Any]) -> bool:
    """Whether a candidate's answer (a shadow's) agrees with the decision's, compared as a
    decision: the same decision, the same reason and the same output (what the agent would
    have been told)."""
    return output_decision(decided) == output_decision(candidate) and decided == candidate


def worst_status(statuses: Iterable[str]) -> str:
    """An answer's status: the most severe of its invocations' (fail_closed first)."""
    best = _OK
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


# The keys of a record, in the order written. A record is a copy of its writer's template (the
# writer's constants filled in) with the rest set: a copy of a dict of known keys costs a
# fraction of building one of 30 keys.
DECISION_KEYS = (
    "schema_version",
    "kind",
    "event_id",
    "decision_id",
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
    "idempotency_key",
    "trace_id",
    "span_id",
    "parent_span_id",
    "status",
    "failed",
    "decision",
    "reason",
    "latency_ms",
    "input_digest",
    "input",
    "input_complete",
    "output",
    "handlers",
)
# a shadow record: a decision's keys and whether the candidate agreed with the decision
SHADOW_KEYS = (*DECISION_KEYS, "agrees")
# the keys of each handler of a record, in order
HANDLER_KEYS = (
    "name",
    "status",
    "decision",
    "reason",
    "error",
    "latency_ms",
    "replayed",
    "idempotency_key",
    "output",
)
_TEMPLATES: dict[tuple[Any, ...], dict[str, Any]] = {}
# The identifiers copied from the hook input onto every record.
_COPIED = ("tool_name", *ID_FIELDS)


def _template(kind: str, app: str, app_version: str | None, replica: str | None) -> dict[str, Any]:
    """The template of a writer's records of ``kind``."""
    keys = SHADOW_KEYS if kind == "shadow" else DECISION_KEYS
    template = {
        **dict.fromkeys(keys),
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "app": app,
        "app_version": app_version,
        "replica": replica,
    }
    if len(_TEMPLATES) >= 64:
        _TEMPLATES.clear()
    _TEMPLATES[(kind, app, app_version, replica)] = template
    return template


def records(capture: Capture, app: str, policy: RecordPolicy) -> list[dict[str, Any]]:
    """The record of one captured answer (a list of one: what the sinks take in batches)."""
    return [record(capture, app, policy)]


def record(capture: Capture, app: str, policy: RecordPolicy) -> dict[str, Any]:
    """The one record of a decision (or of a shadow candidate's answer to one).

    The one record builder: a copy of its writer's template with the fields of this answer
    set, each recorded value redacted once (a one-handler answer's output is the decision's,
    redacted once for both). ``capture`` may be a plain tuple of the :class:`Capture` fields,
    as it comes off the pipe.
    """
    (
        event_id,
        decision_id,
        end_ns,
        transport,
        principal,
        traceparent,
        pid,
        name,
        input_text,
        body,
        answer_output,
        failed,
        invocations,
        trace,
        kind,
        other_app,
        agrees,
    ) = capture
    redactor = policy.redactor
    text = redactor.text
    if input_text is None:  # the webhook's: derived from the body, as the answer path would
        assert body is not None, "a capture without the input's text has its body"
        input_text, data = body_input(name, body)
    else:
        try:
            data = from_json(input_text)
        except ValueError:  # what only the standard library reads (a lone surrogate's escape)
            data = json.loads(input_text)
    get = data.get
    key = f"{scope_of(data)}:{name}:"
    # the idempotency keys' digest: of the input as serialized, as the idempotency store has it
    digest = _sha256(input_text.encode()).hexdigest()[:16]
    if trace is None:
        trace = _new_ids(traceparent)
    trace_id, answer_span, parent_span = trace[:3]
    shadow = kind == "shadow"
    template_key = (kind, other_app or app, policy.app_version, policy.replica)
    template = _TEMPLATES.get(template_key)
    if template is None:
        template = _template(*template_key)
    out = template.copy()
    out["event_id"] = event_id
    out["time"] = iso_time(end_ns)
    out["ts"] = end_ns / 1e9
    out["transport"] = transport
    out["pid"] = pid
    out["principal"] = principal
    out["event"] = name
    texts = redactor._texts  # what text() gives for a string seen before (ids repeat)
    for field_name in _COPIED:
        value = get(field_name)
        if type(value) is str:
            out[field_name] = texts.get(value) or text(value)
        else:
            out[field_name] = text(value) if isinstance(value, str) else None
    out["idempotency_key"] = f"{key}*:{digest}"
    out["trace_id"] = trace_id
    out["span_id"] = answer_span
    out["parent_span_id"] = parent_span
    handlers: list[dict[str, Any]] = []
    answer_recorded = None
    latency_max = 0.0
    statuses = []
    for index, (handler, status, decision, reason, error, latency, output, replayed) in enumerate(
        invocations
    ):
        recorded = redactor.output(output) if output else output
        if output is answer_output:
            answer_recorded = recorded
        latency = round(latency, 3)
        if index == 0 or latency > latency_max:  # the decision's: its slowest handler's
            latency_max = latency
        statuses.append(status)
        handlers.append(
            {
                "name": handler,
                "status": status,
                "decision": decision,
                "reason": text(reason) if isinstance(reason, str) else None,
                "error": text(error) if isinstance(error, str) else None,
                "latency_ms": latency,
                "replayed": replayed,
                "idempotency_key": f"{key}{handler or '*'}:{digest}",
                "output": recorded,
            }
        )
    decision, reason = output_decision(answer_output)
    out["status"] = worst_status(statuses)
    out["failed"] = failed
    out["decision"] = decision
    out["reason"] = text(reason) if isinstance(reason, str) else None
    out["latency_ms"] = latency_max
    if shadow:
        # the input is its decision's (recorded there); the shadow names that decision
        out["decision_id"] = decision_id
        out["input_complete"] = False
        out["agrees"] = agrees
    else:
        # without the body (MCP, command, direct) the input digest is the keys' digest
        out["input_digest"] = digest if body is None else _sha256(body).hexdigest()[:16]
        out["input"], out["input_complete"] = _recorded_input(data, body, policy)
    out["output"] = (
        answer_recorded if answer_recorded is not None else redactor.output(answer_output)
    )
    out["handlers"] = handlers
    return out


def _new_ids(traceparent: str | None) -> tuple[str, str, None]:
    """A decision's trace ids when no tracer gave them (trace id, span id, parent span id),
    cut from one draw of random bits. A valid ``traceparent`` gives the trace id and the
    decision span's id (the decision then has no parent span of its own)."""
    parsed = parse_traceparent(traceparent) if traceparent else None
    if parsed is not None:
        return parsed[0], parsed[1], None
    drawn = f"{getrandbits(_ID_BITS):048x}"
    trace_id = drawn[:32]
    answer_span = drawn[32:]
    if trace_id == _ZERO_TRACE:
        trace_id = _ONE_TRACE
    if answer_span == _ZERO_SPAN:
        answer_span = _ONE_SPAN
    return trace_id, answer_span, None


def _recorded_input(
    data: dict[str, Any], body: bytes | None, policy: RecordPolicy
) -> tuple[dict[str, Any], bool]:
    """What a decision record keeps of the hook input, redacted, and whether that is the whole
    input as received (what a replay can trust).

    By default: ``tool_input`` (unless turned off) and, with ``text``, the prompt and the last
    assistant message: never complete. ``full_input``: every field of the input as received
    (the body, when the transport had it; else the input as read), complete when redaction
    changed nothing in it (nothing secret, nothing truncated or cut)."""
    redactor = policy.redactor
    if policy.full_input:
        whole: Any = data
        if body is not None:
            try:
                whole = from_json(body)
            except ValueError:
                whole = None  # a body the server could not read either: its ids are recorded
        if isinstance(whole, dict):
            kept = {key: redactor.value(value, (key,)) for key, value in whole.items()}
            return kept, kept == whole
    recorded: dict[str, Any] = {}
    if policy.tool_input:
        tool_input = data.get("tool_input")
        if tool_input is not None:
            recorded["tool_input"] = redactor.value(tool_input, ("tool_input",))
    if policy.text:
        for key in ("prompt", "last_assistant_message"):
            if data.get(key) is not None:
                recorded[key] = redactor.value(data[key], (key,))
    return recorded, False


def record_lines(
    capture: Capture, app: str, policy: RecordPolicy
) -> list[tuple[dict[str, Any], str]]:
    """The records of one answer and their JSON lines: what the sinks write."""
    built = records(capture, app, policy)
    try:
        return [(record, to_json(record, fallback=str).decode()) for record in built]
    except PydanticSerializationError:
        return serialize(built)  # what only writable() makes writable (a lone surrogate)


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
    written = os.write(fd, data)
    if written == len(data):  # a frame that fits the pipe: one call, no view
        return
    view = memoryview(data)[written:]
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
