"""Bearer authentication for every route but ``/healthz``: static tokens or JWT.

Static tokens are compared in constant time against every configured token (several at once,
so a token can be rotated without downtime). JWTs are checked with pyjwt against an explicit
algorithm allowlist (never ``none``; HMAC and public-key algorithms never mixed, which closes
the HS/RS key-confusion attack), with a numeric ``exp`` required and ``nbf``, ``aud``, ``iss``
checked: a token naming an audience is refused by a server that names none. An HMAC key must
be at least as long as the hash it is used with (RFC 7518, section 3.2). A verified token is
remembered until its expiry, so the hot path pays for one signature check per token, not per
request.

:class:`FailedAuthLimiter` counts failed authentications per client address: over its limit
an address is answered 429, and the log gets one line per interval, never one per failure.

Nothing here logs a token or a header value.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import math
import os
import secrets
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import jwt

logger = logging.getLogger("handler_kit.auth")

# the shortest key each HMAC algorithm takes: its hash's output size (RFC 7518, section 3.2)
_HMAC_KEY_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
_HMAC_ALGORITHMS = frozenset(_HMAC_KEY_BYTES)
# claims that are times: JSON numbers, never strings pyjwt would convert
_TIME_CLAIMS = ("exp", "nbf", "iat")
_PUBLIC_KEY_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
_CACHE_SIZE = 4096
# Tokens checked against a JWKS URL at once; more wait for a thread of these, never for one
# of the handlers' (a key fetch is rare: the key set is cached)
_FETCH_THREADS = 4


class AuthError(Exception):
    """Authentication failed; ``str(exc)`` is safe to show to the caller."""


class BearerAuth(Protocol):
    """What the server needs of an authenticator."""

    async def authenticate(self, authorization: bytes | None) -> str:
        """Return the principal (never the secret) or raise :class:`AuthError`."""
        ...


def bearer_token(authorization: bytes | None) -> bytes:
    """The token of an ``Authorization: Bearer <token>`` header value."""
    if not authorization:
        raise AuthError("missing bearer token")
    scheme, _, token = authorization.partition(b" ")
    if scheme.lower() != b"bearer" or not token.strip():
        raise AuthError("the Authorization header must be 'Bearer <token>'")
    return token.strip()


class StaticTokenAuth:
    """A fixed list of accepted tokens. The principal is ``token#<index>``."""

    def __init__(self, tokens: Iterable[str]) -> None:
        raw = [t.strip().encode() for t in tokens if t and t.strip()]
        if not raw:
            raise ValueError("StaticTokenAuth needs at least one non-empty token")
        if any(len(token) < 16 for token in raw):
            raise ValueError("a bearer token must be at least 16 characters long")
        # A keyed hash first, with a key drawn for this process: hashing takes the same time
        # for every token of a length, comparing two hashes says nothing usable about a token,
        # and it costs a fraction of a digest on every request. A token whose hash matches is
        # then compared in full, in constant time.
        self._key = os.urandom(16)
        self._tokens = raw
        # the keyed hash of each token to its index (the first of a repeated token): one
        # lookup whatever the number of tokens, and its time says nothing about which matched
        self._index: dict[int, int] = {}
        for index, token in enumerate(raw):
            self._index.setdefault(hash((self._key, token)), index)
        self._principals = [f"token#{index}" for index in range(len(raw))]

    async def authenticate(self, authorization: bytes | None) -> str:
        return self.check(authorization)

    def check(self, authorization: bytes | None) -> str:
        """The principal of ``authorization``, or :class:`AuthError` (synchronous)."""
        # the plain form first; the stored tokens are stripped, so one with spaces around it
        # cannot match here and takes the general reading below
        token = authorization[7:] if authorization and authorization[:7] == b"Bearer " else b""
        index = self._index.get(hash((self._key, token)), -1)
        if index >= 0 and hmac.compare_digest(token, self._tokens[index]):
            return self._principals[index]
        # anything else: the general reading, and its error messages
        token = bearer_token(authorization)
        index = self._index.get(hash((self._key, token)), -1)
        if index < 0 or not hmac.compare_digest(token, self._tokens[index]):
            raise AuthError("invalid bearer token")
        return self._principals[index]


