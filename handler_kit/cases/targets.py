"""What cases are run against, each answering a case with an :class:`Answer`:

- :class:`ClientTarget`: a HookApp in process (:meth:`ClientTarget.for_app`, through its real
  ASGI stack, as :class:`~handler_kit.testing.HookClient` runs it) or a server at a URL
  (:meth:`ClientTarget.for_url`), the answer read in Claude Code's output shape;
- :class:`DocumentTarget`: a Runbear hooks document run by the reference dispatcher, the answer
  read as Runbear reads it (its merge, its thread rules; each case on a fresh thread).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import httpx

from handler_kit.cases.comparison import Answer
from handler_kit.cases.model import Case
from handler_kit.core.outputs import OutputError

if TYPE_CHECKING:
    from handler_kit.core.app import HookApp
    from handler_kit.dispatcher import Dispatcher
    from handler_kit.testing.client import HookClient


class Target(Protocol):
    """Something that answers cases."""

    def answer(self, case: Case) -> Answer: ...

    def close(self) -> None: ...


class ClientTarget:
    """A HookApp in process, or a server over HTTP(S), through a :class:`HookClient`."""

    def __init__(self, client: HookClient, *, in_process: bool) -> None:
        self.client = client
        self.in_process = in_process

    @classmethod
    def for_app(cls, hook_app: HookApp) -> ClientTarget:
        from handler_kit.auth import generate_token
        from handler_kit.config import ServerConfig
        from handler_kit.testing.client import HookClient

        # Cases are answered through the webhook alone: without the MCP endpoint the run never
        # imports the MCP SDK or starts its session manager, the largest part of a short run's
        # start-up. Every answer is the same: MCP and the webhook answer through the same app.
        config = ServerConfig(tokens=[generate_token()], mcp=False)
        # a handler's exception is raised here, so a crash is reported as one instead of
        # passing for the answer the failure policy gives (a fail-closed gate's deny)
        client = HookClient.for_app(hook_app, config, raise_handler_exceptions=True)
        return cls(client, in_process=True)

    @classmethod
    def for_url(
        cls, url: str, *, token: str | None = None, ca_file: str | Path | None = None
    ) -> ClientTarget:
        from handler_kit.testing.client import HookClient

        return cls(HookClient.for_url(url, token=token, ca_file=ca_file), in_process=False)

    def answer(self, case: Case) -> Answer:
        try:
            result = self.client.send(case.input, handler=case.handler)
        except httpx.HTTPError as exc:
            return Answer(error=f"{type(exc).__name__}: {_one_line(exc)}")
        except OutputError as exc:
            return Answer(error=f"an answer its event cannot carry: {_one_line(exc)}")
        except Exception as exc:
            if not self.in_process:
                raise
            return Answer(error=f"the handler raised {type(exc).__name__}: {_one_line(exc)}")
        if not 200 <= result.status_code < 300:
            body = result.body[:300].decode("utf-8", "replace")
            return Answer(error=f"HTTP {result.status_code}: {_one_line(body)}")
        if result.body.strip() and result.output is None:
            body = result.body[:300].decode("utf-8", "replace")
            return Answer(error=f"an answer that is not a JSON object: {_one_line(body)}")
        output = result.output
        if output is None:
            return Answer()
        return Answer(
            decision=output.decision,
            reason=output.reason,
            context=output.context,
            updated_input=output.updated_input,
            system_message=output.system_message,
        )

    def close(self) -> None:
        self.client.close()


class DocumentTarget:
    """A hooks document, run by the reference dispatcher on one event loop for all cases (so
    connections are reused), each case on a thread of its own: cases are independent."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self._loop = asyncio.new_event_loop()

    def answer(self, case: Case) -> Answer:
        from handler_kit.dispatcher import Thread

        if case.handler is not None:
            return Answer(error="'handler' cannot be used with a document: the document routes")
        try:
            outcome = self._loop.run_until_complete(
                self.dispatcher.dispatch(case.input, Thread(thread_id=case.name))
            )
        except ValueError as exc:  # not one of Runbear's events
            return Answer(error=_one_line(exc))
        failed = [r for r in outcome.handlers if r.status in ("failed", "timeout")]
        if failed:
            return Answer(
                error="; ".join(
                    f"handler {r.index} ({r.type}) {r.status}: {_one_line(r.error or '')}"
                    for r in failed
                )
            )
        merged = outcome.merged
        messages = merged.system_messages if merged is not None else []
        return Answer(
            decision=outcome.decision,
            reason=outcome.reason,
            context="\n\n".join(outcome.additional_context) or None,
            updated_input=outcome.updated_input,
            system_message="\n".join(messages) or None,
        )

    def close(self) -> None:
        try:
            self._loop.run_until_complete(self.dispatcher.aclose())
        finally:
            self._loop.close()


def _one_line(value: object) -> str:
    return " ".join(str(value).split())
