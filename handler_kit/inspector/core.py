"""The inspector's routes: the page, the login form, the JSON API, the static assets.

Authentication is done here rather than by the server's outer layer, because a browser
cannot send a bearer header with a page load: every ``/_inspector`` path is declared public
to the outer layer (``ServerConfig.public_paths``, exact paths, so nothing else is opened) and
each route accepts either ``Authorization: Bearer`` (checked by the server's own
authenticator: curl, scripts) or the session cookie that the login form sets after checking a
token with that same authenticator (:mod:`handler_kit.inspector.session`). The static assets
are the only routes served without either: they are the same for everyone and hold no data.

Failed logins and failed bearer headers are counted per client address by the server's
:class:`~handler_kit.auth.FailedAuthLimiter` (the one its other routes use). Over the limit, the
login form answers 429 with ``Retry-After`` until the address's window ends, even for a good
token (it is where tokens would be guessed), and a failing bearer header gets 429 instead of
401; the log gets a summary per window instead of a line per attempt.

Records are read from a store with the query API of
:class:`handler_kit.ops.audit.sqlite.AuditStore` (``recent(limit, since_id=..., **filters)`` and
``get(event_id)``): blocking calls (SQLite), run in a worker thread, or coroutines
(:class:`handler_kit.ops.audit.postgres.PostgresStore`, an async pool), awaited on the loop.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from handler_kit.auth import AuthError, BearerAuth, FailedAuthLimiter
from handler_kit.inspector import render
from handler_kit.inspector.session import (
    COOKIE_NAME,
    LoginCodes,
    SessionSigner,
    jwt_expiry,
    session_secret,
)

logger = logging.getLogger("handler_kit.inspector")

BASE = render.BASE
ASSETS = Path(__file__).resolve().parent
STATIC = {
    "inspector.js": "text/javascript; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
}
FILTERS = ("event", "decision", "status", "kind", "shadow")
PAGE_LIMIT = 200
SPARK_POINTS = 40
SPARK_SCAN = 1000
MAX_LOGIN_BODY = 8 * 1024
# the login form has two fields (token, next); a few more are tolerated, not thousands
MAX_LOGIN_FIELDS = 8
# record ids are SQLite integers
MAX_RECORD_ID = 2**63 - 1
SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
}


class StoreUnavailable(Exception):
    """The audit store failed a query (a database down, a file unreadable): answered 503."""


class RecordStore(Protocol):
    """What the inspector reads: the query API of the audit trail's SQLite sink."""

    def recent(
        self, limit: int = 50, *, since_id: int | None = None, **filters: str | None
    ) -> list[dict[str, Any]]: ...

    def get(self, event_id: str) -> dict[str, Any] | None: ...


class AsyncRecordStore(Protocol):
    """The same query API as coroutines (the Postgres sink's store)."""

    async def recent(
        self, limit: int = 50, *, since_id: int | None = None, **filters: str | None
    ) -> list[dict[str, Any]]: ...

    async def get(self, event_id: str) -> dict[str, Any] | None: ...


