"""``handler-kit serve MODULE:ATTR``: run a HookApp on uvicorn, with TLS and workers.

The configuration is read once, here: the environment (:meth:`ServeConfig.from_env`), then
the command-line options over it. Every worker process builds its app from the environment
(:func:`handler_kit.server.app.app_from_env`), so the result is handed to the workers through
:func:`~handler_kit.config.export_env`: one channel whether one process or several. The app is
built once in this process first, so an import error or a missing token is reported before any
worker starts.

Each option's help is its setting's help (:data:`handler_kit.config.SETTINGS`), with its default
and its variable, so ``--help`` and the docs cannot disagree.

Every refusal is one line on stderr and exit status 2, before anything says it is serving: a
bad setting, a module that does not import (a syntax error adds its line and a caret), a
feature whose extra is not installed (with the ``pip install`` line), a port already in use.
``handler-kit dev`` (:mod:`handler_kit.cli.dev`) goes through the same checks.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import errno
import logging
import logging.config
import math
import os
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handler_kit.config import (
    ConfigError,
    ServeConfig,
    environment,
    export_env,
    parse_duration,
    parse_log_format,
    parse_log_level,
    parse_port,
    parse_positive_int,
    parse_size,
    setting_for,
)

if TYPE_CHECKING:
    from handler_kit.core.app import HookApp

logger = logging.getLogger("handler_kit.serve")

# option -> (config section, field, argparse keywords)
_VALUE_OPTIONS: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("--host", "serve", "host", {}),
    ("--port", "serve", "port", {"type": lambda v: parse_port("--port", v)}),
    ("--workers", "serve", "workers", {"type": lambda v: parse_positive_int("--workers", v)}),
    ("--tls-cert", "serve", "tls_cert", {"metavar": "PEM"}),
    ("--tls-key", "serve", "tls_key", {"metavar": "PEM"}),
    (
        "--graceful-timeout",
        "serve",
        "graceful_timeout",
        {"type": lambda v: parse_duration("--graceful-timeout", v), "metavar": "SECONDS"},
    ),
    ("--log-level", "serve", "log_level", {"type": lambda v: parse_log_level("--log-level", v)}),
    (
        "--log-format",
        "serve",
        "log_format",
        {"type": lambda v: parse_log_format("--log-format", v), "metavar": "{text,json}"},
    ),
    (
        "--max-body-bytes",
        "server",
        "max_body_bytes",
        {"type": lambda v: parse_size("--max-body-bytes", v), "metavar": "SIZE"},
    ),
    ("--shadow", "server", "shadow", {"metavar": "MODULE:ATTR"}),
    (
        "--max-connections",
        "serve",
        "max_connections",
        {"type": lambda v: parse_positive_int("--max-connections", v), "metavar": "N"},
    ),
    (
        "--keep-alive-timeout",
        "serve",
        "keep_alive_timeout",
        {"type": lambda v: parse_duration("--keep-alive-timeout", v), "metavar": "SECONDS"},
    ),
    (
        "--header-timeout",
        "serve",
        "header_timeout",
        {"type": lambda v: parse_duration("--header-timeout", v), "metavar": "SECONDS"},
    ),
    (
        "--max-header-bytes",
        "serve",
        "max_header_bytes",
        {"type": lambda v: parse_size("--max-header-bytes", v), "metavar": "SIZE"},
    ),
    (
        "--max-unanswered-per-address",
        "serve",
        "max_unanswered_per_address",
        {
            "type": lambda v: parse_positive_int("--max-unanswered-per-address", v),
            "metavar": "N",
        },
    ),
)
# flags that turn a setting on
_FLAG_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("--access-log", "serve", "access_log"),
    ("--require-event-header", "server", "require_event_header"),
    ("--insecure-no-auth", "server", "insecure_no_auth"),
    ("--inspector", "server", "inspector"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="MODULE:ATTR", help="the HookApp to serve")
    for option, section, name, extra in _VALUE_OPTIONS:
        setting = setting_for(section, name)
        if "type" in extra:
            extra = {**extra, "type": _usage_checked(extra["type"])}
        parser.add_argument(option, default=None, help=setting.describe(), **extra)
    for option, section, name in _FLAG_OPTIONS:
        setting = setting_for(section, name)
        parser.add_argument(option, action="store_true", default=None, help=setting.describe())
    hosts = setting_for("server", "allowed_hosts")
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=None,
        metavar="HOST",
        help=f"{hosts.describe()}; repeatable: example.com, host:port, or *",
    )
    mcp = setting_for("server", "mcp")
    parser.add_argument(
        "--no-mcp",
        action="store_true",
        default=None,
        help=f"do not serve /mcp (default: served; env {mcp.env}=0)",
    )
    parser.add_argument(
        "--dev-tls",
        action="store_true",
        help="serve HTTPS with a cached self-signed CA for localhost (development only; "
        f"default: off; kept in {setting_for('serve', 'dev_tls_dir').default}, "
        "env HANDLER_KIT_DEV_TLS_DIR)",
    )
    add_env_file_argument(parser)


def add_env_file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env-file",
        metavar="PATH",
        default=None,
        help="read NAME=VALUE lines (# comments, optional quotes, optional 'export') into the "
        "environment first; a variable already set in the environment wins (default: none)",
    )


def _usage_checked(parse: Any) -> Any:
    """``parse`` as an argparse type whose refusal is the setting's own message (naming the
    option and what it takes): argparse shows a type's message only for ArgumentTypeError,
    and for a ValueError only the function's name, such as ``invalid <lambda> value``."""

    def check(raw: str) -> Any:
        try:
            return parse(raw)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return check


