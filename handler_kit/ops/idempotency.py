"""Idempotent handlers: a repeated call within a TTL gets the recorded answer, and the handler
does not run again.

Turn it on (``@hooks.pre_tool_use(..., idempotent=True)``) for a handler with a side effect
that must not happen twice for one tool call: a gate that opens an approval request, files a
ticket, sends a message. A runtime retries a hook after a timeout or a dropped connection, and
with several workers or replicas the retry can land anywhere; without this the approver gets
two requests. Pure decision functions do not need it (running them again gives the same
answer).

"The same call" is the idempotency key of :func:`handler_kit.ops.audit.trail.idempotency_key`: the
input's ``tool_use_id`` (else ``turn_id``, ``prompt_id``, ``session_id``), the event, the
handler, and a digest of the whole input, so a reused id with a different input runs again;
and it is the same caller: the key also holds the principal the server authenticated
(:data:`PRINCIPAL`), so one caller's recorded answer is never replayed to another.

Stores: :class:`MemoryStore` (one process; the default when a handler is idempotent) and
:class:`RedisStore` (``HANDLER_KIT_IDEMPOTENCY_REDIS_URL``; several workers and replicas).
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
import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from handler_kit.ops.audit.trail import idempotency_key

if TYPE_CHECKING:
    from handler_kit.core.events import HookEvent
    from handler_kit.core.outputs import Output
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


class RedisStore:
    """Recorded answers in Redis, shared by every worker and replica.

    One key per call: ``{"s": "pending", "o": owner}`` while the first call runs (``SET NX``
    with a lock TTL a little over the handler's timeout, so a crashed worker's marker expires),
    then ``{"s": "done", "out": <Claude Code JSON>}`` for ``ttl`` seconds.
    """

    def __init__(
        self,
        url: str,
        ttl: float = DEFAULT_TTL,
        *,
        prefix: str = "handler-kit:idem:",
        poll_min: float = 0.002,
        poll_max: float = 0.05,
    ) -> None:
        self.url = url
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
        marker = json.dumps({"s": "pending", "o": secrets.token_hex(8)})
        delay = self.poll_min
        while True:
            try:
                acquired = await client.set(name, marker, nx=True, px=int(lock_seconds * 1000))
                value = None if acquired else await client.get(name)
            except (RedisError, OSError) as exc:
                raise IdempotencyUnavailable(f"idempotency store unavailable: {exc}") from exc
            if acquired:
                break
            if value is not None:
                state = json.loads(value)
                if state.get("s") == "done":
                    return parse_output(event_name, state["out"]), True
            # running elsewhere (or just released): wait, bounded by the handler deadline
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, self.poll_max)
        try:
            output = await call()
        except BaseException:
            self._release(client, name, marker)
            raise
        record = json.dumps({"s": "done", "out": output.render(event_name)})
        try:
            await client.set(name, record, px=int(self.ttl * 1000))
        except (RedisError, OSError):
            logger.exception("could not record the answer of %s; a retry will run it again", key)
        return output, False

    def _release(self, client: Any, name: str, marker: str) -> None:
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


class Idempotency:
    """The :attr:`HookApp.wrappers <handler_kit.core.app.HookApp.wrappers>` entry: runs idempotent
    handlers through ``store``; every other handler passes straight through."""

    def __init__(self, store: IdempotencyStore, app_name: str) -> None:
        self.store = store
        self.app_name = app_name
        # (id(event), handler) of answers replayed in answers not yet observed.
        self._replayed: OrderedDict[tuple[int, str], None] = OrderedDict()

    async def __call__(self, handler: Handler, event: HookEvent, call: Call) -> Output:
        if not handler.idempotent:
            return await call()
        key = (
            f"{self.app_name}:{caller_key(PRINCIPAL.get())}:{idempotency_key(event, handler.name)}"
        )
        output, replayed = await self.store.run_once(
            key, event.hook_event_name, call, lock_seconds=handler.timeout + 2
        )
        if replayed:
            self._replayed[(id(event), handler.name)] = None
            while len(self._replayed) > 10_000:  # answers never observed (no observer)
                self._replayed.popitem(last=False)
        return output

    def pop_replayed(self, answer: Answer) -> frozenset[str]:
        """Names of the handlers of ``answer`` whose answer was replayed (for the audit)."""
        if not self._replayed:
            return frozenset()
        names = set()
        event_id = id(answer.event)
        for inv in answer.invocations:
            if self._replayed.pop((event_id, inv.handler.name), 0) is None:
                names.add(inv.handler.name)
        return frozenset(names)


def caller_key(principal: str | None) -> str:
    """The caller's part of an idempotency key: a digest of the principal (fixed length, no
    separator a chosen JWT subject could use to reach another caller's key), ``-`` for none."""
    if principal is None:
        return "-"
    return hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()[:32]
