"""Idempotent handlers: a repeated call within a TTL gets the recorded answer, and the handler
does not run again.

Turn it on (``@hooks.pre_tool_use(..., idempotent=True)``) for a handler with a side effect
that must not happen twice for one tool call: a gate that opens an approval request, files a
ticket, sends a message. A runtime retries a hook after a timeout or a dropped connection, and
with several workers or replicas the retry can land anywhere; without this the approver gets
two requests. Pure decision functions do not need it (running them again gives the same
answer).

"The same call" is the idempotency key of :func:`handler_kit.ops.keys.idempotency_key`: the
input's ``tool_use_id`` (else ``turn_id``, ``prompt_id``, ``session_id``), the event, the
handler, and a digest of the whole input, so a reused id with a different input runs again;
and it is the same caller: the key also holds the principal the server authenticated
(:data:`PRINCIPAL`), so one caller's recorded answer is never replayed to another.

Stores: :class:`MemoryStore` (one process; the default when a handler is idempotent) and
:class:`RedisStore` (``HANDLER_KIT_IDEMPOTENCY_REDIS_URL``; several workers and replicas).

What Redis holds is signed: anything that reaches Redis (another pod, a leaked password) could
otherwise replace a recorded deny with an allow, and the runtime's retry would get the allow.
Each value carries an HMAC-SHA256 of the Redis key and the value under a key every replica
shares (``HANDLER_KIT_IDEMPOTENCY_KEYS``: the first signs, all verify, for rotation). A value
without a valid MAC (planted, written before the upgrade, or signed with a retired key) is a
miss: it is replaced, the handler runs again, and the metric
``handler_kit_idempotency_invalid_total`` counts it.
Both handle concurrent duplicates the same way: the first call takes an in-progress marker
(Redis ``SET NX PX``) and runs the handler; a duplicate waits for its result, bounded by its
own handler deadline (a fail-closed gate still answers its safe decision in time). A run that
fails records nothing and releases the marker, so a retry (or a waiting duplicate) runs the
handler itself. A store that cannot be reached fails the invocation (status ``error``; a
fail-closed handler answers its safe decision) rather than risk the side effect twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from handler_kit.core.outputs import Output
from handler_kit.ops.keys import idempotency_key

if TYPE_CHECKING:
    from handler_kit.core.events import HookEvent
    from handler_kit.core.vocabulary import Answer, Handler

logger = logging.getLogger("handler_kit.idempotency")

DEFAULT_TTL = 3600.0
Call = Callable[[], Awaitable["Output"]]

# Who the answer being computed is for: set by the server's auth layer for each request (the
# wrappers of an answer see its event, not the transport's context). None without auth.
PRINCIPAL: ContextVar[str | None] = ContextVar("handler_kit_principal", default=None)


class IdempotencyUnavailable(RuntimeError):
    """The store could not be reached: the invocation fails rather than run unprotected."""


class IdempotencyStore(Protocol):
    async def run_once(
        self, key: str, event_name: str, call: Call, lock_seconds: float
    ) -> tuple[Output, bool]:
        """Run ``call`` once per ``key`` within the TTL; (output, True when replayed)."""

    async def aclose(self) -> None: ...


class MemoryStore:
    """Recorded answers in this process (one worker). Bounded: the oldest go first."""

    def __init__(self, ttl: float = DEFAULT_TTL, max_entries: int = 100_000) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self.done: OrderedDict[str, tuple[float, Output]] = OrderedDict()
        self.running: dict[str, asyncio.Future[None]] = {}

    async def run_once(
        self, key: str, event_name: str, call: Call, lock_seconds: float
    ) -> tuple[Output, bool]:
        while True:
            found = self.done.get(key)
            if found is not None:
                if found[0] > time.monotonic():
                    return found[1], True
                del self.done[key]
            pending = self.running.get(key)
            if pending is None:
                break
            await asyncio.shield(pending)  # the first call's end, then look again
        finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.running[key] = finished
        try:
            output = await call()
            self.done[key] = (time.monotonic() + self.ttl, output)
            self.done.move_to_end(key)
            while len(self.done) > self.max_entries:
                self.done.popitem(last=False)
            return output, False
        finally:
            del self.running[key]
            finished.set_result(None)

    async def aclose(self) -> None:
        return None


_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# Take the key over from a value that failed verification, unless it changed meanwhile.
_REPLACE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""
# The prefix of a signed value, and what its MAC covers besides the value (the Redis key, so a
# value signed for one call cannot be copied onto another's key).
_SIGNED = b"hk1:"
_MAC_CONTEXT = b"handler-kit idempotency record v1\x00"
_MAC_HEX = 64
# How often values without a valid MAC are summed up in the log.
INVALID_LOG_INTERVAL = 60.0


class RecordSigner:
    """Signs and verifies the values of the Redis store: HMAC-SHA256 under ``keys[0]``,
    verified under any of ``keys`` (a key being rotated in or out), in constant time."""

    def __init__(self, keys: Sequence[str | bytes]) -> None:
        encoded = tuple(k.encode() if isinstance(k, str) else bytes(k) for k in keys)
        if not encoded or not all(encoded):
            raise ValueError("the idempotency store needs at least one non-empty MAC key")
        self._keys = encoded

    def __repr__(self) -> str:
        return f"RecordSigner(<{len(self._keys)} keys>)"  # never the keys

    @staticmethod
    def _message(name: str, payload: bytes) -> bytes:
        return _MAC_CONTEXT + name.encode("utf-8", "surrogatepass") + b"\x00" + payload

    def sign(self, name: str, payload: bytes) -> bytes:
        """``payload`` as stored at ``name``: prefix, MAC, payload."""
        mac = hmac.new(self._keys[0], self._message(name, payload), hashlib.sha256)
        return _SIGNED + mac.hexdigest().encode() + b":" + payload

    def verify(self, name: str, value: bytes) -> bytes | None:
        """The payload of ``value`` stored at ``name`` if one of the keys signed it, else None."""
        head = len(_SIGNED)
        if not value.startswith(_SIGNED) or value[head + _MAC_HEX : head + _MAC_HEX + 1] != b":":
            return None
        given = value[head : head + _MAC_HEX]
        payload = value[head + _MAC_HEX + 1 :]
        message = self._message(name, payload)
        valid = False
        for key in self._keys:  # every key, whichever matches: no early exit to time
            expected = hmac.new(key, message, hashlib.sha256).hexdigest().encode()
            valid |= hmac.compare_digest(expected, given)
        return payload if valid else None


class _InvalidRecords:
    """Counts the values that failed verification; logs a summary at most once a window
    (the count only: never a key, a value or what it held)."""

    def __init__(self, on_invalid: Callable[[], None] | None, interval: float) -> None:
        self.on_invalid = on_invalid
        self.interval = interval
        self.unlogged = 0
        self.logged_at: float | None = None

    def __call__(self) -> None:
        if self.on_invalid is not None:
            try:
                self.on_invalid()
            except Exception:
                logger.exception("could not count an invalid idempotency record")
        self.unlogged += 1
        now = time.monotonic()
        if self.logged_at is None or now - self.logged_at >= self.interval:
            logger.warning(
                "%d idempotency record(s) in Redis had no valid MAC and were ignored (their "
                "handlers ran again): written before the upgrade, signed with a key no longer "
                "in HANDLER_KIT_IDEMPOTENCY_KEYS, or planted by something that reaches Redis",
                self.unlogged,
            )
            self.unlogged = 0
            self.logged_at = now


class RedisStore:
    """Recorded answers in Redis, shared by every worker and replica.

    One key per call: ``{"s": "pending", "o": owner}`` while the first call runs (``SET NX``
    with a lock TTL a little over the handler's timeout, so a crashed worker's marker expires),
    then ``{"s": "done", "out": <Claude Code JSON>}`` for ``ttl`` seconds; each signed by
    :class:`RecordSigner` under ``keys`` (``hk1:<hex MAC>:<JSON>``). A value that does not
    verify is replaced (compare-and-set) as if the key were free, and ``on_invalid`` is called.
    """

    def __init__(
        self,
        url: str,
        ttl: float = DEFAULT_TTL,
        *,
        keys: Sequence[str | bytes],
        prefix: str = "handler-kit:idem:",
        poll_min: float = 0.002,
        poll_max: float = 0.05,
        on_invalid: Callable[[], None] | None = None,
    ) -> None:
        self.url = url
        self.signer = RecordSigner(keys)
        self._invalid = _InvalidRecords(on_invalid, INVALID_LOG_INTERVAL)
        self.ttl = ttl
        self.prefix = prefix
        self.poll_min = poll_min
        self.poll_max = poll_max
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, Any]] = {}
        self._background: set[asyncio.Task[Any]] = set()

    def client(self) -> Any:
        """The client of the running loop (redis.asyncio connections belong to one loop)."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is not None and entry[0] is loop:
            return entry[1]
        import redis.asyncio as redis

        for key, (other, _) in list(self._clients.items()):
            if other.is_closed():
                del self._clients[key]
        client = redis.Redis.from_url(
            self.url, socket_connect_timeout=2, socket_timeout=5, health_check_interval=30
        )
        self._clients[id(loop)] = (loop, client)
        return client

    async def run_once(
        self, key: str, event_name: str, call: Call, lock_seconds: float
    ) -> tuple[Output, bool]:
        from redis.exceptions import RedisError

        from handler_kit.core.outputs import parse_output

        client = self.client()
        name = self.prefix + key
        marker = self.signer.sign(
            name, json.dumps({"s": "pending", "o": secrets.token_hex(8)}).encode()
        )
        lock_ms = int(lock_seconds * 1000)
        delay = self.poll_min
        while True:
            state: dict[str, Any] | None = None
            try:
                acquired = await client.set(name, marker, nx=True, px=lock_ms)
                value = None if acquired else await client.get(name)
                if value is not None:
                    state = self._state(name, value)
                    if state is None:  # not ours: a miss, and the key is taken over
                        self._invalid()
                        acquired = bool(
                            await client.eval(_REPLACE, 1, name, value, marker, lock_ms)
                        )
                        value = None
            except (RedisError, OSError) as exc:
                raise IdempotencyUnavailable(f"idempotency store unavailable: {exc}") from exc
            if acquired:
                break
            if state is not None and state.get("s") == "done":
                try:
                    return parse_output(event_name, state["out"]), True
                except Exception:  # signed by us, yet unreadable (another version): a miss
                    logger.warning("a recorded idempotent answer could not be read; running")
                    self._invalid()
                    try:
                        acquired = bool(
                            await client.eval(_REPLACE, 1, name, value, marker, lock_ms)
                        )
                    except (RedisError, OSError) as exc:
                        raise IdempotencyUnavailable(
                            f"idempotency store unavailable: {exc}"
                        ) from exc
                    if acquired:
                        break
            # running elsewhere (or just released): wait, bounded by the handler deadline
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, self.poll_max)
        try:
            output = await call()
        except BaseException:
            self._release(client, name, marker)
            raise
        record = self.signer.sign(
            name, json.dumps({"s": "done", "out": output.render(event_name)}).encode()
        )
        try:
            await client.set(name, record, px=int(self.ttl * 1000))
        except (RedisError, OSError):
            logger.exception("could not record the answer of %s; a retry will run it again", key)
        return output, False

    def _state(self, name: str, value: bytes | str) -> dict[str, Any] | None:
        """The state a value of ours holds, or None for one that does not verify."""
        raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
        payload = self.signer.verify(name, raw)
        if payload is None:
            return None
        try:
            state = json.loads(payload)
        except ValueError:
            return None
        return state if isinstance(state, dict) else None

    def _release(self, client: Any, name: str, marker: bytes) -> None:
        """Drop our in-progress marker, in the background: a failed or late run must not wait
        on Redis to give its (fail-closed) answer."""

        async def release() -> None:
            try:
                await client.eval(_RELEASE, 1, name, marker)
            except Exception:
                logger.warning("could not release the idempotency marker %s", name)

        task = asyncio.get_running_loop().create_task(release())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        """Close the clients of the running loop (the server's, at shutdown)."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        loop = asyncio.get_running_loop()
        entry = self._clients.pop(id(loop), None)
        if entry is not None:
            await entry[1].aclose()


class ReplayedOutput(Output):
    """An idempotent handler's recorded answer, given again without running the handler: an
    :class:`~handler_kit.core.outputs.Output` like any other, whose type says it was
    replayed (the audit records say ``replayed``, the metrics count it)."""

    __slots__ = ()

    @classmethod
    def of(cls, output: Output) -> ReplayedOutput:
        """A replayed copy of ``output`` (the store may hold the very object another answer
        holds: it is not changed)."""
        copy = cls.__new__(cls)
        for name in Output.__slots__:
            setattr(copy, name, getattr(output, name))
        return copy


def replayed_handlers(answer: Answer) -> frozenset[str]:
    """Names of the handlers of ``answer`` whose answer was replayed."""
    return frozenset(
        inv.handler.name for inv in answer.invocations if type(inv.output) is ReplayedOutput
    )


class Idempotency:
    """The :attr:`HookApp.wrappers <handler_kit.core.app.HookApp.wrappers>` entry: runs idempotent
    handlers through ``store``; every other handler passes straight through."""

    def __init__(self, store: IdempotencyStore, app_name: str) -> None:
        self.store = store
        self.app_name = app_name

    async def __call__(self, handler: Handler, event: HookEvent, call: Call) -> Output:
        if not handler.idempotent:
            return await call()
        key = (
            f"{self.app_name}:{caller_key(PRINCIPAL.get())}:{idempotency_key(event, handler.name)}"
        )
        output, replayed = await self.store.run_once(
            key, event.hook_event_name, call, lock_seconds=handler.timeout + 2
        )
        # the answer says it was replayed: its invocation carries this output to the
        # observers (audit, metrics), with nothing to look up on the side
        return ReplayedOutput.of(output) if replayed else output


def caller_key(principal: str | None) -> str:
    """The caller's part of an idempotency key: a digest of the principal (fixed length, no
    separator a chosen JWT subject could use to reach another caller's key), ``-`` for none."""
    if principal is None:
        return "-"
    return hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()[:32]
