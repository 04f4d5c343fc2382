"""Bearer authentication for every route but ``/healthz``: static tokens or JWT.

Static tokens are compared in constant time against every configured token (several at once,
so a token can be rotated without downtime). JWTs are checked with pyjwt against an explicit
algorithm allowlist (never ``none``; HMAC and public-key algorithms never mixed, which closes
the HS/RS key-confusion attack), with ``exp`` required and ``nbf``, ``aud``, ``iss`` checked.
A verified token is remembered until its expiry, so the hot path pays for one signature check
per token, not per request.

Nothing here logs a token or a header value.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import jwt

_HMAC_ALGORITHMS = frozenset({"HS256", "HS384", "HS512"})
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
        # compare digests: equal lengths, so the comparison time does not leak a token's length
        self._digests = [hashlib.sha256(token).digest() for token in raw]
        self._principals = [f"token#{index}" for index in range(len(raw))]

    async def authenticate(self, authorization: bytes | None) -> str:
        return self.check(authorization)

    def check(self, authorization: bytes | None) -> str:
        digest = hashlib.sha256(bearer_token(authorization)).digest()
        found = -1
        # compare with every token, no early exit: timing says nothing about which matched
        for index, candidate in enumerate(self._digests):
            if hmac.compare_digest(digest, candidate) and found < 0:
                found = index
        if found < 0:
            raise AuthError("invalid bearer token")
        return self._principals[found]


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
            options: jwt.types.Options = {
                "require": required,
                "verify_aud": self._audience is not None,
            }
            return jwt.decode(
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