class Inspector:
    """The ``/_inspector`` routes over ``store``, guarded by ``auth`` (None: no auth, as the
    rest of a server started with ``--insecure-no-auth``)."""

    def __init__(
        self,
        store: RecordStore | AsyncRecordStore,
        *,
        auth: BearerAuth | None,
        app_name: str = "handler-kit",
        signer: SessionSigner | None = None,
        source: str = "audit trail",
        close_store: Callable[[], object] | None = None,
        failures: FailedAuthLimiter | None = None,
        codes: LoginCodes | None = None,
    ) -> None:
        self.store = store
        # one-time login links: only for a secret someone could have issued them with
        self.codes = codes or LoginCodes(session_secret(None))
        # a store of coroutines is awaited on the loop; blocking calls go to a thread
        self._async_store = inspect.iscoroutinefunction(store.recent)
        self.auth = auth
        self.failures = failures or FailedAuthLimiter()
        self.app_name = app_name
        self.signer = signer or SessionSigner(session_secret(None))
        self.source = source
        self._close_store = close_store
        self._static = {name: (ASSETS / name).read_bytes() for name in STATIC}
        self.routes = [
            Route(BASE, self.page, methods=["GET"]),
            Route(f"{BASE}/login", self.login, methods=["GET", "POST"]),
            Route(f"{BASE}/logout", self.logout, methods=["POST"]),
            Route(f"{BASE}/api/records", self.api_records, methods=["GET"]),
            Route(f"{BASE}/api/record", self.api_record, methods=["GET"]),
            Route(f"{BASE}/api/sparklines", self.api_sparklines, methods=["GET"]),
            *(Route(f"{BASE}/static/{name}", self.static, methods=["GET"]) for name in STATIC),
        ]
        # exact paths: the outer layer leaves these to the checks below, and nothing else
        self.public_paths = {route.path for route in self.routes} | {f"{BASE}/"}

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if self._close_store is not None:
                closed = self._close_store()
                if inspect.isawaitable(closed):
                    await closed

    # -- authentication ---------------------------------------------------------------------

    async def principal(self, request: Request) -> str | None:
        """Who is asking: a valid bearer header, else a valid session cookie, else None.

        A bearer header that fails is a failure, not a reason to look at the cookie: a script
        with a revoked token must see a 401, whatever its cookie jar holds.
        """
        if self.auth is None:
            return "anonymous"
        authorization = request.headers.get("authorization")
        if authorization is not None:
            try:
                return await self.auth.authenticate(authorization.encode("latin-1"))
            except (AuthError, UnicodeEncodeError):
                client = self.failures.client(request.scope)
                request.state.retry_after = self.failures.failed(client, request.url.path)
                return None
        return self.signer.principal(request.cookies.get(COOKIE_NAME))

    async def check_token(self, token: str) -> str | None:
        """The principal of a token typed into the login form, checked by the server's own
        authenticator (static tokens or JWT: whatever the webhook accepts)."""
        if self.auth is None:
            return "anonymous"
        token = token.strip()
        if not token:
            return None
        try:
            return await self.auth.authenticate(b"Bearer " + token.encode("utf-8"))
        except AuthError:
            return None

    @staticmethod
    def _unauthorized(request: Request) -> Response:
        """401, or 429 when the bearer header that failed took its address over the limit."""
        retry = getattr(request.state, "retry_after", None)
        if retry is not None:
            return _too_many(retry)
        return _json(
            {"error": "unauthorized", "message": "log in at /_inspector/login or send a token"},
            401,
            {"WWW-Authenticate": 'Bearer realm="handler-kit"'},
        )

    # -- pages ------------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        if await self.principal(request) is None:
            target = BASE + (f"?{request.url.query}" if request.url.query else "")
            return _redirect(f"{BASE}/login?next={quote(target, safe='')}")
        filters = _filters(request.query_params)
        try:
            records = await self._recent(filters, None, PAGE_LIMIT)
            series = await self._series()
        except StoreUnavailable:
            return _html(
                "<!doctype html><title>Inspector</title><p>The audit trail cannot be read right "
                "now (see the server log). Reload in a moment.</p>",
                503,
            )
        html = render.page(
            app_name=self.app_name,
            records=records,
            filters=filters,
            series=series,
            events={event for r in records if isinstance(event := r.get("event"), str)},
            logged_in=self.auth is not None,
            source=self.source,
        )
        return _html(html)

    async def login(self, request: Request) -> Response:
        if request.method == "GET" and "code" in request.query_params:
            return self._login_with_code(request)
        if request.method == "GET":
            next_path = _safe_next(request.query_params.get("next"))
            if await self.principal(request) is not None:
                return _redirect(next_path)
            return _html(render.login_page(app_name=self.app_name, next_path=next_path))
        client = self.failures.client(request.scope)
        retry = self.failures.retry_after(client)
        if retry is not None:  # over the limit: not even read, however good the token
            return _too_many(retry)
        body = await _read_limited(request, MAX_LOGIN_BODY)
        if body is None:
            return _html(render.login_page(app_name=self.app_name, error="Request too large."), 413)
        try:
            form = parse_qs(body.decode("utf-8", "replace"), max_num_fields=MAX_LOGIN_FIELDS)
        except ValueError:  # more fields than a login form has
            page = render.login_page(app_name=self.app_name, error="That form was not a login.")
            return _html(page, 400)
        token = (form.get("token") or [""])[0]
        next_path = _safe_next(form["next"][0] if form.get("next") else None)
        principal = await self.check_token(token)
        expires = jwt_expiry(token.strip())
        lifetime = self.signer.max_age if expires is None else int(expires - time.time())
        if principal is None or lifetime <= 0:
            # counted, and logged as a summary per window: never a line per attempt
            retry = self.failures.failed(client, f"{BASE}/login")
            if retry is not None:
                return _too_many(retry)
            page = render.login_page(
                app_name=self.app_name, error="That token was not accepted.", next_path=next_path
            )
            return _html(page, 401)
        response = _redirect(next_path)
        lifetime = min(lifetime, self.signer.max_age)
        response.set_cookie(
            COOKIE_NAME,
            self.signer.issue(principal, max_age=lifetime),
            max_age=lifetime,
            path=BASE,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        logger.info("inspector login: %s from %s", principal, _client(request))
        return response

    def _login_with_code(self, request: Request) -> Response:
        """A one-time login link (``handler-kit dev`` prints one): a session, once."""
        client = self.failures.client(request.scope)
        retry = self.failures.retry_after(client)
        if retry is not None:
            return _too_many(retry)
        if not self.codes.redeem(request.query_params.get("code")):
            retry = self.failures.failed(client, f"{BASE}/login")
            if retry is not None:
                return _too_many(retry)
            page = render.login_page(
                app_name=self.app_name,
                error="That login link has expired or was used already: paste a token.",
            )
            return _html(page, 401)
        response = _redirect(BASE)
        response.set_cookie(
            COOKIE_NAME,
            self.signer.issue("login link", max_age=self.signer.max_age),
            max_age=self.signer.max_age,
            path=BASE,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        logger.info("inspector login: a one-time link from %s", _client(request))
        return response

    async def logout(self, request: Request) -> Response:
        response = _redirect(f"{BASE}/login")
        response.delete_cookie(
            COOKIE_NAME,
            path=BASE,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def static(self, request: Request) -> Response:
        name = request.url.path.rsplit("/", 1)[-1]
        return Response(
            self._static[name],
            media_type=STATIC[name],
            headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"},
        )

    # -- JSON API ---------------------------------------------------------------------------

    async def api_records(self, request: Request) -> Response:
        """``?since_id=N&event=&decision=&status=&kind=&shadow=&limit=``: decisions (or,
        ``kind=shadow``, shadow records), newest first; ``shadow=disagrees``: only decisions
        a shadow candidate's answer disagreed with."""
        if await self.principal(request) is None:
            return self._unauthorized(request)
        params = request.query_params
        try:
            since_id = int(params["since_id"]) if params.get("since_id") else None
            limit = min(max(int(params.get("limit") or PAGE_LIMIT), 1), PAGE_LIMIT)
        except ValueError:
            return _json(
                {"error": "bad_request", "message": "since_id and limit are integers"}, 400
            )
        if since_id is not None and not 0 <= since_id <= MAX_RECORD_ID:
            return _json(
                {
                    "error": "bad_request",
                    "message": f"since_id is a record id, from 0 to {MAX_RECORD_ID}",
                },
                400,
            )
        filters = _filters(params)
        try:
            records = await self._recent(filters, since_id, limit)
        except StoreUnavailable:
            return _unavailable()
        ids = [r["id"] for r in records if isinstance(r.get("id"), int)]
        return _json(
            {
                "records": [render.summary(r) for r in records],
                "last_id": max(ids, default=since_id or 0),
            }
        )

    async def api_record(self, request: Request) -> Response:
        """``?event_id=...``: one record whole (input and output as the audit trail
        recorded them, redacted by its rules): a decision with its handlers and the shadow
        records linked to it."""
        if await self.principal(request) is None:
            return self._unauthorized(request)
        event_id = request.query_params.get("event_id", "")
        if not event_id or len(event_id) > 200:
            return _json({"error": "bad_request", "message": "event_id is required"}, 400)
        try:
            record: dict[str, Any] | None = await self._query("get", event_id)
        except StoreUnavailable:
            return _unavailable()
        if record is None:
            return _json({"error": "not_found", "message": f"no record {event_id}"}, 404)
        return _json(record)

    async def api_sparklines(self, request: Request) -> Response:
        """Latency of each handler's recent calls (oldest first), data and SVG markup."""
        if await self.principal(request) is None:
            return self._unauthorized(request)
        try:
            series = await self._series()
        except StoreUnavailable:
            return _unavailable()
        return _json({"handlers": series, "html": render.sparklines(series)})

    # -- queries ----------------------------------------------------------------------------

    async def _query(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``store.method(*args, **kwargs)``: awaited, or run in a thread when it blocks. Its
        failure is logged (the store's repr names no password) and raised as
        :class:`StoreUnavailable`."""
        call = getattr(self.store, method)
        try:
            if self._async_store:
                return await call(*args, **kwargs)
            return await run_in_threadpool(call, *args, **kwargs)
        except Exception as exc:
            logger.warning("inspector: the audit store %r failed: %s", self.store, exc)
            raise StoreUnavailable from exc

    async def _recent(
        self, filters: Mapping[str, str | None], since_id: int | None, limit: int
    ) -> list[dict[str, Any]]:
        query = {key: value for key, value in filters.items() if key != "shadow"}
        if filters.get("shadow") == "disagrees":
            query["disagrees"] = "1"
        records: list[dict[str, Any]] = await self._query(
            "recent", limit, since_id=since_id, **query
        )
        return records

    async def _series(self) -> dict[str, list[float]]:
        """Each handler's last :data:`SPARK_POINTS` latencies, oldest first."""
        series: dict[str, list[float]] = {}
        for record in await self._query("recent", SPARK_SCAN):
            for handler in record.get("handlers") or ():
                if not isinstance(handler, dict):
                    continue
                name, latency = handler.get("name"), handler.get("latency_ms")
                if not isinstance(name, str) or not isinstance(latency, int | float):
                    continue
                points = series.setdefault(name, [])
                if len(points) < SPARK_POINTS:
                    points.append(float(latency))
        return {name: points[::-1] for name, points in series.items()}


def _filters(params: Mapping[str, str]) -> dict[str, str | None]:
    """The known filters of a query string; empty or oversized values mean "all"."""
    out: dict[str, str | None] = {}
    for key in FILTERS:
        value = params.get(key)
        out[key] = value if value and len(value) <= 100 else None
    return out


def _safe_next(value: str | None) -> str:
    """Where to go after logging in: an inspector path only, never another site."""
    if value and value.startswith(BASE) and "//" not in value and "\\" not in value:
        return value
    return BASE


async def _read_limited(request: Request, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _unavailable() -> Response:
    return _json(
        {"error": "unavailable", "message": "the audit trail cannot be read right now"},
        503,
        {"Retry-After": "5"},
    )


def _too_many(retry: int) -> Response:
    return _json(
        {
            "error": "too_many_requests",
            "message": f"too many failed authentications from this address: retry in {retry} s",
        },
        429,
        {"Retry-After": str(retry)},
    )


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=SECURITY_HEADERS)


def _json(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    body = json.dumps(data, ensure_ascii=False, default=str).encode()
    return Response(
        body,
        status_code=status,
        media_type="application/json",
        headers={**SECURITY_HEADERS, **(headers or {})},
    )


def _redirect(location: str) -> RedirectResponse:
    return RedirectResponse(location, status_code=303, headers=SECURITY_HEADERS)
