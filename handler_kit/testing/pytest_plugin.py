"""pytest fixtures for contract tests: your HookApp on a real port, the reference runtime in
front of it.

Installed with handler-kit (a ``pytest11`` entry point), so the fixtures are simply there::

    from my_hooks import hooks

    def test_refund_over_500_is_denied(hook_dispatcher):
        dispatcher = hook_dispatcher(hooks)          # real HTTPS server + generated document
        outcome = dispatcher.dispatch_sync(
            {"hook_event_name": "PreToolUse", "tool_name": "issue_refund",
             "tool_input": {"amount": 640}}
        )
        assert outcome.decision == "deny"

- ``hook_server(app, tls=True, tokens=None)`` starts ``app`` with real uvicorn on a free
  127.0.0.1 port (HTTPS with a throw-away CA by default) and returns the running server
  (``.url``, ``.token``, ``.ca_file``, ``.mcp_url``); it is stopped when the test ends.
- ``hook_dispatcher(app, via="http", tls=True, document=None)`` starts ``app`` the same way and
  returns a :class:`~handler_kit.dispatcher.Dispatcher` wired to it: the hooks document
  ``handler-kit document`` generates for the app (``via="http"``: one ``http`` handler per
  route; ``via="mcp"``: one ``mcp_tool`` handler per tool, the server registered under the
  app's name; ``via="mixed"``: both, alternately), ``allow_private`` on (the server is on
  127.0.0.1) and the CA trusted. The dispatcher's ``.server`` is the running server and
  ``.document`` the validated document.

pytest loads this module in every run of every project that has handler-kit installed, so it
imports nothing heavy at module level: the server stack is imported when a fixture is used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

import pytest

if TYPE_CHECKING:
    from handler_kit.core.app import HookApp
    from handler_kit.dispatcher import Dispatcher
    from handler_kit.testing.client import RunningServer

Via = Literal["http", "mcp", "mixed"]


def mcp_server_name(app_name: str) -> str:
    """The Custom MCP server name a generated document uses for an app."""
    cleaned = "".join(c if c.isalnum() or c in "-_" else "-" for c in app_name).strip("-")
    return cleaned or "hooks"


def hooks_document(
    hook_app: HookApp,
    base_url: str,
    *,
    token: str | None = None,
    via: Via = "http",
    server_name: str | None = None,
) -> dict[str, Any]:
    """The Runbear hooks document for ``hook_app`` served at ``base_url``, as
    ``handler-kit document`` generates it (:func:`handler_kit.runbear.generate.runbear_document`).

    ``via="http"``: one ``http`` handler per route, with the bearer token; ``via="mcp"``: one
    ``mcp_tool`` handler per tool on the Custom MCP server ``server_name``; ``via="mixed"``:
    alternately one and the other in document order (first http), so one document exercises
    both transports and their merge.
    """
    from handler_kit.runbear.generate import runbear_document

    server = server_name or mcp_server_name(hook_app.name)
    authorization = f"Bearer {token}" if token else "Bearer "

    def generate(transport: Literal["http", "mcp"]) -> dict[str, Any]:
        return runbear_document(
            hook_app,
            transport=transport,
            base_url=base_url,
            mcp_server=server,
            authorization=authorization,
        ).document

    if via != "mixed":
        return generate(via)
    over_http, over_mcp = generate("http"), generate("mcp")
    mixed: dict[str, list[dict[str, Any]]] = {}
    position = 0  # across the whole document, so one handler per event still mixes
    for event, groups in over_http["hooks"].items():
        for i, group in enumerate(groups):
            mixed.setdefault(event, []).append(
                group if position % 2 == 0 else over_mcp["hooks"][event][i]
            )
            position += 1
    return {"hooks": mixed}


@pytest.fixture
def hook_server() -> Iterator[Callable[..., RunningServer]]:
    """Factory fixture: ``hook_server(app, tls=True, tokens=None)`` -> a running server."""
    with contextlib.ExitStack() as stack:

        def start(
            hook_app: HookApp, *, tls: bool = True, tokens: list[str] | None = None
        ) -> RunningServer:
            from handler_kit.testing.client import running_server

            return stack.enter_context(running_server(hook_app, tls=tls, tokens=tokens))

        yield start


@pytest.fixture
def hook_dispatcher(
    hook_server: Callable[..., RunningServer],
) -> Iterator[Callable[..., Dispatcher]]:
    """Factory fixture: ``hook_dispatcher(app, via="http", tls=True, document=None)`` -> a
    :class:`~handler_kit.dispatcher.Dispatcher` in front of ``app`` on a real port."""

    def make(
        hook_app: HookApp,
        *,
        via: Via = "http",
        tls: bool = True,
        document: dict[str, Any] | None = None,
    ) -> Dispatcher:
        from handler_kit.dispatcher import Dispatcher

        server = hook_server(hook_app, tls=tls)
        name = mcp_server_name(hook_app.name)
        if document is None:
            document = hooks_document(hook_app, server.url, token=server.token, via=via)
        dispatcher = Dispatcher(
            document,
            mcp_servers={name: server.mcp_url},
            mcp_headers={name: {"Authorization": f"Bearer {server.token}"}},
            allow_private=True,
            ca_file=server.ca_file,
        )
        dispatcher.server = server
        return dispatcher

    yield make
