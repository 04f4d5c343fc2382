"""The one-pass record builder against the reference: for generated answers (any hook input,
any handler output, several handlers, failures, fail-closed gates, trace ids, every redaction
option) the records and JSON lines are those of the previous implementation
(tests/ops/audit_reference.py), field by field and byte for byte; and what crosses the pipe to
the writer process is plain values (no enum, no NamedTuple: each costs a Python call to pickle
and to unpickle)."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from pydantic import ValidationError

from handler_kit import HookApp, allow, deny
from handler_kit.core.events import model_for
from handler_kit.core.outputs import SAFE_DECISIONS
from handler_kit.ops.audit import records as R
from handler_kit.ops.audit.process import AuditProcess
from handler_kit.ops.audit.trail import (
    Observed,
    TraceIds,
    capture,
    idempotency_key,
    input_json,
)
from tests.fuzz.support import any_text, deep_values, handler_answers, json_values
from tests.ops import audit_reference as REF
from tests.support.payloads import read_jsonl

if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):  # nothing written in the repository
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "handler-kit-hypothesis")

EXAMPLES = settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
EVENTS = ["PreToolUse", "PermissionRequest", "UserPromptSubmit", "Stop", "PostToolUse"]
SERVER_SECRET = "server-secret-token-0123456789"
# Strings the redactor must catch, wherever they are.
SECRETS = [
    "Bearer abcdefghijklmnop",
    "sk-abcdefghijklmnopqrstuvwx",
    "ghp_abcdefghijklmnopqrstuvwxyz0123",
    "https://user:hunter2@example.com/x",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----",
    f"the server's own {SERVER_SECRET} in a sentence",
    "x" * 300,
    "caf\u00e9 \udc8f lone",
]
texts = any_text | st.sampled_from(SECRETS)
values = json_values(12) | st.sampled_from(SECRETS) | deep_values()
tool_inputs = st.dictionaries(
    st.sampled_from(["amount", "password", "api_key", "card", "email", "order_id"]) | any_text,
    values,
    max_size=5,
)

# Handlers answer what the example put here under their name: a raise, or any return value.
RETURNS: dict[str, Any] = {}


def _handler(name: str) -> Any:
    def handler(event: Any) -> Any:
        answer = RETURNS.get(name)
        if isinstance(answer, Exception):
            raise answer
        return answer

    handler.__name__ = name
    return handler


def _app(names: list[tuple[str, bool]]) -> HookApp:
    app = HookApp("equivalence")
    for event in EVENTS:
        for name, closed in names:
            closed_here = closed and event in SAFE_DECISIONS  # only gates fail closed
            app.on(event, name=f"{name}_{event}", fail_closed=closed_here)(_handler(name))
    return app


APPS = {
    "one": _app([("first", False)]),
    "gate": _app([("first", True)]),
    "three": _app([("first", False), ("second", True), ("third", False)]),
}
POLICIES: dict[str, dict[str, Any]] = {
    "default": {},
    "paths": {"paths": ["tool_input.*.email", "tool_input.card.number", "prompt"]},
    "text": {"text": True, "max_chars": 40},
    "no input": {"tool_input": False, "secrets": [SERVER_SECRET]},
    "no rules": {"secret_keys": False, "secret_values": False, "text": True},
    "server secret": {"secrets": [SERVER_SECRET], "text": True},
}


def policies(name: str) -> tuple[R.RecordPolicy, R.RecordPolicy]:
    """The policy ``name``, with the new redactor and with the reference's."""
    options = dict(POLICIES[name])
    paths = options.pop("paths", ())
    policy = {key: options.pop(key) for key in ("tool_input", "text") if key in options} | {
        "app_version": "1.2.3",
        "replica": "host:1",
    }
    return (
        R.RecordPolicy(redactor=R.Redactor(paths, **options), **policy),
        R.RecordPolicy(redactor=REF.Redactor(paths, **options), **policy),  # type: ignore[arg-type]
    )


