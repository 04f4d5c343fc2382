"""uvicorn's HTTP protocol with the connection limits it lacks.

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
  (httptools has no limit of its own; uvicorn's ``h11_max_incomplete_event_size`` is h11's).

What stays beyond one server process (many clients, each within these limits; a body sent
slowly) is for the reverse proxy in front of it: see ``docs/production.md``.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, cast

from uvicorn.protocols.http import httptools_impl

__all__ = ["HttpToolsProtocol", "protocol_class"]


class _HeadTooLarge(Exception):
    """Raised from a parser callback: the only way to stop httptools mid-request."""


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
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.timeout_keep_alive = keep_alive  # type: ignore[assignment]
        self.head_timeout = head_timeout
        self.max_head_bytes = max_head_bytes
        self.head_timer: asyncio.TimerHandle | None = None
        self.head_bytes = 0
        # True while the next request's head is awaited: since the connection was made, or
        # since the previous response (when nothing pipelined is queued). Its first byte
        # starts the head timer.
        self.awaiting_head = True

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.awaiting_head and self.head_timer is None:
            # not restarted by later bytes: a line now and then must not keep the head open
            self.head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)
        super().data_received(data)

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value))
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self.awaiting_head = False
        self.head_bytes = 0
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # uvicorn arms its keep-alive timer when no pipelined request is queued: then the
        # connection waits for the next request's head
        if self.timeout_keep_alive_task is not None:
            self.awaiting_head = True

    def send_400_response(self, msg: str) -> None:
        if self.transport.is_closing():  # refused already, with 431
            return
        super().send_400_response(msg)

    def _count_head(self, size: int) -> None:
        self.head_bytes += size
        if self.head_bytes > self.max_head_bytes:
            self._refuse(431, b"the request line and headers are too large")
            raise _HeadTooLarge

    def _head_timed_out(self) -> None:
        self.head_timer = None
        if not self.transport.is_closing():
            self._refuse(408, b"the request line and headers did not arrive in time")

    def _cancel_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _refuse(self, status: int, message: bytes) -> None:
        """Answer ``status`` (no request reached the app) and close the connection."""
        content = [httptools_impl.STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content += [name, b": ", value, b"\r\n"]
        content += [
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: %d\r\n" % len(message),
            b"connection: close\r\n\r\n",
            message,
        ]
        self.transport.write(b"".join(content))
        self.transport.close()


def protocol_class(
    *, keep_alive: float, head_timeout: float, max_head_bytes: int
) -> type[asyncio.Protocol]:
    """What to pass as ``uvicorn.run(http=...)``: uvicorn calls it with each connection's
    arguments, so a partial carries the limits (and pickles into spawned workers)."""
    factory = functools.partial(
        HttpToolsProtocol,
        keep_alive=keep_alive,
        head_timeout=head_timeout,
        max_head_bytes=max_head_bytes,
    )
    return cast("type[asyncio.Protocol]", factory)
