"""``handler-kit serve MODULE:ATTR``: run a HookApp on uvicorn, with TLS and workers.

The configuration is read once, here: the environment (:meth:`ServeConfig.from_env`), then
the command-line options over it. Every worker process builds its app from the environment
(:func:`handler_kit.server.app.app_from_env`), so the result is handed to the workers through
:func:`~handler_kit.config.export_env`: one channel whether one process or several. The app is
built once in this process first, so an import error or a missing token is reported before any
worker starts.

Each option's help is its setting's help (:data:`handler_kit.config.SETTINGS`), with its default
and its variable, so ``--help`` and the docs cannot disagree.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import logging
import math
import os
import shutil
import sys
import tempfile
from typing import Any

from handler_kit.config import (
    ConfigError,
    ServeConfig,
    export_env,
    parse_duration,
    parse_log_level,
    parse_port,
    parse_positive_int,
    parse_size,
    setting_for,
)

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
        "--max-body-bytes",
        "server",
        "max_body_bytes",
        {"type": lambda v: parse_size("--max-body-bytes", v), "metavar": "SIZE"},
    ),
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
        "--no-mcp", action="store_true", default=None, help=f"do not serve /mcp ({mcp.env}=0)"
    )
    parser.add_argument(
        "--dev-tls",
        action="store_true",
        help="serve HTTPS with a cached self-signed CA for localhost (development only; "
        f"kept in {setting_for('serve', 'dev_tls_dir').default}, env HANDLER_KIT_DEV_TLS_DIR)",
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
    from handler_kit.core.loader import LoadError, load_app
    from handler_kit.server.app import create_asgi_app, describe_routes

    try:
        config = configure(args, ServeConfig.from_env())
    except ConfigError as exc:
        return _fail(str(exc))
    if config.log_level == "trace":
        # uvicorn's level below DEBUG: logging knows its name only once uvicorn defines it
        from uvicorn.logging import TRACE_LOG_LEVEL

        logging.addLevelName(TRACE_LOG_LEVEL, "TRACE")
    logging.basicConfig(
        level=config.log_level.upper(), format="%(levelname)s %(name)s: %(message)s"
    )
    server = config.server
    if server.inspector and not server.inspector_secret:
        # the inspector's session cookies must verify in every worker: one secret for all
        import secrets

        server = dataclasses.replace(server, inspector_secret=secrets.token_urlsafe(32))
    if server.operations.metrics and config.workers > 1 and not server.operations.metrics_dir:
        # the workers' metric values must add up: a folder they share, removed on exit
        folder = tempfile.mkdtemp(prefix="handler-kit-metrics-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        operations = dataclasses.replace(server.operations, metrics_dir=folder)
        server = dataclasses.replace(server, operations=operations)
    config = dataclasses.replace(config, server=server)

    cert, key = config.tls_cert, config.tls_key
    if args.dev_tls:
        if cert or key:
            return _fail("--dev-tls and --tls-cert/--tls-key exclude each other")
        from handler_kit.server.dev_tls import ensure_dev_certificate

        dev = ensure_dev_certificate(config.dev_tls_folder())
        cert, key = str(dev.cert_file), str(dev.key_file)
        print(f"Development TLS: trust this CA with  curl --cacert {dev.ca_file}", flush=True)
    if bool(cert) != bool(key):
        return _fail("--tls-cert and --tls-key go together")
    for path in (cert, key):
        if path and not os.path.isfile(path):
            return _fail(f"TLS file not found: {path}")

    try:
        hook_app = load_app(args.target)
        create_asgi_app(hook_app, server)  # fail here, not in each worker
    except (LoadError, ConfigError, ValueError) as exc:
        return _fail(str(exc))
    # the workers rebuild exactly this configuration from their environment
    os.environ.update(export_env(config))
    if server.insecure_no_auth:
        print("WARNING: serving WITHOUT authentication", file=sys.stderr, flush=True)
    scheme = "https" if cert else "http"
    print(f"{hook_app.name}: {scheme}://{config.host}:{config.port}", flush=True)
    for route in describe_routes(hook_app, server):
        print(f"  {route}", flush=True)
    if server.inspector:
        print(f"  inspector: {scheme}://{config.host}:{config.port}/_inspector", flush=True)

    import uvicorn

    from handler_kit.server._protocols import protocol_class

    uvicorn.run(
        "handler_kit.server.app:app_from_env",
        factory=True,
        host=config.host,
        port=config.port,
        workers=config.workers if config.workers > 1 else None,
        ssl_certfile=cert,
        ssl_keyfile=key,
        log_level=config.log_level,
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
        ),
    )
    return 0


def _fail(message: str) -> int:
    print(f"handler-kit serve: {message}", file=sys.stderr)
    return 2
