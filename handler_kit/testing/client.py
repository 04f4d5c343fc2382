"""Testing helpers for users' own tests: a typed client and a real server on a free port.

- :class:`HookClient` sends typed events to a HookApp in-process (through its real ASGI app,
  auth and all) or to a URL over real HTTP(S), and returns :class:`HookResult` objects that
  read the answer the way a runtime would. In process, an exception a handler raises is raised
  in the test, as Starlette's ``TestClient`` raises the app's, rather than read as a 500.
- :func:`running_server` serves a HookApp with real uvicorn on 127.0.0.1 (optionally HTTPS with
  a throw-away CA) in a background thread, for tests that must cross a real socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import difflib
import json
import socket
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from starlette.testclient import TestClient

from handler_kit.auth import generate_token
from handler_kit.config import ServerConfig
from handler_kit.core._coroutines import stops_the_run
from handler_kit.core.app import HookApp
from handler_kit.core.events import HookEvent
from handler_kit.core.names import EVENT_NAMES
from handler_kit.core.outputs import Output, parse_output
from handler_kit.core.vocabulary import Handler
from handler_kit.server.app import HandlerKitASGI, create_asgi_app


@dataclass
class HookResult:
    """One answer, as the runtime reads it."""

    status_code: int
    body: bytes
    event_name: str
    json: Any = None
    output: Output | None = None

    @property
    def decision(self) -> str | None:
        """``allow``/``deny``/``ask``/``defer``/``block`` or None (no opinion)."""
        return self.output.decision if self.output else None

    @property
    def reason(self) -> str | None:
        return self.output.reason if self.output else None

    @property
    def context(self) -> str | None:
        return self.output.context if self.output else None

    @property
    def updated_input(self) -> dict[str, Any] | None:
        return self.output.updated_input if self.output else None

    @property
    def no_opinion(self) -> bool:
        return self.status_code == 200 and (self.output is None or self.output.is_empty)


def _event_dict(event: HookEvent | dict[str, Any]) -> dict[str, Any]:
    if isinstance(event, HookEvent):
        return event.model_dump(mode="json", exclude_none=True)
    data = dict(event)
    name = data.get("hook_event_name")
    if name is not None and name not in EVENT_NAMES:
        # A server answers an event it has no handler for with {}: a misspelt name would
        # read as "no opinion" and the test would pass without running a handler.
        close = difflib.get_close_matches(str(name), EVENT_NAMES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"unknown hook_event_name {name!r}{hint}; the events are: {', '.join(EVENT_NAMES)}"
        )
    return data


# The exceptions handlers raised while the in-process client's current request was answered.
# A context variable, so concurrent requests (a client shared by threads) keep their own.
_raised: contextvars.ContextVar[list[Exception] | None] = contextvars.ContextVar(
    "handler_kit_testing_raised", default=None
)


async def _record_raised(
    handler: Handler, event: HookEvent, call: Callable[[], Awaitable[Output]]
) -> Output:
    """A handler wrapper that notes what the handler raised and lets it go on to the failure
    policy, so the server answers exactly what it answers a real client."""
    try:
        return await call()
    except BaseException as exc:
        raised = _raised.get()
        if raised is not None:
            if isinstance(exc, Exception):
                raised.append(exc)
            elif not stops_the_run(exc):  # a failure to the core (SystemExit...), no deadline's
                # raised in the test as an Exception: a SystemExit out of the client's portal
                # would stop the portal itself
                failed = RuntimeError(f"handler {handler.name!r} raised {type(exc).__name__}")
                failed.__cause__ = exc
                raised.append(failed)
        raise


class _RaiseHandlerExceptions:
    """ASGI middleware of the in-process client: once the response is sent, re-raise the first
    exception a handler raised while answering it. Starlette's ``TestClient`` then raises it in
    the test, as it raises any exception that escapes the app."""

    def __init__(self, app: HandlerKitASGI) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raised: list[Exception] = []
        token = _raised.set(raised)
        try:
            await self.app(scope, receive, send)
        finally:
            _raised.reset(token)
        if raised:
            raise raised[0]


class HookClient:
    """Send hook events to a HookApp (in-process) or a URL (real HTTP); sync API.

    >>> with HookClient.for_app(hooks) as client:
    ...     result = client.send({"hook_event_name": "PreToolUse", "tool_name": "x"})
    """

    def __init__(self, http: httpx.Client | TestClient, *, closer: Any = None) -> None:
        self._http = http
        self._closer = closer

    @classmethod
    def for_app(
        cls,
        hook_app: HookApp,
        config: ServerConfig | None = None,
        *,
        raise_handler_exceptions: bool = True,
    ) -> HookClient:
        """In-process, through the app's real ASGI stack (auth with a generated token).

        An exception a handler raises (an ``OutputError`` for an answer its event cannot
        carry included) is raised by :meth:`send`, whatever the handler's failure policy, so a
        crash never passes for an answer. The server's answer is unchanged; to assert on it
        (the 500, or a fail-closed gate's deny), pass ``raise_handler_exceptions=False``.
        """
        from starlette.testclient import TestClient

        token = generate_token()
        if config is None:
            config = ServerConfig(tokens=[token])
        else:
            token = config.tokens[0] if config.tokens else token
        asgi: Any
        if raise_handler_exceptions:
            recording = hook_app.extended(wrappers=[_record_raised])
            asgi = _RaiseHandlerExceptions(create_asgi_app(recording, config))
        else:
            asgi = create_asgi_app(hook_app, config)
        test_client = TestClient(asgi, base_url="http://127.0.0.1")
        test_client.__enter__()  # runs the lifespan (MCP session manager, audit sinks)
        test_client.headers["Authorization"] = f"Bearer {token}"
        return cls(test_client, closer=test_client)

    @classmethod
    def for_url(
        cls,
        url: str,
        *,
        token: str | None = None,
        ca_file: str | Path | None = None,
        timeout: float = 15.0,
    ) -> HookClient:
        """Over real HTTP(S) to a running server at ``url`` (its base, e.g. https://host).

        A handler's exception stays in the server's process: :meth:`send` returns the answer
        the server sent for it (a 500, or a fail-closed gate's safe decision).
        """
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        verify: Any = _verify(ca_file)
        return cls(httpx.Client(base_url=url, headers=headers, verify=verify, timeout=timeout))

    def send(
        self,
        event: HookEvent | dict[str, Any],
        *,
        handler: str | None = None,
        event_header: bool = True,
        headers: dict[str, str] | None = None,
    ) -> HookResult:
        """POST ``event`` to ``/hooks`` (or ``/hooks/{handler}``) and read the answer.

        Raises ``ValueError`` for a ``hook_event_name`` that is not an event (a server would
        answer it ``{}``: no handler). In process, raises what a handler raised (see
        :meth:`for_app`).
        """
        data = _event_dict(event)
        name = str(data.get("hook_event_name", ""))
        request_headers = {"Content-Type": "application/json", **(headers or {})}
        if event_header and name:
            request_headers["X-Runbear-Hook-Event"] = name
        path = f"/hooks/{handler}" if handler else "/hooks"
        response = self._http.post(path, content=json.dumps(data), headers=request_headers)
        return read_result(response.status_code, response.content, name)

    def close(self) -> None:
        if self._closer is not None:
            self._closer.__exit__(None, None, None)
        else:
            self._http.close()

    def __enter__(self) -> HookClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_result(status_code: int, body: bytes, event_name: str) -> HookResult:
    """Read a webhook response the way a runtime does (2xx + object = output)."""
    result = HookResult(status_code=status_code, body=body, event_name=event_name)
    if not body.strip():
        return result
    try:
        result.json = json.loads(body)
    except ValueError:
        return result
    if 200 <= status_code < 300 and isinstance(result.json, dict):
        result.output = parse_output(event_name, result.json)
    return result


@dataclass
class RunningServer:
    """A HookApp served by real uvicorn on 127.0.0.1."""

    url: str
    token: str
    ca_file: str | None
    hook_app: HookApp
    port: int
    # the ASGI app being served: its ``operations`` are the audit trail, metrics... it runs
    asgi: HandlerKitASGI | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def mcp_url(self) -> str:
        """The MCP endpoint's URL (``/mcp`` unless the config moved it)."""
        path = self.asgi.mcp_path if self.asgi is not None else "/mcp"
        return f"{self.url}{path}"

    def client(self) -> HookClient:
        """A :class:`HookClient` talking to this server over real HTTP(S)."""
        return HookClient.for_url(self.url, token=self.token, ca_file=self.ca_file)

    def http(self, **options: Any) -> httpx.Client:
        """A plain httpx client with the token and the CA set."""
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.token}"},
            verify=_verify(self.ca_file),
            **options,
        )


def _verify(ca_file: str | Path | None) -> Any:
    """httpx's ``verify`` for a CA file (a path string is deprecated since httpx 0.28)."""
    if not ca_file:
        return True
    import ssl

    return ssl.create_default_context(cafile=str(ca_file))


@contextlib.contextmanager
def running_server(
    hook_app: HookApp,
    *,
    tls: bool = False,
    tokens: list[str] | None = None,
    config: ServerConfig | None = None,
    host: str = "127.0.0.1",
) -> Iterator[RunningServer]:
    """Serve ``hook_app`` on a free port of ``host`` until the block ends.

    With ``tls=True`` a throw-away CA and a certificate for localhost/127.0.0.1 are made;
    ``ca_file`` of the yielded object is the CA to trust.
    """
    import uvicorn

    from handler_kit.testing._server import PromptServer

    if config is None:
        config = ServerConfig(tokens=tokens or [generate_token()])
    elif tokens:
        config = dataclasses.replace(config, tokens=tokens)
    token = config.tokens[0] if config.tokens else ""
    asgi = create_asgi_app(hook_app, config)
    with contextlib.ExitStack() as stack:
        ssl: dict[str, str] = {}
        ca_file = None
        if tls:
            from handler_kit.server.dev_tls import ensure_dev_certificate

            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            cert = ensure_dev_certificate(folder)
            ssl = {"ssl_certfile": str(cert.cert_file), "ssl_keyfile": str(cert.key_file)}
            ca_file = str(cert.ca_file)
        # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on sockets whose proto says TCP,
        # and without it every keep-alive response waits for the delayed-ACK timer (Nagle)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        port = sock.getsockname()[1]
        # stopped without waiting on uvicorn's timers, drained and shut down as uvicorn does
        server = PromptServer(
            uvicorn.Config(asgi, log_level="warning", lifespan="on", **ssl)  # type: ignore[arg-type]
        )
        server.config.setup_event_loop = lambda: None  # type: ignore[method-assign]
        thread = threading.Thread(
            target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True
        )
        thread.start()
        try:
            for _ in range(500):
                if server.started:
                    break
                if not thread.is_alive():
                    raise RuntimeError("the test server failed to start; see the log above")
                threading.Event().wait(0.01)
            else:
                raise RuntimeError("the test server did not start within 5 s")
            scheme = "https" if tls else "http"
            yield RunningServer(
                url=f"{scheme}://{host}:{port}",
                token=token,
                ca_file=ca_file,
                hook_app=hook_app,
                port=port,
                asgi=asgi,
            )
        finally:
            server.stop()
            thread.join(timeout=10)
            sock.close()
