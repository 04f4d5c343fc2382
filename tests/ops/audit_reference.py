"""The audit records as they were built before the one-pass record builder: a reference copy
(the redactor, records(), serialize(), capture() and input_json() of that version), kept only
so the equivalence tests can compare the fast path with it, record by record and line by line.
Not used by handler_kit itself."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from handler_kit.core.events import HookEvent
from handler_kit.ops.audit.records import (
    DEFAULT_MAX_CHARS,
    ID_FIELDS,
    MAX_RECORD_DEPTH,
    REDACTED,
    SCHEMA_VERSION,
    SECRET_KEY_PATTERN,
    SECRET_VALUE_PATTERN,
    TOO_DEEP,
    Capture,
    RecordPolicy,
    cut_deep,
    input_digest_of,
    iso_time,
    make_key,
    output_decision,
    parse_traceparent,
    scope_of,
    worst_status,
    writable,
)
from handler_kit.ops.audit.trail import Observed, invocation_decision

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


def new_event_id() -> str:
    """``evt_`` + 32 hex digits: 48 bits of milliseconds then 80 random bits, so ids sort by
    time (like a UUIDv7) and do not collide across workers or replicas."""
    return f"evt_{time.time_ns() // 1_000_000:012x}{random.getrandbits(80):020x}"


def new_trace_id() -> str:
    return f"{random.getrandbits(128) or 1:032x}"


def new_span_id() -> str:
    return f"{random.getrandbits(64) or 1:016x}"


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


def records(capture: Capture, app: str, policy: RecordPolicy) -> list[dict[str, Any]]:
    """The invocation records and the answer record (last) of one captured answer."""
    name = capture.event
    redactor = policy.redactor
    data = json.loads(capture.input_json)
    digest = input_digest_of(capture.input_json)
    scope = scope_of(data)
    trace = capture.trace
    if trace is not None:
        trace_id, answer_span, parent_span = trace[0], trace[1], trace[2]
        answer_id = trace[4]
    else:
        parsed = parse_traceparent(capture.traceparent)
        if parsed is not None:
            trace_id, answer_span = parsed
        else:
            trace_id, answer_span = new_trace_id(), new_span_id()
        parent_span = None
        answer_id = new_event_id()
    tool_name = data.get("tool_name")
    common: dict[str, Any] = {
        "time": iso_time(capture.end_ns),
        "ts": capture.end_ns / 1e9,
        "app": app,
        "app_version": policy.app_version,
        "replica": policy.replica,
        "transport": capture.transport,
        "pid": capture.pid,
        "principal": capture.principal,
        "event": name,
        "tool_name": redactor.text(tool_name) if isinstance(tool_name, str) else None,
    }
    for key in ID_FIELDS:
        value = data.get(key)
        common[key] = redactor.text(value) if isinstance(value, str) else None
    out: list[dict[str, Any]] = []
    answer_output = capture.output
    redacted_answer_output = None
    for index, (handler, status, decision, reason, error, latency, output, replayed) in enumerate(
        capture.invocations
    ):
        if trace is not None:
            event_id, span_id = trace[5][index], trace[3][index]
        else:
            event_id, span_id = new_event_id(), new_span_id()
        recorded = redactor.output(output) if output else output
        if output is answer_output:
            redacted_answer_output = recorded
        out.append(
            {
                "schema_version": SCHEMA_VERSION,
                "kind": "invocation",
                "event_id": event_id,
                "answer_id": answer_id,
                **common,
                "handler": handler,
                "idempotency_key": make_key(scope, name, handler, digest),
                "trace_id": trace_id,
                "span_id": span_id,
                "parent_span_id": answer_span,
                "status": status,
                "decision": decision,
                "reason": redactor.text(reason) if isinstance(reason, str) else None,
                "error": redactor.text(error) if isinstance(error, str) else None,
                "latency_ms": round(latency, 3),
                "replayed": replayed,
                "output": recorded,
            }
        )
    decision, reason = output_decision(answer_output)
    recorded_input: dict[str, Any] = {}
    if policy.tool_input and data.get("tool_input") is not None:
        recorded_input["tool_input"] = redactor.value(data["tool_input"], ("tool_input",))
    if policy.text:
        for key in ("prompt", "last_assistant_message"):
            if data.get(key) is not None:
                recorded_input[key] = redactor.value(data[key], (key,))
    out.append(
        {
            "schema_version": SCHEMA_VERSION,
            "kind": "answer",
            "event_id": answer_id,
            **common,
            "handler": None,
            "handlers": [inv[0] for inv in capture.invocations],
            "idempotency_key": make_key(scope, name, None, digest),
            "trace_id": trace_id,
            "span_id": answer_span,
            "parent_span_id": parent_span,
            "status": worst_status(inv[1] for inv in capture.invocations),
            "failed": capture.failed,
            "decision": decision,
            "reason": redactor.text(reason) if isinstance(reason, str) else None,
            "latency_ms": round(max((inv[5] for inv in capture.invocations), default=0.0), 3),
            "input": recorded_input,
            "output": (
                redacted_answer_output
                if redacted_answer_output is not None
                else redactor.output(answer_output)
            ),
        }
    )
    return out


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


def input_json(event: HookEvent) -> str:
    """The hook input as JSON, nulls dropped: what the audit trail records and digests.

    pydantic-core writes it, except what it refuses: a lone surrogate (``"\\ud800"``, which
    JSON can escape and UTF-8 cannot hold) or values nested deeper than it writes (an MCP
    argument is not held to the input depth limit). The standard library writes those, the
    surrogate as its escape, the nesting cut at
    :data:`~handler_kit.ops.audit.records.MAX_RECORD_DEPTH`: such an input is recorded too.
    """
    try:
        text = event.model_dump_json(exclude_none=True)
    except PydanticSerializationError:
        pass
    else:
        # pydantic-core writes a lone surrogate in a key as U+FFFDs, one per UTF-8 byte, where
        # in a value it refuses it: such an input is written as the others are
        if "\ufffd" not in text:
            return text
    # depth 0: the input around its values, which are level 1 as in the input limit
    value = cut_deep(event.model_dump(exclude_none=True), 0)
    return json.dumps(value, separators=(",", ":"))


def capture(item: Observed) -> Capture:
    """The plain values of one observed answer (what :func:`records` needs)."""
    answer = item.answer
    name = answer.event.hook_event_name
    single = len(answer.invocations) == 1
    invocations = []
    for inv in answer.invocations:
        decision, reason = invocation_decision(inv, name)
        if inv.output is None:
            output = None
        elif single:
            output = answer.output  # the answer is this handler's output, rendered once
        else:
            output = inv.output.render(name)
        invocations.append(
            (
                inv.handler.name,
                inv.status,
                decision,
                reason,
                inv.error,
                inv.latency_ms,
                output,
                inv.handler.name in item.replayed,
            )
        )
    trace = item.trace
    return Capture(
        item.end_ns,
        item.transport,
        item.principal,
        item.traceparent,
        item.pid,
        name,
        input_json(answer.event),
        answer.output,
        answer.failed,
        tuple(invocations),
        None
        if trace is None
        else (
            trace.trace_id,
            trace.answer_span_id,
            trace.parent_span_id,
            trace.span_ids,
            trace.answer_event_id,
            trace.event_ids,
        ),
    )
