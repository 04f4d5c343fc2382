"""Idempotent handlers: in-memory and Redis stores, concurrent duplicates, failures, and the
done-when test (the same PreToolUse sent to two different workers runs the handler once with
Redis idempotency on, and both answers are identical)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx

from handler_kit import HookApp, PreToolUse, deny
from handler_kit.config import OperationsConfig
from handler_kit.core.outputs import Output
from handler_kit.ops.idempotency import MemoryStore, RedisStore
from handler_kit.ops.operations import Operations
from tests.support.apps import OPS_APP
from tests.support.http import TOKEN, send_many
from tests.support.payloads import pre_tool_use, read_jsonl
from tests.support.processes import clean_env, free_port, serve

# the MAC key of the Redis store's records (any 32+ characters)
MAC_KEY = "test-idempotency-mac-key-0123456789abcdef"


def _with_operations(
    hooks: HookApp, settings: OperationsConfig | None
) -> tuple[HookApp, Operations]:
    """``hooks`` with the operations ``settings`` turns on around it, and those operations."""
    operations = Operations.build(hooks, settings or OperationsConfig())
    return operations.apply(hooks), operations


def _gate_app(runs: list[str], *, fail_first: int = 0, delay: float = 0.05) -> HookApp:
    hooks = HookApp("idem-test")
    failures = {"left": fail_first}

    @hooks.pre_tool_use(matcher="open_approval", idempotent=True, fail_closed=True, timeout=3)
    async def open_approval(event: PreToolUse):
        runs.append(event.tool_use_id or "")
        await asyncio.sleep(delay)
        if failures["left"] > 0:
            failures["left"] -= 1
            raise RuntimeError("approval service down")
        return deny(f"Approval request #{sum(r != 'plain' for r in runs)} opened.")

    @hooks.pre_tool_use(matcher="open_approval")
    async def plain(event: PreToolUse):
        runs.append("plain")
        return None

    return hooks


def _event(tool_use_id: str = "tu-1", **tool_input: Any) -> PreToolUse:
    return PreToolUse.model_validate(
        pre_tool_use("open_approval", tool_use_id, **(tool_input or {"amount": 900}))
    )


def _bodies(answers: list[Any]) -> list[bytes]:
    return [a.body for a in answers]


def test_off_by_default_and_memory_store_when_on() -> None:
    runs: list[str] = []
    hooks = _gate_app(runs)
    # nothing configured: an idempotent handler still counts
    hooks, ops = _with_operations(hooks, None)
    assert ops.idempotency is not None and isinstance(ops.idempotency.store, MemoryStore)

    async def scenario() -> list[Any]:
        first = await hooks.answer(_event())
        second = await hooks.answer(_event())  # a retry
        other_input = await hooks.answer(_event(amount=901))  # same id, other input: runs
        other_call = await hooks.answer(_event("tu-2"))
        return [first, second, other_input, other_call]

    first, second, other_input, other_call = asyncio.run(scenario())
    assert first.body == second.body
    assert runs.count("tu-1") == 2 and runs.count("tu-2") == 1
    assert runs.count("plain") == 4  # handlers without idempotent=True always run
    assert other_input.body != first.body
    assert b"#" in other_call.body


def test_no_wrapper_without_idempotent_handlers() -> None:
    hooks = HookApp("plain")

    @hooks.pre_tool_use()
    def gate(event: PreToolUse):
        return None

    served, ops = _with_operations(hooks, None)
    assert not ops.active and served.wrappers == () and served.observers == ()


def test_memory_concurrent_duplicates_run_once() -> None:
    runs: list[str] = []
    hooks = _gate_app(runs, delay=0.2)
    hooks, _ = _with_operations(hooks, None)

    async def scenario() -> list[Any]:
        return await asyncio.gather(*(hooks.answer(_event()) for _ in range(8)))

    answers = asyncio.run(scenario())
    assert runs.count("tu-1") == 1
    assert len(set(_bodies(answers))) == 1


def test_failed_run_records_nothing_and_a_retry_runs_again() -> None:
    runs: list[str] = []
    hooks = _gate_app(runs, fail_first=1)
    hooks, _ = _with_operations(hooks, None)

    async def scenario() -> list[Any]:
        return [await hooks.answer(_event()) for _ in range(3)]

    failed, retried, replayed = asyncio.run(scenario())
    assert failed.invocations[0].status == "fail_closed"
    assert retried.invocations[0].status == "ok"
    assert replayed.body == retried.body
    assert runs.count("tu-1") == 2


def test_ttl_expiry_runs_again() -> None:
    runs: list[str] = []
    hooks = _gate_app(runs)
    hooks, _ = _with_operations(hooks, OperationsConfig(idempotency_ttl=0.0))

    async def scenario() -> None:
        await hooks.answer(_event())
        await hooks.answer(_event())

    asyncio.run(scenario())
    assert runs.count("tu-1") == 2


# -- Redis ----------------------------------------------------------------------------------


def test_redis_sequential_and_concurrent_across_two_stores(redis_url: str) -> None:
    """Two apps with two stores on one Redis behave like two workers."""
    runs: list[str] = []
    settings = OperationsConfig(idempotency_redis_url=redis_url, idempotency_keys=[MAC_KEY])
    worker_a, ops_a = _with_operations(_gate_app(runs, delay=0.2), settings)
    worker_b, ops_b = _with_operations(_gate_app(runs, delay=0.2), settings)

    async def scenario() -> tuple[list[Any], Any]:
        concurrent = await asyncio.gather(
            *(hooks.answer(_event("tu-c")) for hooks in (worker_a, worker_b) * 4)
        )
        later = await worker_b.answer(_event("tu-c"))
        for ops in (ops_a, ops_b):
            await ops.aclose()
        return concurrent, later

    concurrent, later = asyncio.run(scenario())
    assert runs.count("tu-c") == 1
    assert len({*_bodies(concurrent), later.body}) == 1
    assert b"Approval request #1 opened." in later.body


def test_redis_failed_winner_lets_a_waiting_duplicate_run(redis_url: str) -> None:
    runs: list[str] = []
    hooks = _gate_app(runs, fail_first=1, delay=0.1)
    hooks, ops = _with_operations(
        hooks, OperationsConfig(idempotency_redis_url=redis_url, idempotency_keys=[MAC_KEY])
    )

    async def scenario() -> list[Any]:
        answers = await asyncio.gather(hooks.answer(_event("tu-f")), hooks.answer(_event("tu-f")))
        await ops.aclose()
        return list(answers)

    answers = asyncio.run(scenario())
    statuses = sorted(a.invocations[0].status for a in answers)
    assert statuses == ["fail_closed", "ok"]
    assert runs.count("tu-f") == 2


def test_redis_unreachable_fails_the_invocation() -> None:
    runs: list[str] = []
    hooks = _gate_app(runs)
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    hooks, _ = _with_operations(
        hooks, OperationsConfig(idempotency_redis_url=url, idempotency_keys=[MAC_KEY])
    )
    answer = asyncio.run(hooks.answer(_event("tu-u")))
    inv = answer.invocations[0]
    assert inv.status == "fail_closed" and "idempotency store unavailable" in (inv.error or "")
    assert "tu-u" not in runs  # never run unprotected
    assert json.loads(answer.body)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_redis_replay_is_byte_identical_for_every_output_shape(redis_url: str) -> None:
    """What Redis stores (the rendered JSON) reads back into the same answer."""
    from handler_kit.core.outputs import allow, ask, rewrite

    outputs: list[Output] = [
        deny("no"),
        allow(),
        ask("sure?"),
        rewrite({"amount": 1, "nested": {"x": [1, 2]}}, reason="capped"),
        Output(context="ctx", system_message="note", extra={"custom": 1}),
        Output(),
    ]

    async def scenario() -> None:
        for index, expected in enumerate(outputs):
            store = RedisStore(redis_url, ttl=60, keys=[MAC_KEY])
            calls = 0

            async def call(expected: Output = expected) -> Output:
                nonlocal calls
                calls += 1
                return expected

            key = f"shape-{index}-{time.monotonic_ns()}"
            first, replayed_first = await store.run_once(key, "PreToolUse", call, 5)
            again, replayed_again = await store.run_once(key, "PreToolUse", call, 5)
            assert (replayed_first, replayed_again, calls) == (False, True, 1)
            assert again.render("PreToolUse") == first.render("PreToolUse")
            await store.aclose()

    asyncio.run(scenario())


def test_same_tool_use_on_two_workers_runs_once(redis_url: str, tmp_path: Path) -> None:
    """Done when: the same PreToolUse (same tool_use_id) reaching two different workers runs
    the handler once with Redis idempotency on, and the answers are identical."""
    run_log = tmp_path / "runs.log"
    audit = tmp_path / "audit.jsonl"
    port = free_port()
    env = clean_env(
        HANDLER_KIT_TOKENS=TOKEN,
        HANDLER_KIT_IDEMPOTENCY_REDIS_URL=redis_url,
        HANDLER_KIT_IDEMPOTENCY_KEYS=MAC_KEY,
        HANDLER_KIT_AUDIT=f"jsonl:{audit}",
        OPS_RUN_LOG=str(run_log),
    )
    body = pre_tool_use("open_approval", "toolu_01SameCall", amount=900)
    responses: list[httpx.Response] = []
    with serve(OPS_APP, port=port, workers=2, env=env) as server:
        url = f"http://127.0.0.1:{port}/hooks"
        for _ in range(40):  # bounded: until both workers have answered this very call
            batch = asyncio.run(send_many(url, [body] * 8, concurrency=8, fresh_connections=True))
            assert all(isinstance(r, httpx.Response) for r in batch), batch
            responses.extend(batch)  # type: ignore[arg-type]
            pids = {r["pid"] for r in read_jsonl(audit) if r["kind"] == "decision"}
            if len(pids) == 2:
                break
        assert server.terminate()
    records = [r for r in read_jsonl(audit) if r["tool_use_id"] == "toolu_01SameCall"]
    answer_pids = {r["pid"] for r in records if r["kind"] == "decision"}
    assert len(answer_pids) == 2, "the call reached both workers"
    assert [line.split()[1] for line in run_log.read_text().splitlines()] == ["toolu_01SameCall"]
    assert {r.status_code for r in responses} == {200}
    assert len({r.content for r in responses}) == 1  # identical answers, byte for byte
    decision = json.loads(responses[0].content)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    # the handlers of each decision, with the pid of the worker that answered
    invocations = [(r["pid"], h) for r in records for h in r["handlers"]]
    assert len(invocations) == len(responses)
    assert sum(1 for _, h in invocations if not h["replayed"]) == 1
    replayed_pids = {pid for pid, h in invocations if h["replayed"]}
    ran_pid = int(run_log.read_text().split()[0])
    assert replayed_pids - {ran_pid}, "the other worker replayed the recorded answer"


def test_a_replay_is_recorded_and_counted_as_one(tmp_path: Path) -> None:
    """The second call of the same tool use is replayed: the handler runs once, the audit
    records say which invocation was replayed (the idempotent one, not the plain handler
    beside it), and the replay metric counts it."""
    runs: list[str] = []
    audit = tmp_path / "audit.jsonl"
    settings = OperationsConfig(audit=[f"jsonl:{audit}"], audit_process=False, metrics=True)
    hooks, ops = _with_operations(_gate_app(runs, delay=0.0), settings)

    async def scenario() -> None:
        await hooks.answer(_event(), transport="webhook")
        await hooks.answer(_event(), transport="webhook")

    try:
        asyncio.run(scenario())
    finally:
        ops.close_sync()
    assert runs == ["tu-1", "plain", "plain"]
    invocations = [h for r in read_jsonl(audit) for h in r["handlers"]]
    assert [(h["name"], h["replayed"]) for h in invocations] == [
        ("open_approval", False),
        ("plain", False),
        ("open_approval", True),
        ("plain", False),
    ]
    assert ops.metrics is not None
    text = ops.metrics.exposition()[0].decode()
    replays = [
        line
        for line in text.splitlines()
        if line.startswith("handler_kit_idempotent_replays_total")
    ]
    assert replays == [
        'handler_kit_idempotent_replays_total{event="PreToolUse",handler="open_approval"} 1.0'
    ]


def test_idempotency_does_not_import_the_audit_trail() -> None:
    """The key helpers have a module of their own: an idempotent handler's wrapper loads
    neither the trail nor its writer."""
    import subprocess
    import sys

    probe = (
        "import sys, handler_kit.ops.idempotency\n"
        "print(sorted(m for m in sys.modules if m.startswith('handler_kit.ops.audit')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
