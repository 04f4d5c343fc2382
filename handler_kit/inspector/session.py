"""Browser sessions for the inspector: a signed cookie instead of a bearer header.

A browser cannot attach ``Authorization: Bearer`` to a page load, so the login form takes the
token once, checks it with the server's own authenticator, and answers with a cookie that
proves it was checked. The cookie never holds the token: it holds the principal the
authenticator returned (``token#0``, a JWT subject), an expiry and a random nonce, signed with
HMAC-SHA256. Signed rather than stored server-side so that every worker of ``serve --workers
N`` accepts a session made by any other, given one secret: ``HANDLER_KIT_INSPECTOR_SECRET``
(``serve --inspector`` sets a random one for its workers when none is set), else a random
per-process secret (sessions then end with the process, which is fine for development).

A signed session cannot be revoked before it expires; sessions therefore last 8 hours at most,
never longer than the JWT they were made from, and rotating the secret ends them all.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time

COOKIE_NAME = "hk_inspector"
MAX_AGE_SECONDS = 8 * 3600
_VERSION = "v1"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def session_secret(configured: str | None) -> bytes:
    """The signing secret: the configured one (shared by workers), else a random one."""
    if configured:
        # any length works: the key is a digest of it
        return hashlib.sha256(configured.encode()).digest()
    return secrets.token_bytes(32)


class SessionSigner:
    """Issues and checks session cookie values."""

    def __init__(self, secret: bytes, max_age: int = MAX_AGE_SECONDS) -> None:
        if len(secret) < 16:
            raise ValueError("the inspector session secret must be at least 16 bytes")
        self._key = secret
        self.max_age = max_age

    def _sign(self, payload: str) -> str:
        return _b64(
            hmac.new(self._key, payload.encode("utf-8", "replace"), hashlib.sha256).digest()
        )

    def issue(self, principal: str, now: float | None = None, max_age: int | None = None) -> str:
        """A cookie value for ``principal``, valid for ``max_age`` (at most :attr:`max_age`)
        seconds."""
        lifetime = self.max_age if max_age is None else max(0, min(max_age, self.max_age))
        expires = int((time.time() if now is None else now) + lifetime)
        nonce = secrets.token_urlsafe(16)
        payload = f"{_VERSION}.{expires}.{nonce}.{_b64(principal.encode())}"
        return f"{payload}.{self._sign(payload)}"

    def principal(self, value: str | None, now: float | None = None) -> str | None:
        """The principal of a valid, unexpired cookie value; None for anything else."""
        if not value or len(value) > 4096:
            return None
        payload, _, signature = value.rpartition(".")
        if not hmac.compare_digest(signature.encode(), self._sign(payload).encode()):
            return None
        parts = payload.split(".")
        if len(parts) != 4 or parts[0] != _VERSION:
            return None
        try:
            expires = int(parts[1])
            principal = _unb64(parts[3]).decode()
        except (ValueError, UnicodeDecodeError):
            return None
        if expires <= (time.time() if now is None else now):
            return None
        return principal


def jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim of a token that is a JWT (already verified by the authenticator), so
    a session never outlives the token that opened it; None for any other token."""
    if token.count(".") != 2:
        return None
    try:
        import jwt

        claims = jwt.decode(token, options={"verify_signature": False})
    except Exception:  # not a JWT after all: a static token with two dots
        return None
    exp = claims.get("exp")
    return float(exp) if isinstance(exp, int | float) else None


LOGIN_CODE_SECONDS = 120
_LOGIN_PRINCIPAL = "login link"


class LoginCodes:
    """One-time login links (``/_inspector/login?code=...``), which ``handler-kit dev`` prints
    so that the token need not be pasted into the login form.

    A code is signed with a key of its own, derived from the session secret (so a code is
    never a valid cookie, nor a cookie a code), expires after :data:`LOGIN_CODE_SECONDS`, and
    is good once: redeeming it creates a marker file named by its digest, exclusively, in
    ``folder``, which every worker and every process a reload starts see alike.
    """

    def __init__(self, secret: bytes, folder: str | None = None) -> None:
        import tempfile

        key = hmac.new(secret, b"handler-kit inspector one-time login code", hashlib.sha256)
        self._signer = SessionSigner(key.digest(), max_age=LOGIN_CODE_SECONDS)
        self._folder = folder or tempfile.gettempdir()

    def issue(self, now: float | None = None) -> str:
        return self._signer.issue(_LOGIN_PRINCIPAL, now=now)

    def redeem(self, code: str | None, now: float | None = None) -> bool:
        """Whether ``code`` is valid, unexpired and not used before; it is used from now on."""
        import os

        if self._signer.principal(code, now=now) != _LOGIN_PRINCIPAL:
            return False
        assert code is not None
        digest = hashlib.sha256(code.encode()).hexdigest()[:40]
        marker = os.path.join(self._folder, f"handler-kit-login-{digest}")
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return False
        except OSError:
            return False  # nowhere to record it: refused rather than good twice
        return True
