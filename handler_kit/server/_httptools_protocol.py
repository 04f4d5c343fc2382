"""uvicorn's HTTP protocol with the connection limits it lacks.

A subclass of uvicorn's private protocol class, imported only on a uvicorn version it is
tested with (``handler_kit.server._protocols`` checks the version first).

uvicorn arms its keep-alive timer only after a response, and has no timer on a request's head:
a connection that is opened and left idle, or that sends a header line now and then, is held
until the client lets go. Each costs the client nothing and the worker a file descriptor; a few
hundred of them, and every later connection fails. :class:`HttpToolsProtocol` (httptools, the
parser uvicorn picks when it is installed, as ``uvicorn[standard]`` does) adds:

- the keep-alive timer armed when the connection is made: a connection that sends nothing is
  closed after the keep-alive timeout, before its first request as after a response;
- a head timeout: the request line and headers must have arrived within ``head_timeout``
  seconds of their first byte, or the request is answered 408 and the connection closed;
- a head size limit: a request line and headers over ``max_head_bytes`` are answered 431
  (httptools has no limit of its own; uvicorn's ``h11_max_incomplete_event_size`` is h11's),
  measured when the head is whole and at the end of each read that leaves it unfinished;
- a limit per client address on connections not yet answered (``max_unanswered``): past it, a
  new connection from that address is answered 429 and closed at once, before it can take one
  of the worker's ``limit_concurrency`` places. Without it, one address opening a connection
  per place, each sending a byte now and then, has every other client answered 503, which a
  runtime reads as "proceed". A connection counts from its opening to its first answer; after
  that it is a client that got through, bounded by the keep-alive timeout (and the auth
  failure limit, for one that gets through with a wrong token);
- an answer's head and body written together: uvicorn writes each when the app sends it, two
  sends and two TCP segments for an answer whose body follows its head at once (see
  :class:`_Writer`);
- JSON bodies on the answers uvicorn gives itself (400 for a request httptools cannot parse,
  503 past ``limit_concurrency``), like every other refusal of the server: a client reads one
  error shape, ``{"error": ..., "message": ...}``.

What stays beyond one server process (many clients, each within these limits; a body sent
slowly) is for the reverse proxy in front of it: see ``docs/production.md``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import weakref
from collections import Counter
from itertools import chain
from typing import Any

from uvicorn.protocols.http import flow_control, httptools_impl

__all__ = ["HttpToolsProtocol"]


class _HeadTooLarge(Exception):
    """Raised from a parser callback: the only way to stop httptools mid-request."""


_Base = httptools_impl.HttpToolsProtocol
_data_received = _Base.data_received
_on_headers_complete = _Base.on_headers_complete
_on_response_complete = _Base.on_response_complete
_start_asgi_task = _Base._start_asgi_task
_UVICORN_BUSY = flow_control.service_unavailable


class HttpToolsProtocol(httptools_impl.HttpToolsProtocol):
    """uvicorn's httptools protocol with an idle timeout from the start, a head timeout and a
    head size limit (see the module docstring)."""

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        keep_alive: float,
        head_timeout: float,
        max_head_bytes: int,
        max_unanswered: int,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.timeout_keep_alive = keep_alive  # type: ignore[assignment]
        self.head_timeout = head_timeout
        self.max_head_bytes = max_head_bytes
        self.head_timer: asyncio.TimerHandle | None = None
        # True while the next request's head is awaited: since the connection was made, or
        # since the previous response (when nothing pipelined is queued). Its first byte
        # starts the head timer.
        self.awaiting_head = True
        self.max_unanswered = max_unanswered
        self.unanswered = _unanswered_counts(server_state)
        # the client address this connection counts against until its first answer; None
        # once answered (or for a peer without an address, a Unix socket)
        self.counted_as: str | None = None
        self.writer: _Writer | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.writer = _Writer(transport, self.loop)
        address = _address_key(self.client[0]) if self.client else None
        if address is not None:
            if self.unanswered[address] >= self.max_unanswered:
                # not one of the worker's places: the others' count stays as it was
                self.connections.discard(self)
                self._refuse(429, _TOO_MANY)
                return
            self.unanswered[address] += 1
            self.counted_as = address
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        self._uncount()
        super().connection_lost(exc)

    # The parser calls these once per request: the base methods are called as plain functions
    # (no super() object each time). The head's size is taken once it is whole, and at the end
    # of a read that leaves one unfinished, not per header: a head over the limit is refused
    # at most one read past it.

    def data_received(self, data: bytes) -> None:
        _data_received(self, data)
        scope = self.scope
        if scope is None or "method" in scope:
            return  # no head begun, or none left unfinished by this read
        if self.transport.is_closing():
            return
        if self._head_over_limit():
            self._refuse(431, _HEAD_TOO_LARGE)
        elif self.awaiting_head and self.head_timer is None:
            # Armed only when the head did not arrive whole in its first read (almost every
            # request's does: then no timer is made and cancelled per request), counted from
            # that read; not restarted by later bytes: a line now and then must not keep the
            # head open.
            self.head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def on_headers_complete(self) -> None:
        if self._head_over_limit():
            self._refuse(431, _HEAD_TOO_LARGE)
            raise _HeadTooLarge
        self.awaiting_head = False
        if self.head_timer is not None:
            self._cancel_head_timer()
        _on_headers_complete(self)

    def on_response_complete(self) -> None:
        if self.counted_as is not None:
            self._uncount()
        _on_response_complete(self)
        # uvicorn arms its keep-alive timer when no pipelined request is queued: then the
        # connection waits for the next request's head
        if self.timeout_keep_alive_task is not None:
            self.awaiting_head = True

    def send_400_response(self, msg: str) -> None:
        if self.transport.is_closing():  # refused already, with 431
            return
        self._refuse(400, msg.encode())

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if app is _UVICORN_BUSY:
            app = _service_unavailable
        cycle.transport = self.writer
        _start_asgi_task(self, cycle, app)

    def _head_over_limit(self) -> bool:
        """Whether the request line and headers so far (the URL, each header's name and
        value) are over ``max_head_bytes``."""
        return len(self.url) + len(b"".join(chain.from_iterable(self.headers))) > (
            self.max_head_bytes
        )

    def _head_timed_out(self) -> None:
        self.head_timer = None
        if not self.transport.is_closing():
            self._refuse(408, b"the request line and headers did not arrive in time")

    def _uncount(self) -> None:
        address = self.counted_as
        if address is not None:
            self.counted_as = None
            left = self.unanswered[address] - 1
            if left > 0:
                self.unanswered[address] = left
            else:  # no entry kept per address ever seen
                del self.unanswered[address]

    def _cancel_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _refuse(self, status: int, message: bytes) -> None:
        """Answer ``status`` (no request reached the app) and close the connection."""
        payload = _error_body(status, message.decode(errors="replace"))
        content = [httptools_impl.STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content += [name, b": ", value, b"\r\n"]
        content += [
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(payload),
            b"connection: close\r\n\r\n",
            payload,
        ]
        self.transport.write(b"".join(content))
        self.transport.close()


class _Writer:
    """What a request's cycle writes to: the connection's transport, with each write held
    until the next one or the end of the event loop's pass, whichever comes first.

    uvicorn writes a response's head when the app starts it and its body when the app sends
    it, and the transport sends each at once: two sends and two TCP segments per answer, where
    the answer is one small JSON body sent right after its head. Held, the head leaves with the
    body in one send; a head whose body comes later (a streamed answer) or a ``100 Continue``
    leaves at the end of the pass, before the loop waits for the network again.
    """

    __slots__ = ("held", "loop", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self.loop = loop
        self.held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self.held
        if held is None:
            self.held = data
            self.loop.call_soon(self.flush)
        else:
            self.held = None
            self.transport.write(held + data)

    def flush(self) -> None:
        held = self.held
        # a connection lost or closed since takes nothing more, as uvicorn writes nothing to one
        if held is not None:
            self.held = None
            if not self.transport.is_closing():
                self.transport.write(held)

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def close(self) -> None:
        self.flush()
        self.transport.close()


_HEAD_TOO_LARGE = b"the request line and headers are too large"
_TOO_MANY = b"too many connections from this address are waiting for an answer; retry shortly"

# Per worker (a server state is one worker's), so every connection of a worker sees the same
# counts; weak, so a server that is gone takes its counts with it.
_COUNTS: weakref.WeakKeyDictionary[Any, Counter[str]] = weakref.WeakKeyDictionary()


def _unanswered_counts(server_state: Any) -> Counter[str]:
    counts = _COUNTS.get(server_state)
    if counts is None:
        counts = _COUNTS[server_state] = Counter()
    return counts


def _address_key(host: str) -> str:
    """What one client is, for the per-address limit: its IPv4 address, or its IPv6 /64 (one
    host is commonly given a whole /64, so single IPv6 addresses would cost it nothing)."""
    if ":" not in host:
        return host
    try:
        address = ipaddress.IPv6Address(host.split("%", 1)[0])
    except ValueError:
        return host
    if address.ipv4_mapped is not None:  # an IPv4 client of a dual-stack socket
        return str(address.ipv4_mapped)
    return str(ipaddress.IPv6Network((address, 64), strict=False).network_address) + "/64"


_ERRORS = {
    400: "bad_request",
    408: "request_timeout",
    429: "too_many_connections",
    431: "request_header_fields_too_large",
    503: "service_unavailable",
}


def _error_body(status: int, message: str) -> bytes:
    return json.dumps({"error": _ERRORS[status], "message": message}).encode()


_BUSY = _error_body(503, "the server has as many connections as it takes; retry shortly")


async def _service_unavailable(scope: Any, receive: Any, send: Any) -> None:
    """uvicorn's answer past ``limit_concurrency``, with a JSON body."""
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(_BUSY)),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _BUSY})
