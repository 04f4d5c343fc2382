"""Schema 2 of the audit trail: one record per decision, its id known to what runs after the
answer, the whole input when asked (and whether it is whole), and shadow records linked to
their decision, written after it (committed after it in durable mode)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from handler_kit import HookApp, PreToolUse, allow, deny
from handler_kit.config import ConfigError, OperationsConfig, ServerConfig
from handler_kit.core.vocabulary import Answer
from handler_kit.ops.audit.capture import DECISION_ID
from handler_kit.ops.audit.records import REDACTED
from handler_kit.ops.operations import Operations
from handler_kit.testing import running_server
from tests.support.http import TOKEN
from tests.support.payloads import read_jsonl, wait_for_jsonl


def _gate() -> HookApp:
    app = HookApp("enforced")

    @app.pre_tool_use(name="gate")
    def gate(event: PreToolUse) -> Any:
        return deny("no rm -rf") if "rm" in str(event.tool_input) else allow("fine")

    return app


def _candidate() -> HookApp:
    app = HookApp("candidate")

    @app.pre_tool_use(name="lenient")
    def lenient(event: PreToolUse) -> Any:
        return allow("fine")

    return app


def _post(server: Any, body: bytes) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        return http.post("/hooks", content=body, headers={"Authorization": f"Bearer {TOKEN}"})


def test_the_whole_input_is_recorded_when_asked_and_says_whether_it_is_whole(
    tmp_path: Path,
) -> None:
    """``audit_input="full"`` over the real webhook: every field of the body as received
    (one the model does not know, a null), complete; a body with a secret in it is recorded
    redacted, and then not complete. The digest is of the bytes sent."""
    log = tmp_path / "audit.jsonl"
    config = ServerConfig(
        tokens=[TOKEN], operations=OperationsConfig(audit=[f"jsonl:{log}"], audit_input="full")
    )
    plain = (
        b'{"hook_event_name":"PreToolUse","session_id":"s-1","cwd":"/srv","tool_name":"Bash",'
        b'"tool_use_id":"tu-plain","tool_input":{"command":"ls"},"permission_mode":null,'
        b'"vendor_field":{"a":[1,2]}}'
    )
    secret = (
        b'{"hook_event_name":"PreToolUse","session_id":"s-1","tool_name":"Bash",'
        b'"tool_use_id":"tu-secret","tool_input":{"command":"rm -rf /","password":"hunter2"}}'
    )
    with running_server(_gate(), config=config) as server:
        assert _post(server, plain).status_code == 200
        assert _post(server, secret).status_code == 200
        whole, redacted = wait_for_jsonl(log, 2)
    assert whole["input"] == json.loads(plain)
    assert whole["input_complete"] is True
    assert whole["input_digest"] == hashlib.sha256(plain).hexdigest()[:16]
    assert redacted["input"] == {
        "hook_event_name": "PreToolUse",
        "session_id": "s-1",
        "tool_name": "Bash",
        "tool_use_id": "tu-secret",
        "tool_input": {"command": "rm -rf /", "password": REDACTED},
    }
    assert redacted["input_complete"] is False
    assert "hunter2" not in log.read_text()
    assert redacted["decision"] == "deny"


def test_by_default_the_record_keeps_tool_input_and_is_never_complete(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    config = ServerConfig(tokens=[TOKEN], operations=OperationsConfig(audit=[f"jsonl:{log}"]))
    body = (
        b'{"hook_event_name":"PreToolUse","session_id":"s-1","cwd":"/srv","tool_name":"Bash",'
        b'"tool_use_id":"tu-1","tool_input":{"command":"ls"}}'
    )
    with running_server(_gate(), config=config) as server:
        assert _post(server, body).status_code == 200
        (record,) = wait_for_jsonl(log, 1)
    assert record["input"] == {"tool_input": {"command": "ls"}}
    assert record["input_complete"] is False
    assert record["input_digest"] == hashlib.sha256(body).hexdigest()[:16]


def test_the_input_setting_is_read_from_the_environment() -> None:
    assert OperationsConfig.from_env({"HANDLER_KIT_AUDIT_INPUT": "Full"}).audit_input == "full"
    assert OperationsConfig.from_env({}).audit_input == "policy"
    with pytest.raises(ConfigError, match="HANDLER_KIT_AUDIT_INPUT must be 'policy' or 'full'"):
        OperationsConfig.from_env({"HANDLER_KIT_AUDIT_INPUT": "everything"})


def _shadowed(
    settings: OperationsConfig, *, from_thread: bool = False
) -> tuple[HookApp, Operations, list[str], list[asyncio.Task[Any]]]:
    """The enforced app with the audit trail, and after it an observer that answers each
    event with the candidate app and records that answer as a shadow of the decision (what
    a shadow runner does, through the trail's public API)."""
    operations = Operations.build(_gate(), settings)
    served = operations.apply(_gate())
    candidate = _candidate()
    seen: list[str] = []
    answering: list[asyncio.Task[Any]] = []
    trail = operations.audit
    assert trail is not None

    def shadow(answer: Answer, transport: str, context: dict[str, Any]) -> None:
        decision_id = context[DECISION_ID]
        seen.append(decision_id)
        handlers = candidate.matching(answer.event)
        # the candidate's answer, as the shadow runner would compute it (after the decision)
        other = asyncio.get_running_loop().create_task(candidate.answer(answer.event, handlers))
        answering.append(other)

        def record(done: Any) -> None:
            shadow_answer = done.result()

            def write() -> None:
                trail.record_shadow(
                    decision_id,
                    candidate.name,
                    answer.event.hook_event_name,
                    shadow_answer.output,
                    shadow_answer.failed,
                    shadow_answer.invocations,
                    time.time_ns(),
                    agrees=shadow_answer.output == answer.output,
                    event=answer.event,
                    transport=transport,
                    principal=context.get("principal"),
                )

            if from_thread:
                import threading

                thread = threading.Thread(target=write)
                thread.start()
                thread.join()
            else:
                write()

        other.add_done_callback(record)

    return served.extended(observers=(shadow,)), operations, seen, answering


def _event(tool_use_id: str, command: str) -> PreToolUse:
    return PreToolUse(
        hook_event_name="PreToolUse",
        session_id="s-1",
        tool_name="Bash",
        tool_use_id=tool_use_id,
        tool_input={"command": command},
    )


async def _answer_all(
    hooks: HookApp, events: list[PreToolUse], answering: list[asyncio.Task[Any]]
) -> None:
    for event in events:
        await hooks.answer(event, transport="webhook")
    # the candidates' answers, started after each decision: each records itself as it ends
    # (its callback was added first, so it has run when the gather returns)
    await asyncio.gather(*answering)
    assert len(answering) == len(events)


def test_a_shadow_record_is_linked_to_its_decision_and_written_after_it(tmp_path: Path) -> None:
    """Through the writer process: each decision, then its shadow naming it by the id the
    observer handed on; the shadow's handlers are the candidate's and it says whether it
    agreed (a deny the candidate allowed does not)."""
    log = tmp_path / "audit.jsonl"
    hooks, operations, seen, answering = _shadowed(OperationsConfig(audit=[f"jsonl:{log}"]))
    try:
        events = [_event("tu-1", "ls"), _event("tu-2", "rm -rf /")]
        asyncio.run(_answer_all(hooks, events, answering))
    finally:
        operations.close_sync()
    records = read_jsonl(log)
    assert sorted((r["kind"], r["tool_use_id"]) for r in records) == [
        ("decision", "tu-1"),
        ("decision", "tu-2"),
        ("shadow", "tu-1"),
        ("shadow", "tu-2"),
    ]
    decisions = [r for r in records if r["kind"] == "decision"]
    shadows = [r for r in records if r["kind"] == "shadow"]
    assert [d["event_id"] for d in decisions] == seen
    assert [s["decision_id"] for s in shadows] == seen
    where = {(r["kind"], r["decision_id"] or r["event_id"]): n for n, r in enumerate(records)}
    for decision_id in seen:
        assert where[("decision", decision_id)] < where[("shadow", decision_id)]
    assert [s["agrees"] for s in shadows] == [True, False]
    first = shadows[1]
    assert first["tool_use_id"] == "tu-2"
    assert first["app"] == "candidate" and first["decision"] == "allow"
    assert first["input"] is None and first["input_digest"] is None
    assert first["input_complete"] is False
    assert [h["name"] for h in first["handlers"]] == ["lenient"]
    assert first["idempotency_key"] == decisions[1]["idempotency_key"]
    assert first["schema_version"] == 2 and first["transport"] == "webhook"
    assert first["event_id"] not in seen
    assert all("agrees" not in d for d in decisions)


@pytest.mark.parametrize("from_thread", [False, True], ids=["event-loop", "thread"])
def test_a_durable_shadow_record_is_committed_after_its_decision(
    tmp_path: Path, from_thread: bool
) -> None:
    """Durable mode, through the writer process: the shadow records (written from the event
    loop, or from another thread) come after their decisions in the committed file."""
    log = tmp_path / "audit.jsonl"
    settings = OperationsConfig(audit=[f"jsonl:{log}"], audit_durable=True)
    hooks, operations, seen, answering = _shadowed(settings, from_thread=from_thread)

    async def scenario() -> None:
        assert operations.audit is not None
        await operations.audit.start()
        await _answer_all(hooks, [_event(f"tu-{n}", "rm -rf /") for n in range(5)], answering)
        assert operations.audit.flush()

    try:
        asyncio.run(scenario())
    finally:
        operations.close_sync()
    records = read_jsonl(log)
    assert len(records) == 10
    where = {(r["kind"], r.get("decision_id") or r["event_id"]): n for n, r in enumerate(records)}
    for decision_id in seen:
        assert where[("decision", decision_id)] < where[("shadow", decision_id)]
