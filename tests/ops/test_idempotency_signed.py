"""Signed idempotency records, through real uvicorn and a real Redis: a value planted in Redis
(an allow over a recorded deny, an unsigned record as written before the upgrade, a record
signed with another key, a record copied from another call) is never replayed: the handler
runs again, the miss is counted in ``/metrics`` and summed up in the log (no key, no record
contents). The keys rotate: the first signs, every one verifies. Without a key the Redis store
refuses to start."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from handler_kit import HookApp, PreToolUse, allow, deny
from handler_kit.config import ConfigError, OperationsConfig, ServerConfig
from handler_kit.core.outputs import Output
from handler_kit.ops.idempotency import RecordSigner, RedisStore
from handler_kit.testing import RunningServer, running_server
from tests.support.http import TOKEN
from tests.support.payloads import pre_tool_use

KEY = "mac-key-one-0123456789abcdef0123456789"
NEW_KEY = "mac-key-two-0123456789abcdef0123456789"
PREFIX = "handler-kit:idem:"
ALLOW_BODY = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}


def gate_app(runs: list[str]) -> HookApp:
    """An idempotent fail-closed gate that denies every refund over 500 (and allows the rest),
    counting its runs."""
    hooks = HookApp("idem-signed")

    @hooks.pre_tool_use(matcher="refund", idempotent=True, fail_closed=True, timeout=3)
    async def refund_gate(event: PreToolUse) -> Output:
        runs.append(event.tool_use_id or "")
        if (event.tool_input or {}).get("amount", 0) > 500:
            return deny("Refunds over 500 need approval.")
        return allow()

    return hooks


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.close()


def serving(redis_url: str, runs: list[str], keys: list[str]) -> Any:
    operations = OperationsConfig(
        idempotency_redis_url=redis_url, idempotency_keys=keys, metrics=True
    )
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    return running_server(gate_app(runs), config=config)


def decide(server: RunningServer, body: dict[str, Any]) -> str:
    with server.http(timeout=10) as client:
        response = client.post("/hooks", content=json.dumps(body))
    assert response.status_code == 200, response.text
    return str(response.json()["hookSpecificOutput"]["permissionDecision"])


def invalid_count(server: RunningServer) -> float:
    with server.http(timeout=10) as client:
        text = client.get("/metrics").text
    for line in text.splitlines():
        if line.startswith("handler_kit_idempotency_invalid_total "):
            return float(line.split()[1])
    raise AssertionError("no handler_kit_idempotency_invalid_total in /metrics")


def only_key(client: redis.Redis) -> str:
    keys = [k.decode() for k in client.keys(PREFIX + "*")]
    assert len(keys) == 1, keys
    return keys[0]


def forgeries(name: str, other_name: str, copied: bytes) -> dict[str, bytes]:
    """Values an attacker with Redis access could put at ``name`` to turn a deny into an allow."""
    payload = json.dumps({"s": "done", "out": ALLOW_BODY}).encode()
    return {
        # the format before records were signed
        "unsigned": payload,
        # the signed format, with a MAC the attacker cannot compute
        "bad-mac": b"hk1:" + b"0" * 64 + b":" + payload,
        # signed, under a key the server does not hold
        "other-key": RecordSigner(["attacker-key-0123456789abcdef0123"]).sign(name, payload),
        # a genuine allow of another call (``copied`` from ``other_name``), moved over the deny
        "copied": copied,
        "garbage": b"\xff\x00 not json",
    }


def test_a_planted_allow_never_replaces_a_recorded_deny(
    redis_url: str, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    runs: list[str] = []
    with serving(redis_url, runs, [KEY]) as server:
        # a genuine allow, recorded for another call: the "copied" forgery
        assert decide(server, pre_tool_use("refund", "tu-small", amount=10)) == "allow"
        small = only_key(redis_client)
        copied = redis_client.get(small)
        assert copied is not None and copied.startswith(b"hk1:")
        redis_client.delete(small)

        deny_body = pre_tool_use("refund", "tu-big", amount=900)
        assert decide(server, deny_body) == "deny"
        name = only_key(redis_client)
        recorded = redis_client.get(name)
        assert recorded is not None and b"Refunds over 500" in recorded
        # the genuine record replays: the handler does not run again
        assert decide(server, deny_body) == "deny"
        assert runs == ["tu-small", "tu-big"]

        caplog.set_level(logging.WARNING, logger="handler_kit.idempotency")
        for number, (kind, value) in enumerate(forgeries(name, small, copied).items(), 1):
            redis_client.set(name, value, px=60_000)
            assert decide(server, deny_body) == "deny", kind  # the retry still denies
            assert runs.count("tu-big") == 1 + number, kind  # because the gate ran again
            stored = redis_client.get(name)
            assert stored is not None and stored.startswith(b"hk1:") and stored != value, kind
            # what the gate recorded again replays
            assert decide(server, deny_body) == "deny"
            assert runs.count("tu-big") == 1 + number, kind
        assert invalid_count(server) == len(forgeries(name, small, copied))

    warnings = [r for r in caplog.records if r.name == "handler_kit.idempotency"]
    # summed up once a window, not once per record; nothing of a key or a record in it
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    message = warnings[0].getMessage()
    assert "no valid MAC" in message
    for secret in (KEY, "allow", "Refunds", name):
        assert secret not in message


def test_a_record_written_before_the_upgrade_is_a_miss(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """An unsigned record as the previous release wrote it, planted before the server starts:
    the gate runs (its deny is the answer, not the old record's allow)."""
    runs: list[str] = []
    body = pre_tool_use("refund", "tu-old", amount=900)
    with serving(redis_url, runs, [KEY]) as server:
        # learn the call's Redis key with a first run, then put the old format in its place
        assert decide(server, body) == "deny"
        name = only_key(redis_client)
        old = json.dumps({"s": "done", "out": ALLOW_BODY})
        redis_client.set(name, old, px=60_000)
        assert decide(server, body) == "deny"
        assert runs == ["tu-old", "tu-old"]
        assert invalid_count(server) == 1


def test_keys_rotate_the_first_signs_every_one_verifies(redis_client: redis.Redis) -> None:
    url = redis_client.connection_pool.connection_kwargs
    redis_url = f"redis://{url['host']}:{url['port']}/0"
    calls: list[str] = []

    async def run(store: RedisStore, key: str) -> tuple[str, bool]:
        async def call() -> Output:
            calls.append(key)
            return deny(f"run {len(calls)}")

        output, replayed = await store.run_once(key, "PreToolUse", call, 5)
        await store.aclose()
        return output.reason or "", replayed

    async def scenario() -> list[tuple[str, bool]]:
        return [
            # the old replicas sign with KEY
            await run(RedisStore(redis_url, keys=[KEY]), "a"),
            # a replica with the new key added (second) replays what KEY signed...
            await run(RedisStore(redis_url, keys=[KEY, NEW_KEY]), "a"),
            # ...and one where the new key signs (first) replays it too
            await run(RedisStore(redis_url, keys=[NEW_KEY, KEY]), "a"),
            # records signed with the new key, read by a replica that has both
            await run(RedisStore(redis_url, keys=[NEW_KEY, KEY]), "b"),
            await run(RedisStore(redis_url, keys=[KEY, NEW_KEY]), "b"),
            # once KEY is retired, what it signed is a miss: the handler runs again
            await run(RedisStore(redis_url, keys=[NEW_KEY]), "a"),
            await run(RedisStore(redis_url, keys=[NEW_KEY]), "b"),
        ]

    assert asyncio.run(scenario()) == [
        ("run 1", False),
        ("run 1", True),
        ("run 1", True),
        ("run 2", False),
        ("run 2", True),
        ("run 3", False),
        ("run 2", True),
    ]
    assert calls == ["a", "b", "a"]


def test_the_redis_store_refuses_to_start_without_a_key(tmp_path: Path) -> None:
    url = "redis://127.0.0.1:1/0"
    with pytest.raises(ConfigError, match="without HANDLER_KIT_IDEMPOTENCY_KEYS"):
        OperationsConfig.from_env({"HANDLER_KIT_IDEMPOTENCY_REDIS_URL": url})
    with pytest.raises(ConfigError, match="at least 32") as short:
        OperationsConfig.from_env(
            {"HANDLER_KIT_IDEMPOTENCY_REDIS_URL": url, "HANDLER_KIT_IDEMPOTENCY_KEYS": "k" * 31}
        )
    assert "k" * 31 not in str(short.value)
    # a mounted secret, one key a line, the new one first
    keys = tmp_path / "keys"
    keys.write_text(f"{NEW_KEY}\n{KEY}\n")
    settings = OperationsConfig.from_env(
        {"HANDLER_KIT_IDEMPOTENCY_REDIS_URL": url, "HANDLER_KIT_IDEMPOTENCY_KEYS_FILE": str(keys)}
    )
    assert settings.idempotency_keys == (NEW_KEY, KEY)
    assert KEY not in repr(settings) and KEY not in repr(RecordSigner([KEY]))
    with pytest.raises(ValueError, match="MAC key"):
        RedisStore(url, keys=[])
