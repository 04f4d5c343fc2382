"""The settings: the frozen dataclasses, the :data:`SETTINGS` table, its parsers, and the
code that reads them from the environment and writes them back. Import these names from
:mod:`handler_kit.config`, which loads this module on first use."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from handler_kit.config import CLIENT_TOKEN_VARIABLE, Environ

if TYPE_CHECKING:
    import contextlib

    from opentelemetry.trace import TracerProvider
    from starlette.routing import BaseRoute

    from handler_kit.auth import BearerAuth
    from handler_kit.core.outputs import Output

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_MCP_PATH = "/mcp"
DEFAULT_AUDIT_QUEUE_SIZE = 10_000
# shadow mode: answers handed to the candidate and not yet answered, past which more are shed
DEFAULT_SHADOW_QUEUE_SIZE = 1000
DEFAULT_SHADOW_TIMEOUT = 5.0
DEFAULT_IDEMPOTENCY_TTL = 3600.0
# Connection limits of ``handler-kit serve`` (docs/production.md says which attack each stops):
# gunicorn's default worker_connections, uvicorn's keep-alive and backlog, a head timeout and
# size well above any real hook request's.
DEFAULT_MAX_CONNECTIONS = 1000
DEFAULT_KEEP_ALIVE_TIMEOUT = 5.0
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_HEADER_BYTES = 32 * 1024
DEFAULT_BACKLOG = 2048
# Connections one client address may hold before its first answer, as a share of the worker's
# connections: one address alone can never take them all; four are needed to.
UNANSWERED_PER_ADDRESS_SHARE = 4
DEFAULT_AUTH_FAILURE_LIMIT = 20
DEFAULT_AUTH_FAILURE_WINDOW = 60.0
# the shortest bearer token accepted, and the shortest secret the audit trail redacts
MIN_SECRET_CHARS = 16
# the shortest MAC key of the idempotency store (``openssl rand -hex 32`` makes 64)
MIN_IDEMPOTENCY_KEY_CHARS = 32


class ConfigError(ValueError):
    """A setting is missing, malformed or inconsistent; the message names it."""


# What the shipped example secrets (deploy/kubernetes/secret.yaml) hold in place of a secret:
# a server given one, copied as it is, would accept a token anybody can read in this repository.
PLACEHOLDER = "REPLACE-ME"


def refuse_placeholders(name: str, values: Sequence[str | None]) -> None:
    """Refuse a secret that is, or holds, the placeholder of the example manifests. The
    message names the setting, never the value."""
    if any(value and PLACEHOLDER in value.upper() for value in values):
        raise ConfigError(
            f"{name} holds the placeholder {PLACEHOLDER} of the example Secret "
            "(deploy/kubernetes/secret.yaml), not a secret: create the Secret from files of "
            "random values (see that file), e.g. "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )


class DeprecatedSetting(FutureWarning):
    """A setting was given under its old name. Shown by default: the person who set it is an
    operator, not the developer who would see a DeprecationWarning."""


# -- what code can plug in ---------------------------------------------------------------------


class AuditSink(Protocol):
    """Where audit records go. ``open``, ``write`` and ``close`` run on one thread, the
    trail's writer thread (or, for a command hook, the main thread), never on the event loop,
    and never two at once.

    The contract, which the durable mode (``audit_durable``) relies on:

    - ``write(records)`` writes one batch, the records of every answer that arrived while the
      previous batch was written, as **one unit**: one transaction, one commit (a file: one
      ``write`` then ``fsync``). It returns only once the whole batch is durable, as durable
      as the store makes a commit (it survives a ``kill -9`` of every process of the server,
      and a machine crash where the store fsyncs its commits); it raises when the batch is not
      committed, leaving none of it behind when the store can (roll the transaction back).
    - ``write([])``, an empty batch, is a probe: it returns only when the sink could commit
      now (an empty transaction), and raises otherwise. The trail calls it every so often
      while the sink is down, to find it back up (the server is not ready meanwhile).
    - ``write`` may be called before ``open`` (it opens), and again after it raised (it
      reconnects when its connection was lost): a sink that is down is retried, never dropped.
    - ``close`` releases the connection; nothing is written after it.

    In the default mode the same sink is written the same way, off the answer path: answers
    never wait for it. Records are ``(record, its JSON line)`` pairs: write the line, or the
    record's columns (:mod:`handler_kit.ops.audit.sqlite` says which are indexed).
    """

    def open(self) -> None: ...

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        """Commit ``(record, its JSON line)`` pairs as one unit; raise when not committed."""

    def close(self) -> None: ...


class IdempotencyStore(Protocol):
    """Runs a call once per key within a time to live, replaying its output after that."""

    async def run_once(
        self,
        key: str,
        event_name: str,
        call: Callable[[], Awaitable[Output]],
        lock_seconds: float,
    ) -> tuple[Output, bool]:
        """Run ``call`` once per ``key``; return (its output, True when replayed)."""

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class Extension:
    """What a feature adds to the server: Starlette routes, paths served without a token (a
    login page), and a context entered for the server's lifetime."""

    routes: Sequence[BaseRoute] = ()
    public_paths: frozenset[str] = frozenset()
    lifespan: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None


# -- the settings ------------------------------------------------------------------------------


@dataclass(frozen=True)
class JWTConfig:
    """JSON Web Token authentication. ``algorithms`` plus one key source: ``secret`` (HMAC),
    ``public_key_file`` (PEM) or ``jwks_url``."""

    algorithms: Sequence[str]
    secret: str | None = field(default=None, repr=False)
    public_key_file: str | None = None
    jwks_url: str | None = None
    audience: str | None = None
    issuer: str | None = None

    def __post_init__(self) -> None:
        _freeze(self, "algorithms")
        refuse_placeholders("HANDLER_KIT_JWT_SECRET", [self.secret])
        if self.secret:
            from handler_kit.auth import hmac_key_problem

            problem = hmac_key_problem(self.secret, self.algorithms)
            if problem:
                raise ConfigError(f"HANDLER_KIT_JWT_SECRET: {problem}")