class JWTAuth:
    """JWT bearer tokens, verified with a static key or a JWKS URL (keys cached).

    ``algorithms`` is required and explicit: a token is never accepted on the algorithm it
    claims for itself.
    """

    def __init__(
        self,
        *,
        algorithms: Sequence[str],
        key: str | bytes | None = None,
        jwks_url: str | None = None,
        audience: str | Sequence[str] | None = None,
        issuer: str | None = None,
        leeway: float = 30.0,
        jwks_cache_seconds: int = 300,
    ) -> None:
        algorithms = list(algorithms)
        if not algorithms:
            raise ValueError("JWTAuth needs an explicit list of algorithms")
        unknown = set(algorithms) - _HMAC_ALGORITHMS - _PUBLIC_KEY_ALGORITHMS
        if unknown:
            raise ValueError(f"unsupported or unsafe JWT algorithms: {sorted(unknown)}")
        if set(algorithms) & _HMAC_ALGORITHMS and set(algorithms) & _PUBLIC_KEY_ALGORITHMS:
            raise ValueError("do not mix HMAC and public-key JWT algorithms (key confusion)")
        if (key is None) == (jwks_url is None):
            raise ValueError("JWTAuth needs exactly one of key= or jwks_url=")
        if jwks_url is not None and set(algorithms) & _HMAC_ALGORITHMS:
            raise ValueError("a JWKS URL serves public keys: use RS/PS/ES/EdDSA algorithms")
        if isinstance(key, str) and set(algorithms) & _HMAC_ALGORITHMS and "PUBLIC KEY" in key:
            raise ValueError("an HMAC algorithm with a public key is the key-confusion attack")
        if key is not None and set(algorithms) & _HMAC_ALGORITHMS:
            problem = hmac_key_problem(key, algorithms)
            if problem:
                raise ValueError(problem)
        self.algorithms = algorithms
        self._key = key
        self._jwks = (
            jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=jwks_cache_seconds)
            if jwks_url
            else None
        )
        self._audience = audience
        self._issuer = issuer
        self._leeway = leeway
        self._verified: dict[bytes, tuple[float, float, str]] = {}  # token -> (nbf, exp, sub)
        self._fetch_threads: ThreadPoolExecutor | None = None
        self._fetch_lock = threading.Lock()

    async def authenticate(self, authorization: bytes | None) -> str:
        token = bearer_token(authorization)
        now = time.time()
        cached = self._verified.get(token)
        if cached is not None:
            not_before, expires, subject = cached
            if not_before - self._leeway <= now < expires + self._leeway:
                return subject
            del self._verified[token]
        if self._jwks is not None:
            # PyJWKClient fetches over the network on a cache miss: keep it off the loop, on
            # threads of its own, so that no handler holding threads can make a request wait
            # to be authenticated
            claims = await asyncio.wrap_future(self._fetcher().submit(self._decode, token))
        else:
            claims = self._decode(token)
        subject = f"jwt:{claims.get('sub', '?')}"
        if len(self._verified) >= _CACHE_SIZE:
            self._verified.clear()
        self._verified[token] = (float(claims.get("nbf", 0)), float(claims["exp"]), subject)
        return subject

    def _fetcher(self) -> ThreadPoolExecutor:
        if self._fetch_threads is None:
            with self._fetch_lock:
                if self._fetch_threads is None:
                    self._fetch_threads = ThreadPoolExecutor(
                        _FETCH_THREADS, thread_name_prefix="handler-kit-jwks"
                    )
        return self._fetch_threads

    def _decode(self, token: bytes) -> dict[str, Any]:
        try:
            key: Any = self._key
            if self._jwks is not None:
                key = self._jwks.get_signing_key_from_jwt(token).key
            required = ["exp"] if self._issuer is None else ["exp", "iss"]
            # aud is always verified: with no audience configured, pyjwt refuses a token that
            # names one (it was issued for another service)
            options: jwt.types.Options = {"require": required, "verify_aud": True}
            claims = jwt.decode(
                token,
                key=key,
                algorithms=self.algorithms,
                audience=self._audience,
                issuer=self._issuer,
                leeway=self._leeway,
                options=options,
            )
        except jwt.ExpiredSignatureError:
            raise AuthError("token expired") from None
        except jwt.ImmatureSignatureError:
            raise AuthError("token not valid yet") from None
        except jwt.InvalidAudienceError:
            raise AuthError("token audience not accepted") from None
        except jwt.InvalidIssuerError:
            raise AuthError("token issuer not accepted") from None
        except jwt.PyJWKClientError:
            raise AuthError("token signing key not found") from None
        except jwt.InvalidTokenError:
            raise AuthError("invalid token") from None
        for name in _TIME_CLAIMS:
            # pyjwt reads "exp": "9999999999" as a number; RFC 7519 says it is one
            value = claims.get(name)
            if name in claims and (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
            ):
                raise AuthError(f"invalid token: {name} must be a number")
        return claims