def configure(args: argparse.Namespace, base: ServeConfig) -> ServeConfig:
    """``base`` (the environment's configuration) with the options given on the command line."""
    changes: dict[str, dict[str, Any]] = {"serve": {}, "server": {}}
    for option, section, name, _ in _VALUE_OPTIONS:
        value = getattr(args, option[2:].replace("-", "_"))
        if value is not None:
            changes[section][name] = value
    for option, section, name in _FLAG_OPTIONS:
        if getattr(args, option[2:].replace("-", "_")):
            changes[section][name] = True
    if args.allowed_host:
        changes["server"]["allowed_hosts"] = tuple(args.allowed_host)
    if args.no_mcp:
        changes["server"]["mcp"] = False
    server = dataclasses.replace(base.server, **changes["server"])
    return dataclasses.replace(base, app=args.target, server=server, **changes["serve"])


def run(args: argparse.Namespace) -> int:
    try:
        load_env_file(args.env_file)
        config = configure(args, ServeConfig.from_env())
    except ConfigError as exc:
        return _fail(str(exc))
    return start(config, "serve", dev_tls=args.dev_tls)


def start(
    config: ServeConfig,
    command: str,
    *,
    dev_tls: bool = False,
    reload: bool = False,
    banner: Callable[[HookApp], Sequence[str]] | None = None,
    reloader: Callable[[Path], Any] | None = None,
) -> int:
    """Check everything that can be checked in this process, say where it serves, then run
    uvicorn until it stops. ``reload``: ``handler-kit dev``'s restart on a change to the
    app's folder; ``banner``: the lines it adds, printed once serving is certain."""

    def fail(message: str, detail: str = "") -> int:
        return _fail(message, detail, command)

    target = config.app
    assert target is not None
    log_config = logging_config(config.log_level, config.log_format)
    logging.config.dictConfig(log_config)
    config = _shared_by_the_workers(config)
    server = config.server

    cert, key = config.tls_cert, config.tls_key
    problem = _tls_problem(cert, key, dev_tls) or port_problem(config.host, config.port)
    if problem is not None:  # first: they cost nothing
        return fail(problem)
    from handler_kit.core.loader import LoadError, load_app
    from handler_kit.server.app import create_asgi_app, describe_routes

    try:
        hook_app = load_app(target)
    except LoadError as exc:
        return fail(str(exc), exc.detail)
    problem = missing_extra(config, hook_app)
    if problem is None:
        try:
            create_asgi_app(hook_app, server)  # fail here, not in each worker
        except (ConfigError, ValueError) as exc:
            problem = str(exc)
    if problem is not None:
        return fail(problem)
    if dev_tls:
        from handler_kit.server.dev_tls import ensure_dev_certificate

        dev = ensure_dev_certificate(config.dev_tls_folder())
        cert, key = str(dev.cert_file), str(dev.key_file)
        _say(config, f"Development TLS: trust this CA with  curl --cacert {dev.ca_file}")
    # the workers rebuild exactly this configuration from their environment
    os.environ.update(export_env(config))
    if server.insecure_no_auth:
        if config.log_format == "json":
            logger.warning("serving WITHOUT authentication")
        else:
            print("WARNING: serving WITHOUT authentication", file=sys.stderr, flush=True)
    base = f"{'https' if cert else 'http'}://{config.host}:{config.port}"
    _say(config, f"{hook_app.name}: {base}")
    for route in describe_routes(hook_app, server):
        _say(config, f"  {route}")
    if server.inspector:
        _say(config, f"  inspector: {base}/_inspector")
    for line in banner(hook_app) if banner is not None else ():
        _say(config, line)
    options = _uvicorn_options(config, log_config, cert, key)
    _run_uvicorn(target, options, reload=reload, reloader=reloader)
    return 0


