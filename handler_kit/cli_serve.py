"""``handler-kit serve MODULE:ATTR``: run a HookApp on uvicorn, with TLS and workers.

Options become ``HANDLER_KIT_*`` environment variables before uvicorn starts, and every worker
builds its app from the environment (:func:`handler_kit.server.app_from_env`): one channel for
configuration, whether one process or several. The app is loaded once in the parent first, so
an import error or a missing token is reported before any worker starts.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument("target", metavar="MODULE:ATTR", help="the HookApp to serve")
    parser.add_argument("--host", default=env("HANDLER_KIT_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(env("HANDLER_KIT_PORT", "8000")))
    parser.add_argument(
        "--workers",
        type=int,
        default=int(env("HANDLER_KIT_WORKERS", "1")),
        help="worker processes behind the one port",
    )
    parser.add_argument("--tls-cert", default=env("HANDLER_KIT_TLS_CERT"), metavar="PEM")
    parser.add_argument("--tls-key", default=env("HANDLER_KIT_TLS_KEY"), metavar="PEM")
    parser.add_argument(
        "--dev-tls",
        action="store_true",
        help="serve HTTPS with a cached self-signed CA for localhost (development only)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=None,
        metavar="HOST",
        help="Host header accepted on /mcp (repeatable): example.com, host:port, or * for any",
    )
    parser.add_argument("--require-event-header", action="store_true", default=None)
    parser.add_argument("--max-body-bytes", type=int, default=None)
    parser.add_argument("--no-mcp", action="store_true", default=None, help="do not serve /mcp")
    parser.add_argument(
        "--graceful-timeout",
        type=float,
        default=float(env("HANDLER_KIT_GRACEFUL_TIMEOUT", "10")),
        help="seconds in-flight requests get to finish on SIGTERM",
    )
    parser.add_argument("--log-level", default=env("HANDLER_KIT_LOG_LEVEL", "info"))
    parser.add_argument(
        "--access-log",
        action="store_true",
        default=env("HANDLER_KIT_ACCESS_LOG", "").lower() in ("1", "true", "yes", "on"),
        help="log one line per request (off by default: it is a third of the webhook's own "
        "cost per request, and the audit trail records every decision)",
    )
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        default=None,
        help="serve without authentication (local development only)",
    )
    # -- inspector (issue 8) --
    parser.add_argument(
        "--inspector",
        action="store_true",
        default=None,
        help="serve the live /_inspector page of recent invocations (development; off by default)",
    )


def run(args: argparse.Namespace) -> int:
    from handler_kit.loader import LoadError, load_app
    from handler_kit.server import ConfigError, ServerConfig, create_asgi_app, describe_routes

    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    os.environ["HANDLER_KIT_APP"] = args.target
    for flag, name in (
        (args.require_event_header, "HANDLER_KIT_REQUIRE_EVENT_HEADER"),
        (args.no_mcp, "HANDLER_KIT_NO_MCP"),
        (args.insecure_no_auth, "HANDLER_KIT_INSECURE_NO_AUTH"),
        (args.inspector, "HANDLER_KIT_INSPECTOR"),
    ):
        if flag:
            os.environ[name] = "1"
    # issue 8: the inspector's session cookies must verify in every worker: one secret for all
    inspector = os.environ.get("HANDLER_KIT_INSPECTOR", "").lower() in ("1", "true", "yes", "on")
    if inspector:
        import secrets

        os.environ.setdefault("HANDLER_KIT_INSPECTOR_SECRET", secrets.token_urlsafe(32))
    if args.max_body_bytes is not None:
        os.environ["HANDLER_KIT_MAX_BODY_BYTES"] = str(args.max_body_bytes)
    if args.allowed_host:
        os.environ["HANDLER_KIT_ALLOWED_HOSTS"] = ",".join(args.allowed_host)

    cert, key = args.tls_cert, args.tls_key
    if args.dev_tls:
        if cert or key:
            return _fail("--dev-tls and --tls-cert/--tls-key exclude each other")
        from handler_kit.dev_tls import ensure_dev_certificate

        dev = ensure_dev_certificate()
        cert, key = str(dev.cert_file), str(dev.key_file)
        print(f"Development TLS: trust this CA with  curl --cacert {dev.ca_file}", flush=True)
    if bool(cert) != bool(key):
        return _fail("--tls-cert and --tls-key go together")
    for path in (cert, key):
        if path and not os.path.isfile(path):
            return _fail(f"TLS file not found: {path}")

    try:
        hook_app = load_app(args.target)
        create_asgi_app(hook_app, ServerConfig.from_env())  # fail here, not in each worker
    except (LoadError, ConfigError, ValueError) as exc:
        return _fail(str(exc))
    if os.environ.get("HANDLER_KIT_INSECURE_NO_AUTH"):
        print("WARNING: serving WITHOUT authentication", file=sys.stderr, flush=True)
    scheme = "https" if cert else "http"
    print(f"{hook_app.name}: {scheme}://{args.host}:{args.port}", flush=True)
    for route in describe_routes(hook_app, mcp=not os.environ.get("HANDLER_KIT_NO_MCP")):
        print(f"  {route}", flush=True)
    if inspector:  # issue 8
        print(f"  inspector: {scheme}://{args.host}:{args.port}/_inspector", flush=True)

    import uvicorn

    uvicorn.run(
        "handler_kit.server:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers if args.workers > 1 else None,
        ssl_certfile=cert,
        ssl_keyfile=key,
        log_level=args.log_level.lower(),
        timeout_graceful_shutdown=args.graceful_timeout,
        # a worker importing the app under load can take more than uvicorn's default 5 s
        timeout_worker_healthcheck=30,
        access_log=args.access_log,
        proxy_headers=False,
        server_header=False,
    )
    return 0


def _fail(message: str) -> int:
    print(f"handler-kit serve: {message}", file=sys.stderr)
    return 2