@dataclass(frozen=True)
class OperationsConfig:
    """Audit trail, metrics, tracing and idempotency: all off by default.

    ``audit_sinks``, ``tracer_provider`` and ``idempotency_store`` are objects given in code;
    the rest can also come from ``HANDLER_KIT_*`` variables. ``audit_durable`` sends each
    answer only once its audit record is committed (see :class:`AuditSink` for what a sink
    must then do, and ``docs/production.md`` for the cost).
    """

    audit: Sequence[str] = ()
    audit_sinks: Sequence[AuditSink] = ()
    audit_redact: Sequence[str] = ()
    audit_text: bool = False
    audit_tool_input: bool = True
    audit_input: Literal["policy", "full"] = "policy"
    audit_queue_size: int = DEFAULT_AUDIT_QUEUE_SIZE
    audit_on_full: Literal["block", "drop"] = "drop"
    audit_process: bool = True
    audit_durable: bool = False
    app_version: str | None = None
    replica: str | None = None
    metrics: bool = False
    metrics_dir: str | None = None
    otel: bool = False
    tracer_provider: TracerProvider | None = None
    idempotency_redis_url: str | None = field(default=None, repr=False)
    idempotency_keys: Sequence[str] = field(default=(), repr=False)
    idempotency_ttl: float = DEFAULT_IDEMPOTENCY_TTL
    idempotency_store: IdempotencyStore | None = None

    def __post_init__(self) -> None:
        _freeze(self, "audit", "audit_sinks", "audit_redact", "idempotency_keys")
        refuse_placeholders("HANDLER_KIT_AUDIT (or HANDLER_KIT_AUDIT_FILE)", self.audit)
        refuse_placeholders("HANDLER_KIT_IDEMPOTENCY_REDIS_URL", [self.idempotency_redis_url])
        refuse_placeholders(
            "HANDLER_KIT_IDEMPOTENCY_KEYS (or HANDLER_KIT_IDEMPOTENCY_KEYS_FILE)",
            self.idempotency_keys,
        )
        if self.idempotency_redis_url and not self.idempotency_keys:
            # a key made up by each process would not verify another replica's records, and
            # unsigned records let anything that reaches Redis plant an answer
            raise ConfigError(
                "HANDLER_KIT_IDEMPOTENCY_REDIS_URL is set without HANDLER_KIT_IDEMPOTENCY_KEYS: "
                "the idempotency store signs what it keeps in Redis with a key every replica "
                "shares; set HANDLER_KIT_IDEMPOTENCY_KEYS (or HANDLER_KIT_IDEMPOTENCY_KEYS_FILE) "
                "to a random value such as `openssl rand -hex 32` prints"
            )
        for position, key in enumerate(self.idempotency_keys, 1):
            if len(key) < MIN_IDEMPOTENCY_KEY_CHARS:
                raise ConfigError(
                    f"HANDLER_KIT_IDEMPOTENCY_KEYS: key {position} is {len(key)} characters "
                    f"long; each key must have at least {MIN_IDEMPOTENCY_KEY_CHARS} (such as "
                    "`openssl rand -hex 32` prints)"
                )
        if self.audit_on_full not in ("block", "drop"):
            raise ConfigError(
                f"audit_on_full must be 'block' or 'drop', not {self.audit_on_full!r}"
            )
        if self.audit_input not in ("policy", "full"):
            raise ConfigError(f"audit_input must be 'policy' or 'full', not {self.audit_input!r}")
        if self.audit_queue_size < 1:
            raise ConfigError(f"audit_queue_size must be at least 1, not {self.audit_queue_size}")

    @property
    def auditing(self) -> bool:
        return bool(self.audit or self.audit_sinks)

    @property
    def tracing(self) -> bool:
        return self.otel or self.tracer_provider is not None

    @property
    def enabled(self) -> bool:
        """True when any feature is on (idempotent handlers get a store regardless)."""
        return (
            self.auditing
            or self.metrics
            or self.tracing
            or self.idempotency_redis_url is not None
            or self.idempotency_store is not None
        )

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> OperationsConfig:
        return cls(**_read(_environ(environ), "operations"))


