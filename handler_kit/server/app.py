"""One ASGI app per HookApp: ``/healthz``, the webhook, ``/mcp``, and whatever else is added.

The outermost layer is plain ASGI: it answers ``/healthz`` (liveness) and ``/readyz``
(readiness), authenticates every other request once (so ``/hooks``, ``/mcp`` and ``/metrics``
share one auth policy, one 401 shape and one limit on failed attempts per client address,
shared with the inspector's login), sends
the webhook routes straight to :class:`~handler_kit.server.webhook.Webhook` (the hot path), and
hands the rest to a Starlette app that owns the single lifespan (the MCP session manager must
run in it).

The app is built by composition from a :class:`~handler_kit.config.ServerConfig`, in the way
Starlette builds its middleware stack: operations and the inspector each give an
:class:`~handler_kit.config.Extension` (routes, public paths, a lifespan), and the HookApp the
transports answer with is the user's one extended with the operations' observer and wrapper.
Neither the user's HookApp nor the config is changed.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from handler_kit.auth import AuthError, FailedAuthLimiter, StaticTokenAuth
from handler_kit.config import ConfigError, Extension, ServeConfig, ServerConfig
from handler_kit.core.app import HookApp
from handler_kit.server.webhook import (
    HTTPError,
    Receive,
    Scope,
    Send,
    Webhook,
    route_path,
    send_error,
    send_json,
)

if TYPE_CHECKING:
    from handler_kit.ops.operations import Operations
    from handler_kit.shadow import Shadow

logger = logging.getLogger("handler_kit.server")

__all__ = ["HandlerKitASGI", "app_from_env", "create_asgi_app", "describe_routes"]


_HEALTH_METHODS = ("GET", "HEAD")
_READY_BODY = b'{"status":"ready"}'


class HandlerKitASGI:
    """The outer ASGI layer: health, authentication, webhook fast path, then Starlette."""

    def __init__(
        self, hook_app: HookApp, config: ServerConfig, *, freeze_after_startup: bool = False
    ) -> None:
        from starlette.applications import Starlette

        from handler_kit.ops.operations import Operations

        if hook_app.config_errors:
            # a server answering with a misconfigured app would decide by settings nobody meant
            raise ConfigError(
                f"app {hook_app.name!r} is misconfigured: {'; '.join(hook_app.config_errors)}"
            )
        self.hook_app = hook_app
        self.auth = config.authenticator()
        # static tokens are checked without a coroutine per request
        self._check = self.auth.check if type(self.auth) is StaticTokenAuth else None
        # one count of failed authentications per address, shared with the inspector's login
        self.failures = FailedAuthLimiter(
            limit=config.auth_failure_limit,
            window=config.auth_failure_window,
            trusted_proxies=config.trusted_proxies,
        )
        extensions: list[Extension] = []
        if config.inspector:
            from handler_kit.inspector import inspector_extension, with_audit_store

            # the inspector reads the audit trail's SQLite file: add one when there is none
            config = with_audit_store(config, hook_app.name)
            extensions.append(
                inspector_extension(hook_app, config, self.auth, failures=self.failures)
            )
        self.config = config
        operations = Operations.build(hook_app, config.operations, secrets=config.own_secrets())
        self.operations = operations if operations.active else None
        # idempotent answers are recorded per caller: the key takes the principal from here
        self._principal: contextvars.ContextVar[str | None] | None = None
        if operations.idempotency is not None:
            from handler_kit.ops.idempotency import PRINCIPAL

            self._principal = PRINCIPAL
        # what the transports answer with: the user's app, with the operations around it. A
        # server gets Ctrl-C as a signal, never out of a handler: a KeyboardInterrupt a handler
        # raises is its failure, answered by its policy, and the server stays up.
        served = hook_app.extended(interrupt_fails=True)
        if self.operations is not None:
            served = operations.apply(served)
        if self.operations is not None:
            extensions.append(operations.extension)
        extensions.extend(config.extensions)
        # shadow mode: the candidate observes after the operations (the decision id is theirs)
        self.shadow = _shadow(config, operations) if config.shadow is not None else None
        if self.shadow is not None:
            served = served.extended(observers=(self.shadow.observe,))

        self.webhook = Webhook(
            served,
            max_body_bytes=config.max_body_bytes,
            require_event_header=config.require_event_header,
        )
        self.public_paths = frozenset().union(*(ext.public_paths for ext in extensions))
        self._health_body = json.dumps(
            {
                "status": "ok",
                "app": hook_app.name,
                "handlers": [
                    {"name": h.name, "event": h.event, "matcher": h.matcher}
                    for h in hook_app.handlers
                ],
            }
        ).encode()
        routes = [route for ext in extensions for route in ext.routes]
        contexts = [ext.lifespan for ext in extensions if ext.lifespan is not None]
        self.mcp_mount = None
        if config.mcp:
            from handler_kit.server.mcp import create_mcp_mount

            self.mcp_mount = create_mcp_mount(
                served,
                allowed_hosts=list(config.allowed_hosts) or None,
                stateless=not config.mcp_stateful,
                json_response=not config.mcp_sse,
                fast_path=config.mcp_fast_path,
                max_body_bytes=config.max_body_bytes,
            )
            contexts.insert(0, self.mcp_mount.lifespan)

        if self.shadow is not None:
            # last: stopped first at shutdown, before the audit trail writes its last records
            contexts.append(self.shadow.lifespan)
        self._contexts = contexts
        # set once the lifespan is shutting down: /readyz says so
        self.draining = False
        # a server process of its own (handler-kit serve) moves what start-up made out of the
        # collector's reach: a full collection then walks only what requests made since, not
        # every module, model and schema, which is a pause in every request it lands on.
        # Only for a process that is the server: mounted in a host app, or in a test, the
        # freeze would hold the host's objects for the process's lifetime.
        self.freeze_after_startup = freeze_after_startup
        self.mcp_path = config.mcp_path
        # the document is the same for every request: made once, kept per mount point
        self._openapi: dict[str, Any] | None = None
        self._openapi_bodies: dict[str, bytes] = {}

        self.starlette = Starlette(
            routes=routes,
            lifespan=self.lifespan,
            exception_handlers={404: _json_http_error, 405: _json_http_error},
        )

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any = None) -> AsyncIterator[None]:
        """Run what the server needs while it serves: the MCP session manager, and the
        operations' and extensions' own contexts.

        A server started on this app enters it itself. Mounted in another Starlette or
        FastAPI app, only the host's lifespan runs, so the host must enter this one:
        ``Starlette(routes=[Mount("/agent", app=hooks)], lifespan=hooks.lifespan)``.
        ``app`` is the host app Starlette passes; it is not used.
        """
        # made before serving: building it blocks the event loop, which must not happen
        # while hook calls are being answered
        self.openapi()
        async with contextlib.AsyncExitStack() as stack:
            for enter in self._contexts:
                await stack.enter_async_context(enter())
            if self.freeze_after_startup:
                gc.collect()
                gc.freeze()
            self.draining = False
            try:
                yield
            finally:
                # before the contexts close (the audit trail's last records are written then)
                self.draining = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.starlette(scope, receive, send)
            return
        # the path below the mount point: Starlette's Mount keeps the prefix in root_path
        path = route_path(scope) if scope.get("root_path") else scope["path"]
        if path == "/healthz":
            if scope["method"] in _HEALTH_METHODS:
                await send_json(send, 200, self._health_body)
            else:
                await send_error(
                    send,
                    HTTPError(405, "method_not_allowed", "use GET", [], [(b"allow", b"GET")]),
                )
            return
        if path == "/readyz":
            await self._send_readiness(scope, send)
            return
        if self.auth is not None and path not in self.public_paths:
            # one C-level pass over the headers, shared with the webhook through the scope
            headers = scope["handler_kit.headers"] = dict(scope["headers"])
            authorization = headers.get(b"authorization")
            try:
                if self._check is not None:
                    principal = self._check(authorization)
                else:
                    principal = await self.auth.authenticate(authorization)
            except AuthError as exc:
                await send_error(send, self._refusal(scope, exc, authorization))
                return
            scope["handler_kit.principal"] = principal
            if self._principal is not None:
                self._principal.set(principal)
        if path.startswith("/hooks"):
            if self.shadow is None:
                await self.webhook.serve(path, scope, receive, send)
                return
            # the candidate gets the answer once it is sent (POST /hooks/{name}: that handler)
            token = self.shadow.begin(path[7:] or None)
            try:
                await self.webhook.serve(path, scope, receive, send)
            finally:
                self.shadow.flush(token)
            return
        if path == self.mcp_path and self.mcp_mount is not None:
            if not self.mcp_mount.running:
                await send_error(send, _NOT_STARTED)
                return
            # straight to the MCP endpoint: Starlette's router is a large share of a fast tool call
            if self.shadow is None:
                await self.mcp_mount.asgi(scope, receive, send)
                return
            token = self.shadow.begin(None)  # a tool call's handler is the tool's
            try:
                await self.mcp_mount.asgi(scope, receive, send)
            finally:
                self.shadow.flush(token)
            return
        if path == "/openapi.json":
            await self._send_openapi(scope, send)
            return
        await self.starlette(scope, receive, send)

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI 3.1 document of the webhook routes, as ``GET /openapi.json`` serves it
        (without a ``servers`` entry, which depends on where the app is mounted). Made once,
        when the lifespan starts (or on first use without one)."""
        if self._openapi is None:
            from handler_kit.server.openapi import openapi_document

            self._openapi = openapi_document(
                self.hook_app,
                bearer=self.auth is not None,
                require_event_header=self.config.require_event_header,
            )
        return self._openapi

    async def _send_openapi(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in _HEALTH_METHODS:
            await send_error(
                send, HTTPError(405, "method_not_allowed", "use GET", [], [(b"allow", b"GET")])
            )
            return
        root: str = scope.get("root_path", "")
        body = self._openapi_bodies.get(root)
        if body is None:
            document = self.openapi()
            if root:
                # mounted: the routes are under the mount point, as FastAPI says it
                document = {**document, "servers": [{"url": root}]}
            body = json.dumps(document).encode()
            # root_path comes from the host app or the server's options, not from a request,
            # so there are only ever a few; the bound is there all the same
            if len(self._openapi_bodies) < 16:
                self._openapi_bodies[root] = body
        await send_json(send, 200, body)

    async def _send_readiness(self, scope: Scope, send: Send) -> None:
        """``GET /readyz``: whether to send this server traffic now. ``/healthz`` is liveness
        (the process answers: restart it when it does not); ``/readyz`` is readiness: 503
        while the server shuts down, and, with the durable audit trail, while its sinks are
        down (every answer would be its failure policy's), 200 otherwise. No token, like
        ``/healthz``: it says nothing a caller could use."""
        if scope["method"] not in _HEALTH_METHODS:
            await send_error(
                send, HTTPError(405, "method_not_allowed", "use GET", [], [(b"allow", b"GET")])
            )
            return
        reason = "draining" if self.draining else None
        message = "the server is shutting down"
        if reason is None and self.operations is not None and self.operations.not_ready:
            # not the sink's error: this route needs no token, and the error can name a
            # database, a file or worse (the server log has it, from when it went down)
            reason = "audit_unavailable"
            message = "the audit sinks are down; the server log says why"
        if reason is None:
            await send_json(send, 200, _READY_BODY)
            return
        body = json.dumps({"status": "not_ready", "reason": reason, "message": message})
        await send_json(send, 503, body.encode())

    def _refusal(self, scope: Scope, exc: AuthError, authorization: bytes | None) -> HTTPError:
        """The answer to a request that failed authentication: 401, or 429 once its address
        has failed too often. Only this path counts, so a request that authenticates pays
        nothing for the limit."""
        retry = self.failures.failed(self.failures.client(scope), scope["path"])
        if retry is not None:
            return HTTPError(
                429,
                "too_many_requests",
                f"too many failed authentications from this address: retry in {retry} s",
                headers=[(b"retry-after", str(retry).encode())],
            )
        challenge = b'Bearer realm="handler-kit"'
        if authorization:
            challenge += b', error="invalid_token"'
        return HTTPError(401, "unauthorized", str(exc), headers=[(b"www-authenticate", challenge)])


_NOT_STARTED = HTTPError(
    503,
    "not_started",
    "the MCP endpoint is not running: the server's lifespan has not started or has ended "
    "(a HookApp mounted in another app needs the host to run it: Starlette(..., "
    "lifespan=hooks.lifespan), FastAPI(lifespan=hooks.lifespan))",
)


async def _json_http_error(request: Any, exc: Any) -> Any:
    """Starlette's 404/405 as the same JSON error body as every other error here."""
    from starlette.responses import Response

    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    error = HTTPError(exc.status_code, code, str(exc.detail))
    headers = dict(getattr(exc, "headers", None) or {})
    headers["content-type"] = "application/json"
    return Response(error.body(), status_code=exc.status_code, headers=headers)


def _shadow(config: ServerConfig, operations: Operations) -> Shadow:
    """Shadow mode's runner, with the server's metrics and audit trail. The candidate is
    imported here too, so that a bad one stops the server at start-up, as a bad app does, not
    in its own process."""
    from handler_kit.core.loader import LoadError, load_app
    from handler_kit.shadow import Shadow, audit_record

    spec = config.shadow
    assert spec is not None
    try:
        candidate = load_app(spec)
    except LoadError as exc:
        raise ConfigError(f"shadow app (--shadow, HANDLER_KIT_SHADOW): {exc}") from None
    if candidate.config_errors:
        raise ConfigError(
            f"shadow app {candidate.name!r} is misconfigured: {'; '.join(candidate.config_errors)}"
        )
    return Shadow(
        spec,
        name=candidate.name,
        queue_size=config.shadow_queue_size,
        timeout=config.shadow_timeout,
        metrics=operations.metrics,
        record=audit_record(operations.audit) if operations.audit is not None else None,
    )


def create_asgi_app(hook_app: HookApp, config: ServerConfig | None = None) -> HandlerKitASGI:
    """The ASGI app serving ``hook_app``: webhook, MCP, health (config from env by default)."""
    return HandlerKitASGI(hook_app, config if config is not None else ServerConfig.from_env())


def app_from_env() -> HandlerKitASGI:
    """uvicorn factory for ``handler-kit serve``: the app named by HANDLER_KIT_APP, configured
    from the environment. Each worker process calls it."""
    from handler_kit.core.loader import load_app
    from handler_kit.server._workers import end_with_parent

    # a worker must not outlive the supervisor that started it (and would stop it)
    end_with_parent()
    serve = ServeConfig.from_env()
    if not serve.app:
        raise ConfigError("HANDLER_KIT_APP (MODULE:ATTR) is not set")
    hook_app = load_app(serve.app)
    if serve.log_format is not None:
        # one log line per decision: the format is the log configuration's (serve sets it)
        from handler_kit.ops.decisions import DecisionLog

        hook_app = hook_app.extended(observers=(DecisionLog(hook_app),))
    return HandlerKitASGI(hook_app, serve.server, freeze_after_startup=True)


def describe_routes(hook_app: HookApp, config: ServerConfig) -> Sequence[str]:
    """The routes a HookApp serves with ``config``, for start-up messages."""
    routes = ["GET /healthz", "GET /readyz", "POST /hooks"]
    routes.extend(f"POST /hooks/{h.name}" for h in hook_app.handlers)
    routes.append("GET /openapi.json")
    if config.mcp:
        routes.append(f"POST {config.mcp_path} ({len(hook_app.handlers)} tools)")
    if config.inspector:
        routes.append("GET /_inspector")
    if config.operations.metrics:
        routes.append("GET /metrics")
    return routes
