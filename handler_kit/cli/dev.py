"""``handler-kit dev MODULE:ATTR``: the development loop.

``serve`` with what a person at a terminal wants, and nothing a production server should have:

- it listens on 127.0.0.1 only (``HANDLER_KIT_HOST`` is not read): a development server with
  a token printed on the console is no server for the network;
- a bearer token is generated at each start (unless ``HANDLER_KIT_TOKENS`` or JWT settings
  are set: then those are used, and the printed curl shows a placeholder), and printed once
  with a curl command that sends a sample event for the app's own handlers;
- the inspector is on (``/_inspector``, the login takes that token);
- one aligned line per decision on the console (``HANDLER_KIT_LOG_FORMAT=text`` unless set);
- the app is reloaded when a ``.py`` file changes in its folder (its top-level package, or the
  folder of a plain module): the new code answers the next call.

Everything else is read as ``serve`` reads it (``HANDLER_KIT_*``, ``--env-file``), and the same
checks run first: a syntax error shows its file, line and text; a missing extra its install line;
a port in use says so, before anything is printed as serving.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import TYPE_CHECKING, Any

from handler_kit.auth import generate_token
from handler_kit.cli.serve import (
    _fail,
    _usage_checked,
    add_env_file_argument,
    load_env_file,
    start,
)
from handler_kit.config import ConfigError, ServeConfig, parse_port, setting_for

if TYPE_CHECKING:
    from handler_kit.core.app import HookApp

HOST = "127.0.0.1"
USER_TOKEN = "<your HANDLER_KIT_TOKENS token>"  # shown instead of a token the user set
# the refund gate's event: what the curl sends when the app gates issue_refund
REFUND_EVENT: dict[str, Any] = {
    "session_id": "dev",
    "hook_event_name": "PreToolUse",
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "4821", "amount": 640},
    "tool_use_id": "toolu_dev",
}
# a sample of each Runbear event, for an app that gates something else
_SAMPLES: dict[str, dict[str, Any]] = {
    "PreToolUse": {"tool_input": {}, "tool_use_id": "toolu_dev"},
    "PostToolUse": {"tool_input": {}, "tool_response": {}, "tool_use_id": "toolu_dev"},
    "UserPromptSubmit": {"prompt": "Can I get a refund for order 4821?"},
    "SessionStart": {"source": "startup"},
    "Stop": {"stop_hook_active": False},
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="MODULE:ATTR", help="the HookApp to run")
    port = setting_for("serve", "port")
    parser.add_argument(
        "--port",
        default=None,
        type=_usage_checked(lambda v: parse_port("--port", v)),
        help=f"{port.describe()}; dev listens on {HOST} only",
    )
    level = setting_for("serve", "log_level")
    parser.add_argument(
        "--log-level",
        default=None,
        choices=("critical", "error", "warning", "info", "debug", "trace"),
        help=level.describe(),
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="GLOB",
        help="a folder or file (a glob, relative to the watched folder, or a name) whose changes "
        "do not reload; repeatable. Virtualenvs, node_modules, .git, caches and build folders "
        "are never watched (default: none more)",
    )
    add_env_file_argument(parser)


def run(args: argparse.Namespace) -> int:
    try:
        load_env_file(args.env_file)
        base = ServeConfig.from_env()
    except ConfigError as exc:
        return _fail(str(exc), command="dev")
    server = base.server
    generated = None
    if not (server.tokens or server.jwt or server.auth or server.insecure_no_auth):
        generated = generate_token()
        server = dataclasses.replace(server, tokens=(generated,))
    if not server.inspector_secret:
        # the one-time login link printed here must verify in the server's processes
        import secrets

        server = dataclasses.replace(server, inspector_secret=secrets.token_urlsafe(32))
    server = dataclasses.replace(server, inspector=True)
    config = dataclasses.replace(
        base,
        app=args.target,
        host=HOST,
        port=args.port if args.port is not None else base.port,
        # reloading restarts one process: uvicorn ignores workers with reload
        workers=1,
        log_level=args.log_level or base.log_level,
        log_format=base.log_format or "text",
        server=server,
    )
    import atexit
    import os

    from handler_kit.cli._dev_support import reloader_class, remember_gates, state_file

    def banner(hook_app: HookApp) -> list[str]:
        # the gates a broken edit keeps answering for: this version's, until one reloads
        remember_gates(hook_app, os.getpid())
        atexit.register(state_file(os.getpid()).unlink, missing_ok=True)
        return banner_lines(config, hook_app, generated)

    return start(
        config,
        "dev",
        reload=True,
        banner=banner,
        reloader=lambda folder: reloader_class(folder, args.ignore),
    )


def banner_lines(config: ServeConfig, hook_app: HookApp, generated: str | None) -> list[str]:
    """What dev prints once it knows it can serve: the token, a curl, what it watches."""
    import shlex

    from handler_kit.cli.serve import watched_folder

    assert config.app is not None
    tokens = setting_for("server", "tokens").env
    event = sample_event(hook_app)
    authorization: list[str] = []
    if generated:
        shown = f"{generated} (generated for this run; set {tokens} to choose your own)"
        authorization = [f"    -H 'Authorization: Bearer {generated}' \\"]
    elif config.server.insecure_no_auth:
        shown = "none (serving without authentication)"
    else:
        # the user's own token, possibly a production one: not repeated on the console
        shown = f"{USER_TOKEN} (from your settings)"
        authorization = [f"    -H 'Authorization: Bearer {USER_TOKEN}' \\"]
    body = shlex.quote(json.dumps(event, separators=(",", ":")))
    url = f"http://{config.host}:{config.port}/hooks"
    from handler_kit.inspector.session import LOGIN_CODE_SECONDS, LoginCodes, session_secret

    code = LoginCodes(session_secret(config.server.inspector_secret)).issue()
    login = f"http://{config.host}:{config.port}/_inspector/login?code={code}"
    return [
        "",
        f"Inspector: {login}",
        f"  (a one-time login link, good for {LOGIN_CODE_SECONDS} s; then log in with the token)",
        "",
        f"Bearer token: {shown}",
        "",
        "Try it:",
        f"  curl -s {url} \\",
        *authorization,
        "    -H 'Content-Type: application/json' \\",
        f"    -H 'X-Runbear-Hook-Event: {event['hook_event_name']}' \\",
        f"    -d {body}",
        "",
        f"Reloading on changes to .py files in {watched_folder(config.app)}",
        "  (not in virtualenvs, node_modules, .git, caches or build folders; --ignore GLOB)",
        "",
    ]


def sample_event(hook_app: HookApp) -> dict[str, Any]:
    """An event the app's handlers answer: the refund gate's when a PreToolUse handler takes
    ``issue_refund``, else one of the first handler's event (a Runbear event's first, then
    any other), with the value its matcher takes in the field the matcher is tested against
    (a tool name, a source...), when its matcher names one."""
    from handler_kit.core.events import EVENT_MODELS, RUNBEAR_EVENTS

    for handler in hook_app.handlers:
        if handler.event == "PreToolUse" and _takes(handler.matcher, "issue_refund"):
            return dict(REFUND_EVENT)
    known = [h for h in hook_app.handlers if h.event in EVENT_MODELS]
    known.sort(key=lambda h: h.event not in RUNBEAR_EVENTS)  # stable: registration order
    if not known:
        return dict(REFUND_EVENT)
    first = known[0]
    event: dict[str, Any] = {"session_id": "dev", "hook_event_name": first.event}
    event.update(_SAMPLES.get(first.event, {}))
    field = EVENT_MODELS[first.event].matcher_field
    if field == "tool_name":
        event[field] = _tool_for(first.matcher)
    elif field is not None:
        value = _value_for(first.matcher)
        if value is not None:
            event[field] = value
    return event


def _takes(matcher: str | None, tool: str) -> bool:
    from handler_kit.core.matchers import MatcherError, compile_matcher

    try:
        return compile_matcher(matcher)(tool)
    except MatcherError:
        return False


def _tool_for(matcher: str | None) -> str:
    """A tool name ``matcher`` takes: its first alternative when that is a plain name."""
    return _value_for(matcher) or "Bash"


def _value_for(matcher: str | None) -> str | None:
    """A value ``matcher`` takes: its first alternative when that is a plain name."""
    import re

    for part in re.split(r"[|,]", matcher or ""):
        name = part.strip().strip("^$").strip()
        if re.fullmatch(r"[A-Za-z0-9_.-]+", name) and _takes(matcher, name):
            return name
    return None


def app_factory() -> Any:
    """uvicorn's factory in each process the reloader starts: the app, or, when a change
    broke it, the loader's message (a syntax error with its line and caret) instead of a
    traceback, and an app that answers at once until the next change: the last good
    version's fail-closed gates with their safe decision, every other call with a JSON 503
    naming the error (a process that exited would leave the calls waiting on the socket)."""
    import os

    from handler_kit.cli._dev_support import broken_app, remember_gates
    from handler_kit.core.loader import LoadError
    from handler_kit.server.app import app_from_env

    supervisor = os.getppid()  # the dev process, whose reloader started this one
    try:
        served = app_from_env()
    except LoadError as exc:
        _fail(
            f"{exc}; waiting for a change (meanwhile the last good version's fail-closed "
            "gates answer with their safe decision, every other call a 503)",
            exc.detail,
            command="dev",
        )
        return broken_app(str(exc), ServeConfig.from_env(), supervisor)
    remember_gates(served.hook_app, supervisor)
    return served