def hmac_key_problem(key: str | bytes, algorithms: Iterable[str]) -> str | None:
    """Why ``key`` is too short for the HMAC ``algorithms``, or None when it is long enough."""
    needed = max((_HMAC_KEY_BYTES.get(name, 0) for name in algorithms), default=0)
    size = len(key.encode() if isinstance(key, str) else key)
    if size >= needed:
        return None
    return (
        f"the JWT HMAC secret is {size} bytes long; {', '.join(sorted(algorithms))} needs at "
        f"least {needed} bytes (RFC 7518, section 3.2): generate one with "
        f"python -c 'import secrets; print(secrets.token_urlsafe({needed}))'"
    )


# -- failed authentications ----------------------------------------------------------------


DEFAULT_FAILURE_LIMIT = 20
DEFAULT_FAILURE_WINDOW = 60.0
# Addresses tracked at once: a bound on memory whatever number of addresses an attacker uses.
_MAX_CLIENTS = 10_000
# Addresses named in a summary line, the busiest first.
_SUMMARY_TOP = 3


class FailedAuthLimiter:
    """Failed authentications per client address, and what the log says about them.

    Each address may fail ``limit`` times per ``window`` seconds (a window starts at its first
    failure); after that it is answered 429 with ``Retry-After`` until the window ends. Only
    failures are counted: a request that authenticates costs nothing here. IPv6 addresses are
    counted by their /64, the block one host is usually given.

    The client address is the ASGI ``client``, unless that is one of ``trusted_proxies``
    (addresses or networks): then it is the right-most ``X-Forwarded-For`` entry that is not
    a trusted proxy, the one the nearest trusted proxy saw.

    Logging: the first failure after a quiet period is logged at once, then the failures of
    each ``window`` are summed up in one WARNING line (how many, how many answered 429, the
    busiest addresses), however many there were. Tokens are never seen here.
    """

    def __init__(
        self,
        *,
        limit: int = DEFAULT_FAILURE_LIMIT,
        window: float = DEFAULT_FAILURE_WINDOW,
        trusted_proxies: Iterable[str] = (),
        max_clients: int = _MAX_CLIENTS,
    ) -> None:
        if limit < 1:
            raise ValueError(f"the failed-authentication limit must be at least 1, not {limit}")
        if not window > 0:
            raise ValueError(f"the failed-authentication window must be positive, not {window}")
        self.limit = limit
        self.window = window
        self.trusted = tuple(ipaddress.ip_network(p.strip(), strict=False) for p in trusted_proxies)
        self.max_clients = max_clients
        # address -> [window start, failures in it]; insertion order is the eviction order
        self._clients: dict[str, list[float]] = {}
        # what the next summary line reports
        self._failures = 0
        self._refused = 0
        self._by_client: dict[str, int] = {}
        self._summary_due: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    # -- who is asking

    def client(self, scope: Mapping[str, Any]) -> str:
        """The address failures of the request with ASGI ``scope`` are counted under."""
        peer = scope.get("client")
        address = str(peer[0]) if peer else "unknown"
        if self.trusted and self._is_trusted(address):
            hops = b",".join(
                value for key, value in scope.get("headers", ()) if key == b"x-forwarded-for"
            )
            # right to left: each hop was written by the proxy after it, trusted so far
            for hop in reversed(hops.decode("latin-1").split(",")):
                try:
                    parsed = ipaddress.ip_address(hop.strip().strip("[]"))
                except ValueError:  # not an address: the last trusted view stands
                    break
                address = str(parsed)
                if not any(parsed in network for network in self.trusted):
                    break
        return _counted_as(address)

    def _is_trusted(self, address: str) -> bool:
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(parsed in network for network in self.trusted)

    # -- counting

    def retry_after(self, client: str, now: float | None = None) -> int | None:
        """Seconds until ``client`` may try again when it is over the limit, else None. A
        request refused for it is counted in the summary."""
        entry = self._clients.get(client)
        if entry is None:
            return None
        now = time.monotonic() if now is None else now
        if now - entry[0] >= self.window:
            del self._clients[client]
            return None
        if entry[1] <= self.limit:
            return None
        self._note(client, refused=True, where=None, now=now)
        return max(1, math.ceil(entry[0] + self.window - now))

    def failed(self, client: str, where: str, now: float | None = None) -> int | None:
        """Count one failed authentication of ``client`` (on the path ``where``); the seconds
        until it may try again when this failure is over the limit, else None."""
        now = time.monotonic() if now is None else now
        entry = self._clients.get(client)
        if entry is None or now - entry[0] >= self.window:
            if entry is None and len(self._clients) >= self.max_clients:
                self._make_room(now)
            entry = self._clients[client] = [now, 0]
        entry[1] += 1
        over = entry[1] > self.limit
        self._note(client, refused=over, where=where, now=now)
        return max(1, math.ceil(entry[0] + self.window - now)) if over else None

    def _make_room(self, now: float) -> None:
        for client, (start, _) in list(self._clients.items()):
            if now - start >= self.window:
                del self._clients[client]
        while len(self._clients) >= self.max_clients:
            del self._clients[next(iter(self._clients))]

    # -- the log

    def _note(self, client: str, *, refused: bool, where: str | None, now: float) -> None:
        if self._summary_due is None:
            # the first failure after a quiet period: said at once, the rest summed up later
            self._summary_due = now + self.window
            logger.warning(
                "authentication failed from %s%s; further failures are summed up every %g s",
                client,
                f" on {where[:200]!r}" if where else "",
                self.window,
            )
            self._schedule()
            return
        self._failures += 1
        self._refused += refused
        if client in self._by_client or len(self._by_client) < _MAX_CLIENTS:
            self._by_client[client] = self._by_client.get(client, 0) + 1
        if self._timer is None and now >= self._summary_due:  # no event loop keeps time
            self.summarize(now)

    def _schedule(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(self.window, self.summarize)

    def summarize(self, now: float | None = None) -> None:
        """Log the failures counted since the last line, if any (called every window)."""
        self._timer = None
        if not self._failures:
            self._summary_due = None  # quiet: the next failure is logged at once
            return
        busiest = sorted(self._by_client.items(), key=lambda item: -item[1])[:_SUMMARY_TOP]
        logger.warning(
            "%d more refused authentication attempts in the last %g s from %d client "
            "address%s, %d of them answered 429 (over the limit); most from %s",
            self._failures,
            self.window,
            len(self._by_client),
            "" if len(self._by_client) == 1 else "es",
            self._refused,
            ", ".join(f"{client} ({count})" for client, count in busiest),
        )
        self._failures = self._refused = 0
        self._by_client = {}
        self._summary_due = (time.monotonic() if now is None else now) + self.window
        self._schedule()


def _counted_as(address: str) -> str:
    """The key an address is counted under: itself, or its /64 for IPv6."""
    if ":" not in address:
        return address
    try:
        parsed = ipaddress.IPv6Address(address.split("%", 1)[0])
    except ValueError:
        return address
    if parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)
    return str(ipaddress.IPv6Network((int(parsed) >> 64 << 64, 64)))


def generate_token(nbytes: int = 24) -> str:
    """A new random bearer token (URL-safe, ``nbytes`` of randomness) that does not start with
    ``-``: one in 64 of ``secrets.token_urlsafe`` does, and a command line then reads
    ``--token -abc…`` as an option instead of its value."""
    while True:
        token = secrets.token_urlsafe(nbytes)
        if not token.startswith("-"):
            return token
