"""The uvicorn server :func:`~handler_kit.testing.running_server` runs: uvicorn's own, stopped
without waiting on its timers.

uvicorn's main loop looks at ``should_exit`` once per tick of a fixed sleep, and its shutdown
sleeps a fixed time before it waits for the open connections; a test suite starting a server
per module or per test pays both at every stop. Here the tick is a wait that :meth:`stop`
ends, and the shutdown waits for the connections and tasks themselves. What a stop does is
uvicorn's: stop accepting, ask every connection to close once its response is sent, drain them
(within ``timeout_graceful_shutdown``), then run the lifespan shutdown.

Two of ``uvicorn.Server``'s methods are replaced, each a copy of uvicorn's with its wait made
prompt; tests/testing/test_running_server.py pins the uvicorn source they were copied from.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket

import uvicorn

logger = logging.getLogger("uvicorn.error")

# how often the drain looks again while a response is in flight: the connection closes itself
# once its response is sent, and says so to nothing a coroutine could wait on
_DRAIN_POLL = 0.005


class PromptServer(uvicorn.Server):
    """``uvicorn.Server``, stopped from another thread by :meth:`stop` without a tick's wait."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()

    def stop(self) -> None:
        """Ask the server to shut down, from any thread, and wake its main loop to do so."""
        self.should_exit = True
        loop = self._loop
        if loop is not None:
            # the loop is closed once the server has ended: nothing is left to wake
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._wake.set)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        # before ``started`` is set: a stop asked for as soon as the server is up finds the loop
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets=sockets)

    async def main_loop(self) -> None:
        # uvicorn's, waiting for the tick or a stop rather than sleeping through the tick
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter += 1
            counter = counter % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)
            should_exit = await self.on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # uvicorn's, waiting for the connections to close rather than a fixed sleep first
        logger.info("Shutting down")
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        try:
            await asyncio.wait_for(self._drain(), timeout=self.config.timeout_graceful_shutdown)
        except TimeoutError:
            logger.error(
                "Cancel %s running task(s), timeout graceful shutdown exceeded",
                len(self.server_state.tasks),
            )
            for task in self.server_state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()

    async def _drain(self) -> None:
        """Wait until every connection has closed and every request task has ended (an idle
        connection closes at once, one answering a request once its response is sent), then
        let uvicorn wait for the rest (its listening servers)."""
        state = self.server_state
        while (state.connections or state.tasks) and not self.force_exit:
            await asyncio.sleep(_DRAIN_POLL)
        await self._wait_tasks_to_complete()