def _shared_by_the_workers(config: ServeConfig) -> ServeConfig:
    """``config`` with what every worker must share and nobody set made here, once: the
    inspector's secret (its session cookies verify in every worker), a metrics folder for
    several workers (their values add up; removed on exit), the audit replica name."""
    server = config.server
    if server.inspector and not server.inspector_secret:
        import secrets

        server = dataclasses.replace(server, inspector_secret=secrets.token_urlsafe(32))
    if server.operations.metrics and config.workers > 1 and not server.operations.metrics_dir:
        folder = tempfile.mkdtemp(prefix="handler-kit-metrics-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        operations = dataclasses.replace(server.operations, metrics_dir=folder)
        server = dataclasses.replace(server, operations=operations)
    if server.operations.auditing and not server.operations.replica:
        # records also carry their pid
        from handler_kit.ops.audit.records import default_replica

        operations = dataclasses.replace(server.operations, replica=default_replica())
        server = dataclasses.replace(server, operations=operations)
    return dataclasses.replace(config, server=server)


def _tls_problem(cert: str | None, key: str | None, dev_tls: bool) -> str | None:
    if dev_tls and (cert or key):
        return "--dev-tls and --tls-cert/--tls-key exclude each other"
    if bool(cert) != bool(key):
        return "--tls-cert and --tls-key go together"
    for path in (cert, key):
        if path and not os.path.isfile(path):
            return f"TLS file not found: {path}"
    return None


def _uvicorn_options(
    config: ServeConfig, log_config: dict[str, Any], cert: str | None, key: str | None
) -> dict[str, Any]:
    """``uvicorn.run``'s options for ``config`` (the app factory is given apart)."""
    from handler_kit.server._protocols import protocol_class

    return dict(
        factory=True,
        host=config.host,
        port=config.port,
        workers=config.workers if config.workers > 1 else None,
        ssl_certfile=cert,
        ssl_keyfile=key,
        log_level=config.log_level,
        log_config=log_config,
        timeout_graceful_shutdown=math.ceil(config.graceful_timeout),
        # a worker importing the app under load can take more than uvicorn's default 5 s
        timeout_worker_healthcheck=30,
        access_log=config.access_log,
        proxy_headers=False,
        server_header=False,
        # connection limits (docs/production.md): what uvicorn has, and what its protocol
        # lacks (an idle timer from the start, a head timeout and size) in a subclass
        limit_concurrency=config.max_connections,
        backlog=config.backlog,
        timeout_keep_alive=math.ceil(config.keep_alive_timeout),
        http=protocol_class(
            keep_alive=config.keep_alive_timeout,
            head_timeout=config.header_timeout,
            max_head_bytes=config.max_header_bytes,
            max_unanswered=config.unanswered_per_address(),
        ),
    )


def _run_uvicorn(
    target: str,
    options: dict[str, Any],
    *,
    reload: bool,
    reloader: Callable[[Path], Any] | None,
) -> None:
    """uvicorn until it stops: the server's app factory, or with ``reload`` dev's."""
    import uvicorn

    if not reload:
        uvicorn.run("handler_kit.server.app:app_from_env", **options)
        return
    # uvicorn.run's reload path, with dev's own watcher (reloader) in place of uvicorn's
    from uvicorn.supervisors import ChangeReload

    factory = "handler_kit.cli.dev:app_factory"
    watched = watched_folder(target)
    uvicorn_config = uvicorn.Config(factory, reload=True, reload_dirs=[str(watched)], **options)
    server = uvicorn.Server(uvicorn_config)
    socket_ = uvicorn_config.bind_socket()
    supervisor = reloader(watched) if reloader is not None else ChangeReload
    with contextlib.suppress(KeyboardInterrupt):
        supervisor(uvicorn_config, target=server.run, sockets=[socket_]).run()


def _say(config: ServeConfig, line: str) -> None:
    """A start-up line: printed for a person, or a log record when every line is JSON."""
    if config.log_format == "json":
        logger.info(line.strip())
    else:
        print(line, flush=True)


# -- the checks made before serving ------------------------------------------------------------

# (modules to import, extra): what each optional feature needs
_METRICS = (("prometheus_client",), "metrics")
_TRACING = (("opentelemetry.trace",), "otel")
_REDIS = (("redis.asyncio",), "redis")
_POSTGRES = (("psycopg", "psycopg_pool"), "postgres")


def missing_extra(config: ServeConfig, hook_app: HookApp) -> str | None:
    """The line saying which configured feature lacks its extra, with the command that
    installs it; None when every one imports. Checked once here: otherwise metrics fail with
    a traceback at start-up, and a Redis idempotency store only on the first call."""
    operations = config.server.operations
    wanted: list[tuple[str, tuple[tuple[str, ...], str]]] = []
    if operations.metrics:
        wanted.append((f"{setting_for('operations', 'metrics').env}=1", _METRICS))
    if operations.otel:
        wanted.append((f"{setting_for('operations', 'otel').env}=1", _TRACING))
    if operations.idempotency_redis_url and any(h.idempotent for h in hook_app.handlers):
        wanted.append((setting_for("operations", "idempotency_redis_url").env, _REDIS))
    if any(s.strip().startswith(("postgresql://", "postgres://")) for s in operations.audit):
        # the URL holds a password: named by its scheme only
        audit = setting_for("operations", "audit").env
        wanted.append((f"{audit}=postgresql://...", _POSTGRES))
    for what, (modules, extra) in wanted:
        for module in modules:
            try:
                __import__(module)
            except Exception:  # ImportError, or a broken install failing in its own way
                return f"{what} needs the {extra} extra: pip install 'handler-kit[{extra}]'"
    return None


def port_problem(host: str, port: int) -> str | None:
    """Why uvicorn could not listen on ``host:port``, found by binding it as uvicorn will
    (and letting go): a port in use is one line here, not an errno logged after the banner."""
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return f"port {port} is in use; pass --port"
        if exc.errno == errno.EACCES:
            return f"port {port} needs privileges on this system; pass --port (1024 or above)"
        reason = exc.strerror or str(exc)
        return f"cannot listen on {host}:{port}: {reason}; pass --host or --port"
    return None


def watched_folder(target: str) -> Path:
    """The folder ``handler-kit dev`` watches: the app's top-level package, or the folder of
    a plain module (already imported by the checks)."""
    top = target.partition(":")[0].split(".")[0]
    module = sys.modules.get(top)
    file = getattr(module, "__file__", None)
    if not file:
        return Path.cwd()
    # a package's __init__.py sits in the package's folder, a module in its project's
    return Path(file).resolve().parent


# -- the environment file and logging ---------------------------------------------------------


# An environment file is a few settings and secrets: a larger one is a mistake (a log, a
# device, a FIFO that never ends), read no further.
ENV_FILE_MAX_BYTES = 1024 * 1024
# Variables an environment file does not set: they change which code Python, the dynamic
# loader and the worker processes load (PYTHONWARNINGS names warning classes to import), and
# would take effect in the workers and the reloader but not in this process. Set them, if at
# all, in the environment that starts handler-kit.
_LOADER_PREFIXES = ("LD_", "DYLD_", "PYTHON")
_HARMLESS_PYTHON = frozenset(
    {"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8"}
)


def read_env_file(path: str) -> dict[str, str]:
    """The ``NAME=VALUE`` lines of ``path``: blank lines and ``#`` comments skipped, an
    ``export`` prefix and one pair of surrounding quotes removed. Values are never shown in
    a message: the file usually holds tokens. A file that is not a regular file, or is over
    :data:`ENV_FILE_MAX_BYTES`, is refused, as are the loader's variables (``LD_*``,
    ``DYLD_*``, ``PYTHON*`` but for a few harmless ones)."""
    try:
        # before opening: opening a FIFO waits for a writer
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ConfigError(f"--env-file: {path} is not a regular file")
        with open(path, "rb") as file:
            data = file.read(ENV_FILE_MAX_BYTES + 1)
        if len(data) > ENV_FILE_MAX_BYTES:
            raise ConfigError(
                f"--env-file: {path} is over {ENV_FILE_MAX_BYTES // 1024} KiB: not an "
                "environment file"
            )
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigError(f"--env-file: cannot read {path}: {reason}") from None
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ConfigError(f"--env-file: {path}, line {number}: expected NAME=VALUE")
        if name.startswith(_LOADER_PREFIXES) and name not in _HARMLESS_PYTHON:
            raise ConfigError(
                f"--env-file: {path}, line {number}: {name} changes the code Python and the "
                "worker processes load; set it in the environment that starts handler-kit"
            )
        if "\x00" in value:
            raise ConfigError(f"--env-file: {path}, line {number}: the value holds a NUL")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name] = value
    return values