@st.composite
def observed(draw: st.DrawFn) -> Observed:
    """An answer of one of APPS to a generated event, as the observer sees it."""
    name = draw(st.sampled_from(EVENTS))
    data: dict[str, Any] = {"hook_event_name": name}
    for field in ("session_id", "turn_id", "tool_use_id", "agent_id", "prompt_id"):
        if draw(st.booleans()):
            data[field] = draw(texts)
    if draw(st.booleans()):
        data["tool_name"] = draw(texts)
    if draw(st.integers(0, 4)):
        data["tool_input"] = draw(tool_inputs)
    for field in ("prompt", "last_assistant_message"):
        if draw(st.booleans()):
            data[field] = draw(texts)
    data.update(draw(st.dictionaries(any_text, json_values(4), max_size=2)))
    try:
        event = model_for(name).model_validate(data)
    except ValidationError:
        # an input the server refuses (a lone surrogate in an extra field's name, say) is
        # never answered, so never recorded
        reject()
    app = APPS[draw(st.sampled_from(sorted(APPS)))]
    for handler in ("first", "second", "third"):
        RETURNS[handler] = draw(
            handler_answers(name) | st.just(RuntimeError(draw(texts))) | st.sampled_from(SECRETS)
        )
    answer = asyncio.run(app.answer(event))
    count = len(answer.invocations)
    trace = None
    if draw(st.booleans()):
        trace = TraceIds(
            f"{draw(st.integers(1, 2**128 - 1)):032x}",
            f"{draw(st.integers(1, 2**64 - 1)):016x}",
            draw(st.none() | st.just("00f067aa0ba902b7")),
            [f"{n:016x}" for n in range(1, count + 1)],
            "evt_" + "a" * 32,
            [draw(st.sampled_from([f"evt_{n:032x}", 'odd "id" \udc8f'])) for n in range(count)],
        )
    return Observed(
        answer=answer,
        transport=draw(st.sampled_from(["webhook", "mcp", "command", "direct"])),
        principal=draw(st.none() | st.sampled_from(["token#1", "jwt:alice"])),
        traceparent=draw(
            st.none()
            | st.just("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            | st.just("garbage")
        ),
        end_ns=draw(st.integers(1_600_000_000_000_000_000, 1_900_000_000_000_000_000)),
        pid=draw(st.integers(1, 2**22)),
        trace=trace,
        replayed=frozenset(
            draw(st.lists(st.sampled_from([f"first_{name}", f"third_{name}"]), max_size=2))
        ),
    )


# Fields that are new at each call when no tracer gave them (and the traceparent's parent).
IDS = ("event_id", "answer_id", "trace_id", "span_id", "parent_span_id")


def _without_ids(record: dict[str, Any]) -> dict[str, Any]:
    return {key: "<id>" if key in IDS else value for key, value in record.items()}


def _same_ids(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> None:
    """The id fields of ``new`` are shaped as ``old``'s and tie the records together alike."""
    answer = new[-1]
    for record, reference in zip(new, old, strict=True):
        assert [type(record[k]) for k in IDS if k in record] == [
            type(reference[k]) for k in IDS if k in reference
        ]
        assert record["trace_id"] == answer["trace_id"]
        if record["kind"] == "invocation":
            assert record["answer_id"] == answer["event_id"]
            assert record["parent_span_id"] == answer["span_id"]
        for key in ("event_id", "answer_id"):
            if key in record:
                assert record[key].startswith("evt_") and len(record[key]) == 36
    assert len({r["event_id"] for r in new}) == len(new)


def _compare(item: Observed, policy: str) -> None:
    """The records and lines of ``item`` are the reference's."""
    new_policy, old_policy = policies(policy)
    event = item.answer.event
    # the input as digested: the same text (so the same idempotency keys) as before
    assert input_json(event) == REF.input_json(event)
    old = REF.serialize(REF.records(REF.capture(item), "app", old_policy))
    captured = capture(item)
    # what crosses the pipe, as AuditProcess.send() writes it
    wire = pickle.loads(pickle.dumps([tuple(captured)], protocol=pickle.HIGHEST_PROTOCOL))[0]
    new = R.record_lines(wire, "app", new_policy)
    assert len(new) == len(old)
    if item.trace is not None:
        # every id given: the same records and the same lines, byte for byte
        assert [line for _, line in new] == [line for _, line in old]
        assert [record for record, _ in new] == [record for record, _ in old]
    else:
        for (record, line), (reference, reference_line) in zip(new, old, strict=True):
            assert list(record) == list(reference)  # the same keys in the same order
            assert _without_ids(record) == _without_ids(reference)
            parsed, expected = json.loads(line), json.loads(reference_line)
            assert list(parsed) == list(expected)
            assert _without_ids(parsed) == _without_ids(expected)
        _same_ids([r for r, _ in new], [r for r, _ in old])
        if item.traceparent is not None and item.traceparent.startswith("00-"):
            assert new[-1][0]["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    # the lines alone (JSON-lines sinks): joined from pieces for one handler, the same lines
    _compare_lines(R.record_lines(wire, "app", new_policy, record_keys=frozenset()), old, item)
    # and with the records' scalar fields (what SQLite and PostgreSQL sinks read)
    scalars = R.record_lines(wire, "app", new_policy, record_keys=R.SCALAR_KEYS)
    _compare_lines(scalars, old, item)
    _compare_scalars(scalars, new, item)
    # records() is record_lines() without the lines; serialize() writes what it writes
    if item.trace is not None:
        built = R.records(wire, "app", new_policy)
        assert R.serialize(built) == new
    # the idempotency key recorded is the one the idempotency store uses (as written: a lone
    # surrogate becomes U+FFFD)
    for record, _ in new:
        handler = record["handler"] if record["kind"] == "invocation" else None
        assert record["idempotency_key"] == R.writable(idempotency_key(event, handler))


def _compare_lines(
    new: list[tuple[dict[str, Any], str]], old: list[tuple[dict[str, Any], str]], item: Observed
) -> None:
    """The lines of ``new`` are those of ``old`` (byte for byte when the ids are given)."""
    assert len(new) == len(old)
    if item.trace is not None:
        assert [line for _, line in new] == [line for _, line in old]
        return
    parsed = [json.loads(line) for _, line in new]
    for record, (_, line) in zip(parsed, old, strict=True):
        expected = json.loads(line)
        assert list(record) == list(expected)
        assert _without_ids(record) == _without_ids(expected)
    _same_ids(parsed, [json.loads(line) for _, line in old])


def _compare_scalars(
    new: list[tuple[dict[str, Any], str]], old: list[tuple[dict[str, Any], str]], item: Observed
) -> None:
    """The records of ``new`` hold at least the scalar fields of ``old``'s (whole records),
    of the same values and types (all of them when the general path built them)."""
    for (record, _), (reference, _) in zip(new, old, strict=True):
        kept = {key: value for key, value in reference.items() if key in R.SCALAR_KEYS}
        assert set(record) in (set(kept), set(reference))
        record = {key: record[key] for key in kept}
        assert [type(value) for value in record.values()] == [type(v) for v in kept.values()]
        if item.trace is not None:
            assert record == kept
        else:
            assert _without_ids(record) == _without_ids(kept)


@EXAMPLES
@given(item=observed(), policy=st.sampled_from(sorted(POLICIES)))
def test_records_and_lines_are_the_reference_ones(item: Observed, policy: str) -> None:
    _compare(item, policy)


def _nested(depth: int, leaf: Any, dicts: bool = True) -> Any:
    for level in range(depth):
        leaf = {"k": leaf} if dicts or level % 2 else [leaf]
    return leaf


def test_edge_cases_are_the_reference_ones() -> None:
    """What a few examples may miss: nesting around the cut, on both sides of it, in the
    input and in ``updatedInput``; secrets in reasons, in a verdict's message and its
    ``updatedInput``; lone surrogates in keys and values."""
    deep = [_nested(n, "x", dicts) for n in (198, 199, 200, 201, 202) for dicts in (1, 0)]
    secret_keys = {"password": "x", "nested": {"api_key": [1, 2]}, "ok": SECRETS[0]}
    outputs: list[Any] = [
        *(allow(updated_input={"v": value}) for value in deep),
        deny(SECRETS[1]),
        allow(SECRETS[4], updated_input=secret_keys),
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": secret_keys}},
        {"hookSpecificOutput": {"decision": {"behavior": "allow", "message": SECRETS[2]}}},
        {"hookSpecificOutput": {"decision": {"behavior": "deny", "updatedInput": deep[3]}}},
        {"systemMessage": SECRETS[5], "continue": False, "stopReason": SECRETS[3]},
        {"hookSpecificOutput": {"additionalContext": "\udc8f", "\ud800key": 1}},
    ]
    inputs: list[Any] = [*deep, secret_keys, {"\ud800": "\udfff", "card": {"number": 4}}]
    for n, (output, tool_input) in enumerate(zip(outputs, inputs * 2, strict=False)):
        for name in ("PreToolUse", "PermissionRequest"):
            event = model_for(name).model_validate(
                {"hook_event_name": name, "tool_use_id": f"t{n}", "tool_input": {"v": tool_input}}
            )
            for app in APPS.values():
                RETURNS.update(first=output, second=RuntimeError(SECRETS[0]), third=output)
                answer = asyncio.run(app.answer(event))
                ids = None
                if n % 2:
                    count = len(answer.invocations)
                    ids = TraceIds(
                        "1" * 32,
                        "2" * 16,
                        None,
                        ["3" * 16] * count,
                        "evt_" + "4" * 32,
                        ["evt_" + "5" * 32] * count,
                    )
                item = Observed(
                    answer, "webhook", "token#1", None, 1_800_000_000_000_000_000, 1, ids
                )
                for policy in POLICIES:
                    _compare(item, policy)


@EXAMPLES
@given(
    value=st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70),
    ns=st.integers(0, 4_000_000_000_000_000_000),
)
def test_latencies_and_times_are_written_alike(value: float, ns: int) -> None:
    """A handler's latency and the answer's time, whatever their value, as before."""
    app = APPS["one"]
    RETURNS["first"] = None
    answer = asyncio.run(app.answer(model_for("Stop").model_validate({"hook_event_name": "Stop"})))
    answer.invocations[0].latency_ms = value
    ids = TraceIds("1" * 32, "2" * 16, None, ["3" * 16], "evt_" + "4" * 32, ["evt_" + "5" * 32])
    item = Observed(answer, "direct", None, None, ns, 1, trace=ids)
    new_policy, old_policy = policies("default")
    new = R.record_lines(capture(item), "app", new_policy)
    old = REF.serialize(REF.records(REF.capture(item), "app", old_policy))
    assert [line for _, line in new] == [line for _, line in old]


def _item(n: int) -> Observed:
    RETURNS.update(first={"hookSpecificOutput": {"permissionDecision": "deny"}}, second=None)
    RETURNS["third"] = None
    event = model_for("PreToolUse").model_validate(
        {"hook_event_name": "PreToolUse", "tool_use_id": f"t{n}", "tool_input": {"n": n}}
    )
    answer = asyncio.run(APPS["three"].answer(event))
    return Observed(answer, "webhook", "token#1", None, 1_800_000_000_000_000_000, 1)


def test_what_crosses_the_pipe_is_plain_values(tmp_path: Path) -> None:
    """A captured answer holds strings, numbers and tuples (a status is its text, not the
    enum), and the writer process's frames carry plain tuples, which unpickle without a call
    into Python; the writer process builds the same records from them."""
    captured = capture(_item(1))
    statuses = [invocation[1] for invocation in captured.invocations]
    assert statuses and all(type(status) is str for status in statuses)

    class Pipe:
        frame: Any = None

        def _send(self, message: Any) -> None:
            self.frame = message

    pipe = Pipe()
    AuditProcess.send(pipe, [captured])  # type: ignore[arg-type]
    assert pipe.frame[0] == "batch" and type(pipe.frame[1][0]) is tuple

    path = tmp_path / "audit.jsonl"
    writer = AuditProcess([f"jsonl:{path}"], app="app", policy=R.RecordPolicy())
    try:
        writer.send([capture(_item(n)) for n in range(5)])
        writer.flush()
    finally:
        writer.close()
    written = read_jsonl(path)
    assert [r["kind"] for r in written] == ["invocation"] * 3 + ["answer"] + (
        ["invocation"] * 3 + ["answer"]
    ) * 4
    answers = [r for r in written if r["kind"] == "answer"]
    assert [r["tool_use_id"] for r in answers] == [f"t{n}" for n in range(5)]
    assert {r["status"] for r in written} == {"ok"}
    assert {r["decision"] for r in answers} == {"deny"}


def _one_handler_item(output: Any, tool_input: Any, **observed: Any) -> Observed:
    RETURNS["first"] = output
    event = model_for("PreToolUse").model_validate(
        {
            "hook_event_name": "PreToolUse",
            "session_id": "sess-1",
            "tool_name": "issue_refund",
            "tool_use_id": "toolu_1",
            "tool_input": tool_input,
        }
    )
    answer = asyncio.run(APPS["one"].answer(event))
    fields = {
        "transport": "webhook",
        "principal": "token#1",
        "traceparent": None,
        "end_ns": 1_800_000_000_123_456_789,
        "pid": 7,
        "trace": TraceIds(
            "1" * 32, "2" * 16, None, ["3" * 16], "evt_" + "4" * 32, ["evt_" + "5" * 32]
        ),
    } | observed
    return Observed(answer, **fields)


def test_one_handler_lines_are_joined_or_written_by_the_general_path() -> None:
    """A one-handler answer's lines are joined from pieces when each plain string needs no
    escape, and written by the general path otherwise (a quote, a backslash, a control
    character, a lone surrogate, a string the redactor changes into one, several handlers):
    byte for byte the reference's lines either way."""
    joined = [
        _one_handler_item(deny("Refunds over $500 need a human approver."), {"amount": 640}),
        _one_handler_item(None, {"order_id": "4824", "password": "x", "note": SECRETS[0]}),
        _one_handler_item(allow(updated_input={"v": 'a "quoted" \\ value'}), {"v": "\n"}),
        _one_handler_item(deny("caf\u00e9 \u2028 ok"), {}, principal=None, traceparent="garbage"),
        _one_handler_item(deny("x" * 3000), {"amount": 1e-7, "big": 1e300}),
    ]
    general = [
        _one_handler_item(deny('a "quoted" reason'), {}),
        _one_handler_item(deny("back\\slash"), {}),
        _one_handler_item(deny("a\ttab"), {}),
        _one_handler_item(deny("lone \udc8f"), {}),
        _one_handler_item(None, {"\ud800": "\udfff"}),
        _one_handler_item(None, {}, principal='jwt:"odd"'),
    ]
    for policy in POLICIES:
        new_policy, old_policy = policies(policy)
        for items, path in ((joined, "joined"), (general, "general")):
            for item in items:
                wire = tuple(capture(item))
                taken = R._joined_lines(wire, "app", new_policy, False)
                assert (taken is not None) == (path == "joined"), (policy, item.answer.output)
                old = REF.serialize(REF.records(REF.capture(item), "app", old_policy))
                new = R.record_lines(wire, "app", new_policy, record_keys=frozenset())
                assert [line for _, line in new] == [line for _, line in old]
                with_records = R.record_lines(wire, "app", new_policy)
                assert with_records == old  # whole records when a sink may read any field
                scalars = R.record_lines(wire, "app", new_policy, record_keys=R.SCALAR_KEYS)
                assert [line for _, line in scalars] == [line for _, line in old]
                _compare_scalars(scalars, with_records, item)
                if path == "joined":  # only the scalar fields were built
                    assert set(scalars[0][0]) | set(scalars[1][0]) <= R.SCALAR_KEYS
    several = _item(2)  # three handlers: the general path
    new_policy, old_policy = policies("default")
    new = R.record_lines(capture(several), "app", new_policy, record_keys=frozenset())
    old = REF.serialize(REF.records(REF.capture(several), "app", old_policy))
    _compare_lines(new, old, several)


def test_the_writer_process_writes_joined_lines(tmp_path: Path) -> None:
    """The writer process with a JSON-lines sink and a SQLite sink: the same lines in both,
    and the SQLite columns (which need the records) filled in."""
    import sqlite3

    path, db = tmp_path / "audit.jsonl", tmp_path / "audit.db"
    items = [_one_handler_item(deny(f"no {n}"), {"n": n}, trace=None) for n in range(3)]
    for sinks in ([f"jsonl:{path}"], [f"jsonl:{path}", f"sqlite:{db}"]):
        writer = AuditProcess(sinks, app="app", policy=R.RecordPolicy(replica="r:1"))
        try:
            writer.send([capture(item) for item in items])
            writer.flush()
        finally:
            writer.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 12
    written = [json.loads(line) for line in lines]
    assert [r["reason"] for r in written if r["kind"] == "answer"] == ["no 0", "no 1", "no 2"] * 2
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT event_id, decision, record FROM audit ORDER BY id")
        stored = list(rows)
    assert [row[2] for row in stored] == lines[6:]
    assert [(row[0], row[1]) for row in stored] == [
        (r["event_id"], r["decision"]) for r in written[6:]
    ]


def test_the_durable_channel_sends_plain_tuples(tmp_path: Path) -> None:
    """The durable mode's event loop hands the writer process plain tuples too (a NamedTuple
    pickles and unpickles through a Python call each), and the answer is committed."""
    from handler_kit.ops.audit.trail import AuditTrail

    path = tmp_path / "audit.jsonl"
    trail = AuditTrail("app", R.RecordPolicy(), specs=[f"jsonl:{path}"], durable=True)
    item = _one_handler_item(deny("no"), {"amount": 640}, trace=None)

    async def submit() -> tuple[list[Any], bool]:
        ack = trail.submit(item)
        channel = trail._channel
        assert channel is not None and not isinstance(ack, bool)
        batch = list(channel.batch)  # before the loop turn's end sends it
        return batch, await trail.committed(ack, WAIT)

    try:
        batch, committed = asyncio.run(submit())
    finally:
        trail.close()
    assert [type(captured) for captured in batch] == [tuple]
    assert committed
    written = read_jsonl(path)
    assert [(r["kind"], r["decision"]) for r in written] == [("invocation", "deny")] * 1 + [
        ("answer", "deny")
    ]


WAIT = 30.0  # far longer than a commit takes on a loaded machine: only a hang reaches it


def test_sinks_say_which_record_fields_they_read() -> None:
    """The sinks of a writer process read the lines and scalar fields only (so their records
    are built from the joined path's values); a sink that does not say reads whole records."""
    from handler_kit.ops.audit.postgres import PostgresSink
    from handler_kit.ops.audit.sqlite import SQLiteSink

    assert R.record_keys_of([R.JsonLinesSink("stderr")]) == frozenset()
    both = R.record_keys_of([R.JsonLinesSink("stderr"), SQLiteSink, PostgresSink])
    assert both is not None and {"ts", "event_id", "idempotency_key", "decision"} <= both

    class Whole:
        def write(self, records: Any) -> None: ...

    class Odd(Whole):
        record_keys = ("output",)

    assert R.record_keys_of([SQLiteSink, Whole()]) is None
    assert R.record_keys_of([Odd()]) is None