@dataclass(frozen=True)
class ServerConfig:
    """How a HookApp is served: authentication, the webhook, MCP, the inspector, operations.

    Authentication is ``auth`` (any :class:`~handler_kit.auth.BearerAuth`), else ``jwt``, else
    ``tokens``; with none the server refuses to start unless ``insecure_no_auth``.
    """

    tokens: Sequence[str] = field(default=(), repr=False)
    jwt: JWTConfig | None = None
    auth: BearerAuth | None = None
    insecure_no_auth: bool = False
    require_event_header: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    mcp: bool = True
    mcp_stateful: bool = False
    mcp_sse: bool = False
    mcp_fast_path: bool = True
    mcp_path: str = DEFAULT_MCP_PATH
    allowed_hosts: Sequence[str] = ()
    trusted_proxies: Sequence[str] = ()
    auth_failure_limit: int = DEFAULT_AUTH_FAILURE_LIMIT
    auth_failure_window: float = DEFAULT_AUTH_FAILURE_WINDOW
    inspector: bool = False
    inspector_secret: str | None = field(default=None, repr=False)
    cache_dir: str | None = None
    operations: OperationsConfig = field(default_factory=OperationsConfig)
    extensions: Sequence[Extension] = ()
    # shadow mode: a candidate app (MODULE:ATTR, imported in a process of its own) that answers
    # every answered event again, after the answer is sent
    shadow: str | None = None
    shadow_queue_size: int = DEFAULT_SHADOW_QUEUE_SIZE
    shadow_timeout: float = DEFAULT_SHADOW_TIMEOUT

    def __post_init__(self) -> None:
        _freeze(self, "tokens", "allowed_hosts", "trusted_proxies", "extensions")
        if self.shadow_queue_size < 1:
            raise ConfigError(f"shadow_queue_size must be at least 1, not {self.shadow_queue_size}")
        if not self.shadow_timeout > 0:
            raise ConfigError(f"shadow_timeout must be positive, not {self.shadow_timeout}")
        if self.shadow is not None and ":" not in self.shadow:
            raise ConfigError(
                f"HANDLER_KIT_SHADOW (serve --shadow): {self.shadow!r} is not MODULE:ATTR, "
                "the candidate HookApp (such as candidate:app)"
            )
        refuse_placeholders("HANDLER_KIT_TOKENS (or HANDLER_KIT_TOKENS_FILE)", self.tokens)
        refuse_placeholders("HANDLER_KIT_INSPECTOR_SECRET", [self.inspector_secret])
        for proxy in self.trusted_proxies:
            try:
                ipaddress.ip_network(proxy.strip(), strict=False)
            except ValueError:
                raise ConfigError(
                    f"HANDLER_KIT_TRUSTED_PROXIES: {proxy!r} is not an IP address or network "
                    "(like 10.0.0.5 or 10.0.0.0/8)"
                ) from None
        if self.auth_failure_limit < 1:
            raise ConfigError(
                f"auth_failure_limit must be at least 1, not {self.auth_failure_limit}"
            )
        if not self.auth_failure_window > 0:
            raise ConfigError(
                f"auth_failure_window must be positive, not {self.auth_failure_window}"
            )
        if self.jwt is not None and not isinstance(self.jwt, JWTConfig):
            # before this release ``jwt`` took a JWTAuth object; it belongs in ``auth`` now
            warnings.warn(
                "ServerConfig(jwt=JWTAuth(...)) is deprecated: pass auth=JWTAuth(...), or "
                "jwt=JWTConfig(...)",
                DeprecationWarning,
                stacklevel=3,
            )
            if self.auth is None:
                object.__setattr__(self, "auth", self.jwt)
            object.__setattr__(self, "jwt", None)
        if self.max_body_bytes < 1:
            raise ConfigError(f"max_body_bytes must be positive, not {self.max_body_bytes}")
        check_mcp_path(self.mcp_path)

    @classmethod
    def from_env(cls, environ: Environ | None = None, **overrides: Any) -> ServerConfig:
        """The configuration in ``HANDLER_KIT_*`` variables; keyword arguments replace fields
        (a name that is not a field is a ``TypeError``)."""
        env = _environ(environ)
        config = cls(
            **_read(env, "server"),
            jwt=_jwt_from_env(env),
            operations=OperationsConfig.from_env(env),
        )
        return dataclasses.replace(config, **overrides) if overrides else config

    def authenticator(self) -> BearerAuth | None:
        """The configured authenticator; refuses to serve with none unless told to."""
        if self.auth is not None:
            return self.auth
        if self.jwt is not None:
            from handler_kit.auth import JWTAuth

            key = self.jwt.secret
            if self.jwt.public_key_file:
                try:
                    key = Path(self.jwt.public_key_file).read_text(encoding="utf-8")
                except OSError as exc:
                    raise ConfigError(
                        f"HANDLER_KIT_JWT_PUBLIC_KEY_FILE: cannot read "
                        f"{self.jwt.public_key_file}: {exc.strerror or exc}"
                    ) from None
            return JWTAuth(
                algorithms=list(self.jwt.algorithms),
                key=key,
                jwks_url=self.jwt.jwks_url,
                audience=self.jwt.audience,
                issuer=self.jwt.issuer,
            )
        if self.tokens:
            from handler_kit.auth import StaticTokenAuth

            return StaticTokenAuth(self.tokens)
        if self.insecure_no_auth:
            return None
        raise ConfigError(
            "no authentication configured: set HANDLER_KIT_TOKENS (comma-separated bearer "
            "tokens), HANDLER_KIT_TOKENS_FILE or HANDLER_KIT_JWT_* variables; for local "
            "development only, HANDLER_KIT_INSECURE_NO_AUTH=1"
        )

    def own_secrets(self) -> tuple[str, ...]:
        """The secrets this server holds (its bearer tokens, its JWT HMAC secret, its inspector
        secret): the audit trail redacts them wherever a hook input repeats one. A value
        shorter than a bearer token may have to be is left out, not to blank common words."""
        candidates = [*self.tokens, self.jwt.secret if self.jwt else None, self.inspector_secret]
        return tuple(
            dict.fromkeys(
                value.strip()
                for value in candidates
                if value and len(value.strip()) >= MIN_SECRET_CHARS
            )
        )

    def user_cache_dir(self) -> Path:
        """Where handler-kit keeps files it makes for itself (the inspector's default store)."""
        return Path(self.cache_dir) if self.cache_dir else Path.home() / ".cache"


