"""One ASGI app per HookApp: ``/healthz``, the webhook, ``/mcp``, and whatever else is added.

The outermost layer is plain ASGI: it answers ``/healthz``, authenticates every other request
once (so ``/hooks``, ``/mcp`` and ``/metrics`` share one auth policy and one 401 shape), sends
the webhook routes straight to :class:`~handler_kit.http.Webhook` (the hot path), and hands the
rest to a Starlette app that owns the single lifespan (the MCP session manager must run in it).

Configuration comes from :class:`ServerConfig`, which can be read from ``HANDLER_KIT_*``
environment variables: that is how ``handler-kit serve --workers N`` gives every worker
process the same configuration.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from handler_kit.app import HookApp
from handler_kit.auth import AuthError, BearerAuth, JWTAuth, StaticTokenAuth
from handler_kit.http import HTTPError, Receive, Scope, Send, Webhook, send_error, send_json

logger = logging.getLogger("handler_kit.server")

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
LifespanContext = Callable[[], contextlib.AbstractAsyncContextManager[Any]]


class ConfigError(ValueError):
    """The server cannot start with this configuration."""


@dataclass
class ServerConfig:
    """How a HookApp is served. Every field has a ``HANDLER_KIT_*`` environment variable."""

    tokens: list[str] = field(default_factory=list)
    jwt: JWTAuth | None = None
    auth: BearerAuth | None = None
    insecure_no_auth: bool = False
    require_event_header: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    mcp: bool = True
    mcp_stateless: bool = True
    mcp_json_response: bool = True
    allowed_hosts: list[str] | None = None
    # Extensions (metrics, inspector, audit): extra Starlette routes, paths that need no
    # token (the inspector's login page), contexts entered in the lifespan.
    routes: list[Any] = field(default_factory=list)
    public_paths: set[str] = field(default_factory=set)
    lifespan_contexts: list[LifespanContext] = field(default_factory=list)
    # Operations (issue 6): audit trail, /metrics, tracing, idempotency store; an
    # handler_kit.operations.OperationsConfig, None for none. from_env reads HANDLER_KIT_AUDIT...
    operations: Any = None
    # Inspector (issue 8): serve the /_inspector page (handler_kit.inspector); off by default.
    inspector: bool = False

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> ServerConfig:
        """Read the configuration from ``HANDLER_KIT_*`` variables; keyword overrides win."""
        from handler_kit.operations import OperationsConfig

        env = os.environ if environ is None else environ
        config = cls(
            tokens=_split(env.get("HANDLER_KIT_TOKENS", "")),
            jwt=_jwt_from_env(env),
            insecure_no_auth=_flag(env.get("HANDLER_KIT_INSECURE_NO_AUTH")),
            require_event_header=_flag(env.get("HANDLER_KIT_REQUIRE_EVENT_HEADER")),
            max_body_bytes=int(env.get("HANDLER_KIT_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)),
            mcp=not _flag(env.get("HANDLER_KIT_NO_MCP")),
            mcp_stateless=not _flag(env.get("HANDLER_KIT_MCP_STATEFUL")),
            mcp_json_response=not _flag(env.get("HANDLER_KIT_MCP_SSE")),
            allowed_hosts=_split(env.get("HANDLER_KIT_ALLOWED_HOSTS", "")) or None,
            operations=OperationsConfig.from_env(env),  # issue 6: HANDLER_KIT_AUDIT...
            inspector=_flag(env.get("HANDLER_KIT_INSPECTOR")),  # issue 8
        )
        for key, value in overrides.items():
            setattr(config, key, value)
        return config

    def authenticator(self) -> BearerAuth | None:
        """The configured authenticator; refuses to serve with none unless told to."""
        if self.auth is not None:
            return self.auth
        if self.jwt is not None:
            return self.jwt
        if self.tokens:
            return StaticTokenAuth(self.tokens)
        if self.insecure_no_auth:
            return None
        raise ConfigError(
            "no authentication configured: set HANDLER_KIT_TOKENS (comma-separated bearer "
            "tokens) or HANDLER_KIT_JWT_* variables; for local development only, "
            "HANDLER_KIT_INSECURE_NO_AUTH=1"
        )


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _jwt_from_env(env: Any) -> JWTAuth | None:
    """JWT settings: HANDLER_KIT_JWT_ALGORITHMS plus one of HANDLER_KIT_JWT_SECRET,
    HANDLER_KIT_JWT_PUBLIC_KEY_FILE or HANDLER_KIT_JWT_JWKS_URL; optional
    HANDLER_KIT_JWT_AUDIENCE and HANDLER_KIT_JWT_ISSUER."""
    secret = env.get("HANDLER_KIT_JWT_SECRET")
    key_file = env.get("HANDLER_KIT_JWT_PUBLIC_KEY_FILE")
    jwks_url = env.get("HANDLER_KIT_JWT_JWKS_URL")
    if not (secret or key_file or jwks_url):
        return None
    algorithms = _split(env.get("HANDLER_KIT_JWT_ALGORITHMS", ""))
    if not algorithms:
        raise ConfigError("HANDLER_KIT_JWT_ALGORITHMS is required with JWT auth (e.g. RS256)")
    key: str | None = secret
    if key_file:
        with open(key_file, encoding="utf-8") as handle:
            key = handle.read()
    return JWTAuth(
        algorithms=algorithms,
        key=key,
        jwks_url=jwks_url or None,
        audience=env.get("HANDLER_KIT_JWT_AUDIENCE") or None,
        issuer=env.get("HANDLER_KIT_JWT_ISSUER") or None,
    )


_HEALTH_METHODS = ("GET", "HEAD")


class HandlerKitASGI:
    """The outer ASGI layer: health, authentication, webhook fast path, then Starlette."""

    def __init__(self, hook_app: HookApp, config: ServerConfig) -> None:
        from starlette.applications import Starlette

        self.hook_app = hook_app
        self.config = config
        self.auth = config.authenticator()
        self.webhook = Webhook(
            hook_app,
            max_body_bytes=config.max_body_bytes,
            require_event_header=config.require_event_header,
        )
        self.public_paths = frozenset(config.public_paths)
        import json

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
        routes = list(config.routes)
        contexts = list(config.lifespan_contexts)
        # -- inspector (issue 8): the opt-in /_inspector page. Before the operations: it adds
        # a SQLite audit sink to read when the configured trail has none.
        if config.inspector:
            from handler_kit.inspector import create_inspector

            inspector = create_inspector(hook_app, config, self.auth)
            routes.extend(inspector.routes)
            contexts.append(inspector.lifespan)
            self.public_paths = self.public_paths | inspector.public_paths
        # -- operations (issue 6): audit observer, /metrics, tracing, idempotency wrapper,
        # and the lifespan context that flushes the audit trail on shutdown.
        from handler_kit.operations import install_operations

        operations = install_operations(hook_app, config)
        routes.extend(operations.routes)
        contexts.extend(operations.lifespan_contexts)
        self.mcp_mount = None
        if config.mcp:
            from starlette.routing import Route

            from handler_kit.mcp import create_mcp_mount

            self.mcp_mount = create_mcp_mount(
                hook_app,
                allowed_hosts=config.allowed_hosts,
                stateless=config.mcp_stateless,
                json_response=config.mcp_json_response,
            )
            routes.insert(0, Route("/mcp", self.mcp_mount.asgi, methods=["GET", "POST", "DELETE"]))
            contexts.insert(0, self.mcp_mount.lifespan)

        @contextlib.asynccontextmanager
        async def lifespan(_: Any) -> AsyncIterator[None]:
            async with contextlib.AsyncExitStack() as stack:
                for enter in contexts:
                    await stack.enter_async_context(enter())
                yield

        self.starlette = Starlette(
            routes=routes,
            lifespan=lifespan,
            exception_handlers={404: _json_http_error, 405: _json_http_error},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.starlette(scope, receive, send)
            return
        path = scope["path"]
        if path == "/healthz":
            if scope["method"] in _HEALTH_METHODS:
                await send_json(send, 200, self._health_body)
            else:
                await send_error(
                    send,
                    HTTPError(405, "method_not_allowed", "use GET", [], [(b"allow", b"GET")]),
                )
            return
        if self.auth is not None and path not in self.public_paths:
            # one C-level pass over the headers, shared with the webhook through the scope
            headers = scope["handler_kit.headers"] = dict(scope["headers"])
            authorization = headers.get(b"authorization")
            try:
                scope["handler_kit.principal"] = await self.auth.authenticate(authorization)
            except AuthError as exc:
                challenge = b'Bearer realm="handler-kit"'
                if authorization:
                    challenge += b', error="invalid_token"'
                error = HTTPError(
                    401, "unauthorized", str(exc), headers=[(b"www-authenticate", challenge)]
                )
                await send_error(send, error)
                return
        if path.startswith("/hooks"):
            await self.webhook(scope, receive, send)
            return
        if path == "/mcp" and self.mcp_mount is not None:
            # straight to the MCP endpoint: Starlette's router costs a third of a fast tool call
            await self.mcp_mount.asgi(scope, receive, send)
            return
        await self.starlette(scope, receive, send)


async def _json_http_error(request: Any, exc: Any) -> Any:
    """Starlette's 404/405 as the same JSON error body as every other error here."""
    from starlette.responses import Response

    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    error = HTTPError(exc.status_code, code, str(exc.detail))
    headers = dict(getattr(exc, "headers", None) or {})
    headers["content-type"] = "application/json"
    return Response(error.body(), status_code=exc.status_code, headers=headers)


def create_asgi_app(hook_app: HookApp, config: ServerConfig | None = None) -> HandlerKitASGI:
    """The ASGI app serving ``hook_app``: webhook, MCP, health (config from env by default)."""
    return HandlerKitASGI(hook_app, config if config is not None else ServerConfig.from_env())


def app_from_env() -> HandlerKitASGI:
    """uvicorn factory for ``handler-kit serve``: the app named by HANDLER_KIT_APP, configured
    from the environment. Each worker process calls it."""
    from handler_kit.loader import load_app

    target = os.environ.get("HANDLER_KIT_APP")
    if not target:
        raise ConfigError("HANDLER_KIT_APP (MODULE:ATTR) is not set")
    return create_asgi_app(load_app(target))


def describe_routes(hook_app: HookApp, *, mcp: bool = True) -> Sequence[str]:
    """The routes a HookApp serves, for start-up messages."""
    routes = ["GET /healthz", "POST /hooks", *(f"POST /hooks/{h.name}" for h in hook_app.handlers)]
    if mcp:
        routes.append(f"POST /mcp ({len(hook_app.handlers)} tools)")
    return routes