def load_env_file(path: str | None) -> None:
    """Put the variables of ``path`` into this process's environment, which the settings,
    the workers and the user's app read; a variable already set keeps its value."""
    if not path:
        return
    current = environment()
    os.environ.update(
        {name: value for name, value in read_env_file(path).items() if name not in current}
    )


def logging_config(level: str, log_format: str | None) -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of a serve process and each of its workers (uvicorn
    applies it in both): uvicorn's own lines as uvicorn writes them, handler-kit's as
    ``LEVEL logger: message`` and each decision as one aligned line, or, with ``json``,
    every line of every logger as one JSON object."""
    from uvicorn.config import LOGGING_CONFIG
    from uvicorn.logging import TRACE_LOG_LEVEL

    # uvicorn's level below DEBUG: logging knows its name only once it is defined
    logging.addLevelName(TRACE_LOG_LEVEL, "TRACE")
    numeric = TRACE_LOG_LEVEL if level == "trace" else getattr(logging, level.upper())
    config: dict[str, Any] = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {name: dict(f) for name, f in LOGGING_CONFIG["formatters"].items()},
        "handlers": {name: dict(h) for name, h in LOGGING_CONFIG["handlers"].items()},
        "loggers": {name: dict(lg) for name, lg in LOGGING_CONFIG["loggers"].items()},
    }
    if log_format == "json":
        json_formatter = {"()": "handler_kit.ops.decisions.JsonLogFormatter"}
        config["formatters"] = {"default": json_formatter, "access": json_formatter}
        config["formatters"]["handler_kit"] = json_formatter
    else:
        config["formatters"]["handler_kit"] = {"()": "handler_kit.ops.decisions.TextLogFormatter"}
    config["handlers"]["handler_kit"] = {
        "formatter": "handler_kit",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    # every other logger (handler-kit's, the app's, libraries') reaches the root's handler
    config["root"] = {"handlers": ["handler_kit"], "level": numeric}
    # the reloader's own count of changed files says nothing uvicorn does not say better
    config["loggers"]["watchfiles"] = {"level": "WARNING"}
    return config


def _fail(message: str, detail: str = "", command: str = "serve") -> int:
    print(f"handler-kit {command}: {message}", file=sys.stderr)
    if detail:
        print(detail, file=sys.stderr)
    return 2