@dataclass(frozen=True)
class ServeConfig:
    """``handler-kit serve``: what to serve, where, and how."""

    app: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    tls_cert: str | None = None
    tls_key: str | None = None
    dev_tls_dir: str | None = None
    graceful_timeout: float = 10.0
    log_level: str = "info"
    log_format: str | None = None
    access_log: bool = False
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE_TIMEOUT
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    backlog: int = DEFAULT_BACKLOG
    # None: a share of max_connections (see unanswered_per_address)
    max_unanswered_per_address: int | None = None
    server: ServerConfig = field(default_factory=ServerConfig)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port must be 0-65535, not {self.port}")
        if self.workers < 1:
            raise ConfigError(f"workers must be at least 1, not {self.workers}")
        for name in ("max_connections", "max_header_bytes", "backlog"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        unanswered = self.max_unanswered_per_address
        if unanswered is not None and unanswered < 1:
            raise ConfigError(f"max_unanswered_per_address must be at least 1, not {unanswered}")
        for name in ("keep_alive_timeout", "header_timeout"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be more than 0 seconds, not {getattr(self, name)}")

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> ServeConfig:
        env = _environ(environ)
        return cls(**_read(env, "serve"), server=ServerConfig.from_env(env))

    def unanswered_per_address(self) -> int:
        """Connections one client address may hold open before their first answer (per
        worker): the setting, else a share of ``max_connections``."""
        if self.max_unanswered_per_address is not None:
            return self.max_unanswered_per_address
        return max(1, self.max_connections // UNANSWERED_PER_ADDRESS_SHARE)

    def dev_tls_folder(self) -> Path:
        """Where the development CA and certificate are cached."""
        if self.dev_tls_dir:
            return Path(self.dev_tls_dir)
        return self.server.user_cache_dir() / "handler-kit" / "dev-tls"


@dataclass(frozen=True)
class CommandConfig:
    """``handler-kit command``: a one-shot process per hook call."""

    debug: bool = False
    traceparent: str | None = None
    tmpdir: str | None = None
    operations: OperationsConfig = field(default_factory=OperationsConfig)

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> CommandConfig:
        env = _environ(environ)
        return cls(**_read(env, "command"), operations=OperationsConfig.from_env(env))


@dataclass(frozen=True)
class ClientConfig:
    """Commands that call a server (``send``, ``forward``): the one bearer token they send."""

    token: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(
        cls, environ: Environ | None = None, *, token_variable: str = CLIENT_TOKEN_VARIABLE
    ) -> ClientConfig:
        """The client settings; ``token_variable`` names another variable to take the token
        from (``handler-kit forward --token-env NAME``)."""
        env = _environ(environ)
        values = _read(env, "client")
        if token_variable != CLIENT_TOKEN_VARIABLE:
            raw = env.get(token_variable)
            values["token"] = parse_str(token_variable, raw) if raw and raw.strip() else None
        return cls(**values)


_MCP_PATH = re.compile(r"(/[A-Za-z0-9._~-]+)+")
# Paths the server answers itself: the MCP endpoint cannot take one (/hooks... all go to the
# webhook).
_OWN_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json", "/metrics"})


def check_mcp_path(path: str) -> None:
    """Refuse an MCP path that is not a plain absolute path, or that another route owns."""
    # a . or .. segment: a client or proxy that normalises the path sends another one
    if not _MCP_PATH.fullmatch(path) or {".", ".."} & set(path.split("/")):
        raise ConfigError(
            f"HANDLER_KIT_MCP_PATH must be an absolute path like /mcp or /internal/hook-tools "
            f"(letters, digits, . _ ~ -, no trailing /, no . or .. segment), got {path!r}"
        )
    if path.startswith("/hooks") or path in _OWN_PATHS or path.startswith("/_inspector"):
        raise ConfigError(f"HANDLER_KIT_MCP_PATH {path!r} is a path the server already answers")


# -- parsers: each takes (variable name, raw text) and refuses what it cannot read ------------

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_SIZE = re.compile(r"(\d+)\s*(b|kb|kib|mb|mib|gb|gib)?", re.I)
_SIZE_UNITS = {
    "b": 1,
    "kb": 1000,
    "kib": 1024,
    "mb": 1000**2,
    "mib": 1024**2,
    "gb": 1000**3,
    "gib": 1024**3,
}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?", re.I)
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_flag(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name} must be a flag (1/0, true/false, yes/no, on/off), got {raw!r}")


def parse_int(name: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None


def parse_port(name: str, raw: str) -> int:
    value = parse_int(name, raw)
    if not 0 <= value <= 65535:
        raise ConfigError(f"{name} must be a port number (0-65535), got {raw!r}")
    return value


def parse_positive_int(name: str, raw: str) -> int:
    value = parse_int(name, raw)
    if value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}")
    return value


def parse_size(name: str, raw: str) -> int:
    """Bytes: ``1048576``, ``1MiB``, ``512KiB``, ``2MB`` (KB/MB/GB are powers of 1000)."""
    match = _SIZE.fullmatch(raw.strip())
    if match is None or int(match.group(1)) < 1:
        raise ConfigError(
            f"{name} must be a positive size in bytes (like 1048576 or 1MiB), got {raw!r}"
        )
    return int(match.group(1)) * _SIZE_UNITS[(match.group(2) or "b").lower()]


def parse_duration(name: str, raw: str) -> float:
    """Seconds: ``30``, ``1.5``, ``250ms``, ``30s``, ``5m``, ``1h``."""
    match = _DURATION.fullmatch(raw.strip())
    if match is None:
        raise ConfigError(f"{name} must be a duration (like 30, 1.5s, 250ms, 5m), got {raw!r}")
    return float(match.group(1)) * _DURATION_UNITS[(match.group(2) or "s").lower()]


def parse_list(name: str, raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def parse_str(name: str, raw: str) -> str:
    return raw.strip()


def parse_log_level(name: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in LOG_LEVELS:
        raise ConfigError(f"{name} must be one of {', '.join(LOG_LEVELS)}, got {raw!r}")
    return value


def parse_log_format(name: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in LOG_FORMATS:
        raise ConfigError(f"{name} must be one of {', '.join(LOG_FORMATS)}, got {raw!r}")
    return value


def parse_on_full(name: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in ("block", "drop"):
        raise ConfigError(f"{name} must be 'block' or 'drop', got {raw!r}")
    return value


def parse_audit_input(name: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in ("policy", "full"):
        raise ConfigError(f"{name} must be 'policy' or 'full', got {raw!r}")
    return value


def _secret_file_text(name: str, raw: str) -> str:
    path = raw.strip()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigError(f"{name}: cannot read {path}: {reason}") from None


def parse_secret_file_list(name: str, raw: str) -> tuple[str, ...]:
    """The values held in the file named by ``raw``, separated by commas or new lines: a
    mounted secret (compose ``secrets:``, a Kubernetes Secret volume). The trailing newline
    that editors and ``echo`` add is no part of a value; the file's text is never shown."""
    text = _secret_file_text(name, raw)
    values = tuple(part.strip() for part in re.split(r"[,\r\n]", text) if part.strip())
    if not values:
        raise ConfigError(f"{name}: {raw.strip()} holds no value")
    return values


def parse_secret_file(name: str, raw: str) -> str:
    """The one value held in the file named by ``raw`` (a mounted secret), without the blanks
    and trailing newline around it; the file's text is never shown."""
    value = _secret_file_text(name, raw).strip()
    if not value:
        raise ConfigError(f"{name}: {raw.strip()} holds no value")
    if "\n" in value or "\r" in value:
        raise ConfigError(f"{name}: {raw.strip()} must hold one value, on one line")
    return value


# uvicorn's levels: "trace", below debug, logs every connection and ASGI message
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
# text: aligned lines for a person; json: one object per line for a log collector
LOG_FORMATS = ("text", "json")

# How each parser's values are shown and written back (``export_env``).
_KINDS: dict[Callable[[str, str], object], str] = {
    parse_flag: "flag",
    parse_int: "integer",
    parse_port: "port",
    parse_positive_int: "integer",
    parse_size: "size",
    parse_duration: "duration",
    parse_list: "list",
    parse_str: "text",
    parse_log_level: "level",
    parse_on_full: "choice",
    parse_audit_input: "choice",
    parse_log_format: "choice",
    parse_secret_file_list: "file",
    parse_secret_file: "file",
}


@dataclass(frozen=True)
class Setting:
    """One environment variable: where its value goes and how it is read."""

    env: str
    section: Literal["server", "jwt", "operations", "serve", "command", "client"]
    field: str
    parse: Callable[[str, str], object]
    help: str
    default: str = ""
    # the ``handler-kit serve`` option that sets it, if any
    option: str | None = None
    # a value that must never be printed or logged
    secret: bool = False
    # the name it had before, still read for one release (with a warning)
    old_name: str | None = None
    # the old name meant the opposite (HANDLER_KIT_NO_MCP=1 is HANDLER_KIT_MCP=0)
    old_inverted: bool = False
    # the variable whose value this one reads from a file (HANDLER_KIT_TOKENS_FILE)
    file_for: str | None = None

    @property
    def kind(self) -> str:
        return _KINDS[self.parse]

    def format(self, value: object) -> str:
        """The value as this variable's text (the inverse of ``parse``)."""
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, (tuple, list)):
            return ",".join(str(v) for v in value)
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    def describe(self) -> str:
        """One line for ``--help`` and the docs: the help, its default, its variable."""
        return f"{self.help} (default: {self.default or 'none'}; env {self.env})"


S = Setting
SETTINGS: tuple[Setting, ...] = (
    # -- the server
    S("HANDLER_KIT_TOKENS", "server", "tokens", parse_list,
      "bearer tokens the server accepts, comma-separated (16+ characters each)", secret=True),
    S("HANDLER_KIT_TOKENS_FILE", "server", "tokens", parse_secret_file_list,
      "file holding the bearer tokens, separated by commas or lines (a mounted secret); "
      "instead of HANDLER_KIT_TOKENS", file_for="HANDLER_KIT_TOKENS"),
    S("HANDLER_KIT_INSECURE_NO_AUTH", "server", "insecure_no_auth", parse_flag,
      "serve without authentication (local development only)", "0",
      option="--insecure-no-auth"),
    S("HANDLER_KIT_REQUIRE_EVENT_HEADER", "server", "require_event_header", parse_flag,
      "answer 400 to a webhook request without X-Runbear-Hook-Event", "0",
      option="--require-event-header"),
    S("HANDLER_KIT_MAX_BODY_BYTES", "server", "max_body_bytes", parse_size,
      "largest request body accepted (bytes, or 512KiB, 1MiB...)", "1MiB",
      option="--max-body-bytes"),
    S("HANDLER_KIT_MCP", "server", "mcp", parse_flag, "serve the handlers as MCP tools at /mcp",
      "1", old_name="HANDLER_KIT_NO_MCP", old_inverted=True),
    S("HANDLER_KIT_MCP_STATEFUL", "server", "mcp_stateful", parse_flag,
      "keep MCP sessions (Mcp-Session-Id) instead of answering each request on its own", "0"),
    S("HANDLER_KIT_MCP_SSE", "server", "mcp_sse", parse_flag,
      "answer MCP requests as Server-Sent Events instead of one JSON body", "0"),
    S("HANDLER_KIT_MCP_FAST_PATH", "server", "mcp_fast_path", parse_flag,
      "answer plain MCP tool calls without the SDK's per-request machinery", "1"),
    S("HANDLER_KIT_MCP_PATH", "server", "mcp_path", parse_str,
      "the path of the MCP endpoint (its hook tools): another path keeps them off an MCP "
      "integration that uses /mcp", DEFAULT_MCP_PATH),
    S("HANDLER_KIT_ALLOWED_HOSTS", "server", "allowed_hosts", parse_list,
      "Host headers accepted on /mcp besides loopback, comma-separated (* for any)",
      option="--allowed-host"),
    S("HANDLER_KIT_TRUSTED_PROXIES", "server", "trusted_proxies", parse_list,
      "reverse proxies whose X-Forwarded-For names the client, comma-separated addresses or "
      "networks (default: none, the connection's peer is the client)"),
    S("HANDLER_KIT_AUTH_FAILURE_LIMIT", "server", "auth_failure_limit", parse_positive_int,
      "failed authentications one client address may make per window before it gets 429s",
      str(DEFAULT_AUTH_FAILURE_LIMIT)),
    S("HANDLER_KIT_AUTH_FAILURE_WINDOW", "server", "auth_failure_window", parse_duration,
      "the window of that limit, and how often failures are summed up in the log",
      "60"),
    S("HANDLER_KIT_INSPECTOR", "server", "inspector", parse_flag,
      "serve the live /_inspector page of recent decisions (development)", "0",
      option="--inspector"),
    S("HANDLER_KIT_INSPECTOR_SECRET", "server", "inspector_secret", parse_str,
      "key that signs inspector session cookies, the same for every worker (default: random)",
      secret=True),
    S("HANDLER_KIT_SHADOW", "server", "shadow", parse_str,
      "shadow mode: a candidate HookApp (MODULE:ATTR) that answers every event again after "
      "the real answer is sent, in a process of its own; its decisions are recorded and "
      "counted, never sent", option="--shadow"),
    S("HANDLER_KIT_SHADOW_QUEUE_SIZE", "server", "shadow_queue_size", parse_positive_int,
      "answers handed to the shadow candidate and not yet answered, past which more are shed "
      "(and counted)", str(DEFAULT_SHADOW_QUEUE_SIZE)),
    S("HANDLER_KIT_SHADOW_TIMEOUT", "server", "shadow_timeout", parse_duration,
      "seconds a candidate answer may wait and run in all before it is given up (counted)",
      "5"),
    S("XDG_CACHE_HOME", "server", "cache_dir", parse_str,
      "where handler-kit keeps files it makes (inspector store, development CA)", "~/.cache"),
    # -- JWT
    S("HANDLER_KIT_JWT_ALGORITHMS", "jwt", "algorithms", parse_list,
      "accepted JWT algorithms, comma-separated (required with JWT: RS256, ES256, HS256...)"),
    S("HANDLER_KIT_JWT_SECRET", "jwt", "secret", parse_str,
      "HMAC key for HS* tokens", secret=True),
    S("HANDLER_KIT_JWT_PUBLIC_KEY_FILE", "jwt", "public_key_file", parse_str,
      "PEM file of the public key for RS*/PS*/ES*/EdDSA tokens"),
    S("HANDLER_KIT_JWT_JWKS_URL", "jwt", "jwks_url", parse_str,
      "JWKS URL the signing keys are fetched from"),
    S("HANDLER_KIT_JWT_AUDIENCE", "jwt", "audience", parse_str, "required aud claim"),
    S("HANDLER_KIT_JWT_ISSUER", "jwt", "issuer", parse_str, "required iss claim"),
    # -- operations
    S("HANDLER_KIT_AUDIT", "operations", "audit", parse_list,
      "audit sinks, comma-separated: stdout, stderr, jsonl:PATH, sqlite:PATH, "
      "postgresql://... (a database URL's password is never shown)", secret=True),
    S("HANDLER_KIT_AUDIT_FILE", "operations", "audit", parse_secret_file_list,
      "file holding the audit sinks, separated by commas or lines (a mounted secret, for a "
      "database URL with its password); instead of HANDLER_KIT_AUDIT",
      file_for="HANDLER_KIT_AUDIT"),
    S("HANDLER_KIT_AUDIT_REDACT", "operations", "audit_redact", parse_list,
      "more dotted input paths to redact in records, comma-separated"),
    S("HANDLER_KIT_AUDIT_TEXT", "operations", "audit_text", parse_flag,
      "also record prompt and last_assistant_message", "0"),
    S("HANDLER_KIT_AUDIT_TOOL_INPUT", "operations", "audit_tool_input", parse_flag,
      "record tool_input", "1"),
    S("HANDLER_KIT_AUDIT_INPUT", "operations", "audit_input", parse_audit_input,
      "what of the hook input a decision record keeps: policy (tool_input and ids; the texts "
      "with HANDLER_KIT_AUDIT_TEXT) or full (every field as received, redacted: what a "
      "replay needs)", "policy"),
    S("HANDLER_KIT_AUDIT_QUEUE_SIZE", "operations", "audit_queue_size", parse_positive_int,
      "answers the audit queue holds before its on-full policy applies",
      str(DEFAULT_AUDIT_QUEUE_SIZE), old_name="HANDLER_KIT_AUDIT_QUEUE"),
    S("HANDLER_KIT_AUDIT_ON_FULL", "operations", "audit_on_full", parse_on_full,
      "what a full audit queue does: drop (count and log) or block (wait, at most the "
      "handler's deadline)", "drop"),
    S("HANDLER_KIT_AUDIT_PROCESS", "operations", "audit_process", parse_flag,
      "build and write audit records in a writer process rather than a server thread", "1"),
    S("HANDLER_KIT_AUDIT_DURABLE", "operations", "audit_durable", parse_flag,
      "send an answer only once its audit record is committed (fsync), one commit per group "
      "of answers; past the deadline the failure policy answers (deny, or a 503)", "0"),
    S("HANDLER_KIT_APP_VERSION", "operations", "app_version", parse_str,
      "the app's version (a release, an image tag), written in every audit record"),
    S("HANDLER_KIT_REPLICA", "operations", "replica", parse_str,
      "the name of this server among its replicas, written in every audit record",
      "hostname:pid of the server"),
    S("HANDLER_KIT_METRICS", "operations", "metrics", parse_flag, "serve /metrics", "0"),
    S("PROMETHEUS_MULTIPROC_DIR", "operations", "metrics_dir", parse_str,
      "folder where worker processes share metric values (serve --workers sets one up)"),
    S("HANDLER_KIT_OTEL", "operations", "otel", parse_flag,
      "one OpenTelemetry span per handler run", "0"),
    S("HANDLER_KIT_IDEMPOTENCY_REDIS_URL", "operations", "idempotency_redis_url", parse_str,
      "Redis URL of the idempotency store shared by workers and replicas", secret=True),
    S("HANDLER_KIT_IDEMPOTENCY_KEYS", "operations", "idempotency_keys", parse_list,
      "MAC keys of the records in the Redis idempotency store, comma-separated, the same on "
      "every replica (required with the Redis store; the first signs, every one verifies: "
      f"add a new key first to rotate; {MIN_IDEMPOTENCY_KEY_CHARS}+ characters each)",
      secret=True),
    S("HANDLER_KIT_IDEMPOTENCY_KEYS_FILE", "operations", "idempotency_keys",
      parse_secret_file_list,
      "file holding the idempotency MAC keys, separated by commas or lines (a mounted "
      "secret); instead of HANDLER_KIT_IDEMPOTENCY_KEYS",
      file_for="HANDLER_KIT_IDEMPOTENCY_KEYS"),
    S("HANDLER_KIT_IDEMPOTENCY_REDIS_URL_FILE", "operations", "idempotency_redis_url",
      parse_secret_file,
      "file holding the Redis URL (a mounted secret, for a URL with its password); instead "
      "of HANDLER_KIT_IDEMPOTENCY_REDIS_URL", file_for="HANDLER_KIT_IDEMPOTENCY_REDIS_URL"),
    S("HANDLER_KIT_IDEMPOTENCY_TTL", "operations", "idempotency_ttl", parse_duration,
      "how long an idempotent answer is replayed (seconds, or 30m, 1h...)", "3600"),
    # -- handler-kit serve
    S("HANDLER_KIT_APP", "serve", "app", parse_str, "the HookApp to serve, as MODULE:ATTR"),
    S("HANDLER_KIT_HOST", "serve", "host", parse_str, "address to listen on", "127.0.0.1",
      option="--host"),
    S("HANDLER_KIT_PORT", "serve", "port", parse_port, "port to listen on", "8000",
      option="--port"),
    S("HANDLER_KIT_WORKERS", "serve", "workers", parse_positive_int,
      "worker processes behind the one port", "1", option="--workers"),
    S("HANDLER_KIT_TLS_CERT", "serve", "tls_cert", parse_str, "PEM certificate (chain) for HTTPS",
      option="--tls-cert"),
    S("HANDLER_KIT_TLS_KEY", "serve", "tls_key", parse_str, "PEM private key for HTTPS",
      option="--tls-key"),
    S("HANDLER_KIT_DEV_TLS_DIR", "serve", "dev_tls_dir", parse_str,
      "where --dev-tls keeps its CA and certificate", "$XDG_CACHE_HOME/handler-kit/dev-tls"),
    S("HANDLER_KIT_GRACEFUL_TIMEOUT", "serve", "graceful_timeout", parse_duration,
      "seconds in-flight requests get to finish on SIGTERM", "10", option="--graceful-timeout"),
    S("HANDLER_KIT_LOG_LEVEL", "serve", "log_level", parse_log_level,
      "log level: critical, error, warning, info, debug, trace", "info",
      option="--log-level"),
    S("HANDLER_KIT_LOG_FORMAT", "serve", "log_format", parse_log_format,
      "log one line per decision (logger handler_kit.decisions, at INFO), and every log line, "
      "as text (aligned, for a terminal) or json (one object per line); unset: no decision "
      "lines, text logs", option="--log-format"),
    S("HANDLER_KIT_ACCESS_LOG", "serve", "access_log", parse_flag,
      "log one line per request (the audit trail already records every decision)", "0",
      option="--access-log"),
    S("HANDLER_KIT_MAX_CONNECTIONS", "serve", "max_connections", parse_positive_int,
      "open connections (or requests in progress) per worker past which a request is "
      "answered 503", str(DEFAULT_MAX_CONNECTIONS), option="--max-connections"),
    S("HANDLER_KIT_KEEP_ALIVE_TIMEOUT", "serve", "keep_alive_timeout", parse_duration,
      "seconds a connection may send nothing, before its first request or after a response, "
      "before it is closed", "5", option="--keep-alive-timeout"),
    S("HANDLER_KIT_HEADER_TIMEOUT", "serve", "header_timeout", parse_duration,
      "seconds a request line and its headers may take to arrive from their first byte "
      "(then 408)", "10", option="--header-timeout"),
    S("HANDLER_KIT_MAX_HEADER_BYTES", "serve", "max_header_bytes", parse_size,
      "largest request line and headers accepted (then 431; bytes, or 16KiB...)", "32KiB",
      option="--max-header-bytes"),
    S("HANDLER_KIT_MAX_UNANSWERED_PER_ADDRESS", "serve", "max_unanswered_per_address",
      parse_positive_int,
      "connections per worker from one client address (an IPv6 /64) that have not had an "
      "answer yet, past which a new one from it is answered 429 and closed; behind a reverse "
      "proxy every connection comes from the proxy: set it to --max-connections and let the "
      "proxy limit each client (docs/production.md)",
      f"a {UNANSWERED_PER_ADDRESS_SHARE}th of --max-connections",
      option="--max-unanswered-per-address"),
    S("HANDLER_KIT_BACKLOG", "serve", "backlog", parse_positive_int,
      "connections the kernel queues for the server before it accepts them",
      str(DEFAULT_BACKLOG)),
    # -- handler-kit command
    S("HANDLER_KIT_DEBUG", "command", "debug", parse_flag,
      "command hooks log at DEBUG level, with full tracebacks", "0"),
    S("TRACEPARENT", "command", "traceparent", parse_str,
      "W3C trace context a parent process hands to a command hook"),
    S("TMPDIR", "command", "tmpdir", parse_str,
      "where a command hook keeps the scratch file that catches a handler's print()", "/tmp"),
    # -- clients
    S(CLIENT_TOKEN_VARIABLE, "client", "token", parse_str,
      "the bearer token `send` and `forward` send (and the variable generated documents "
      "refer to)",
      secret=True),
)  # fmt: skip
del S

BY_ENV: Mapping[str, Setting] = {setting.env: setting for setting in SETTINGS}


def setting_for(section: str, field_name: str) -> Setting:
    """The setting behind ``section.field_name`` (for help texts and messages)."""
    for setting in SETTINGS:
        if setting.section == section and setting.field == field_name:
            return setting
    raise KeyError(f"{section}.{field_name}")


def _environ(environ: Environ | None) -> Environ:
    return os.environ if environ is None else environ


def _raw(env: Environ, setting: Setting) -> str | None:
    """The variable's text, from its name or, with a warning, its old name."""
    raw = env.get(setting.env)
    if raw is not None and raw.strip():
        return raw
    if setting.old_name is None:
        return None
    old = env.get(setting.old_name)
    if old is None or not old.strip():
        return None
    replacement = setting.env
    if setting.old_inverted:
        old = "0" if parse_flag(setting.old_name, old) else "1"
        replacement = f"{setting.env}={old}"
    warnings.warn(
        f"{setting.old_name} is deprecated and will stop working in the next release: "
        f"use {replacement}",
        DeprecatedSetting,
        stacklevel=2,
    )
    return old


def _read(env: Environ, section: str) -> dict[str, Any]:
    """The fields of ``section`` that the environment sets, parsed."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.section != section:
            continue
        raw = _raw(env, setting)
        if raw is None:
            continue
        value = setting.parse(setting.env, raw)
        if setting.file_for is not None and setting.field in values:
            # ``serve`` hands the values it read to its workers under the plain variable, so
            # both arrive there, equal; different values are two sources of truth
            if values[setting.field] != value:
                raise ConfigError(
                    f"{setting.file_for} and {setting.env} are both set, to different "
                    "values: set one of them"
                )
            continue
        values[setting.field] = value
    return values


def _jwt_from_env(env: Environ) -> JWTConfig | None:
    values = _read(env, "jwt")
    if not any(values.get(key) for key in ("secret", "public_key_file", "jwks_url")):
        if values:
            named = ", ".join(setting_for("jwt", key).env for key in values)
            raise ConfigError(
                f"{named} set without a JWT key: set HANDLER_KIT_JWT_SECRET, "
                "HANDLER_KIT_JWT_PUBLIC_KEY_FILE or HANDLER_KIT_JWT_JWKS_URL"
            )
        return None
    if not values.get("algorithms"):
        raise ConfigError("HANDLER_KIT_JWT_ALGORITHMS is required with JWT auth (e.g. RS256)")
    return JWTConfig(**values)


_SECTIONS: dict[str, Callable[[ServeConfig], object]] = {
    "serve": lambda c: c,
    "server": lambda c: c.server,
    "jwt": lambda c: c.server.jwt,
    "operations": lambda c: c.server.operations,
}


def export_env(config: ServeConfig) -> dict[str, str]:
    """The variables that make :meth:`ServeConfig.from_env` rebuild ``config``: how ``serve``
    hands its configuration to worker processes. Objects given in code (``auth``,
    ``audit_sinks``...) have no variable and are refused."""
    server = config.server
    if server.auth is not None or server.extensions:
        raise ConfigError("auth objects and extensions cannot be passed to worker processes")
    if server.shadow is not None and not isinstance(server.shadow, str):
        raise ConfigError(
            "a shadow HookApp object cannot be passed to worker processes: name it as MODULE:ATTR"
        )
    ops = server.operations
    if ops.audit_sinks or ops.tracer_provider is not None or ops.idempotency_store is not None:
        raise ConfigError("operations objects cannot be passed to worker processes")
    defaults = {
        "serve": ServeConfig(),
        "server": ServerConfig(),
        "jwt": None,
        "operations": OperationsConfig(),
    }
    out: dict[str, str] = {}
    for setting in SETTINGS:
        pick = _SECTIONS.get(setting.section)
        if pick is None or setting.file_for is not None:
            # a value read from a file travels under its plain variable
            continue
        holder = pick(config)
        if holder is None:
            continue
        value = getattr(holder, setting.field)
        default_holder = defaults[setting.section]
        if default_holder is not None and value == getattr(default_holder, setting.field):
            continue
        if value is None:
            continue
        out[setting.env] = setting.format(value)
    return out


def settings_table() -> str:
    """The Markdown table of every setting, as docs/configuration.md shows it."""
    titles = {
        "server": "Server",
        "jwt": "JWT authentication",
        "operations": "Operations",
        "serve": "`handler-kit serve`",
        "command": "`handler-kit command`",
        "client": "Clients",
    }
    lines: list[str] = []
    for section, title in titles.items():
        lines += [f"### {title}", "", "| variable | field | kind | default | meaning |"]
        lines.append("|---|---|---|---|---|")
        for setting in SETTINGS:
            if setting.section != section:
                continue
            name = f"`{setting.env}`"
            if setting.old_name:
                name += f" (was `{setting.old_name}`)"
            option = f"; `serve {setting.option}`" if setting.option else ""
            secret = " Secret: never logged." if setting.secret else ""
            default = f"`{setting.default}`" if setting.default else ""
            lines.append(
                f"| {name} | `{setting.field}` | {setting.kind} | {default} | "
                f"{setting.help}{option}.{secret} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _freeze(instance: object, *names: str) -> None:
    """Store sequence fields as tuples: a frozen config holds nothing a caller can mutate."""
    for name in names:
        value = getattr(instance, name)
        if value is not None and not isinstance(value, tuple):
            if isinstance(value, str):
                raise ConfigError(f"{name} must be a list, not the string {value!r}")
            object.__setattr__(instance, name, tuple(value))
