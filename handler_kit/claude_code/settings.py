"""Claude Code settings for a HookApp: the ``hooks`` block, and installing it into a file.

:func:`claude_code_hooks` builds the ``hooks`` block of a Claude Code ``settings.json`` for an
app: one matcher group per handler, each an ``http`` hook on the handler's own route
(``POST /hooks/{name}``), a ``command`` hook running the app (``handler-kit command
MODULE:ATTR --handler NAME``), or a ``command`` hook forwarding to a server (``handler-kit
forward URL/hooks/NAME``). Codex (``hooks.json``) and Posit Assistant
(``.posit/assistant/settings.json``) read the same shape, with their own dialect
(``--runtime``). ``handler-kit document --format claude-code`` prints the block;
:func:`install` writes it into a settings file (``handler-kit install``, in
:mod:`handler_kit.cli.install`).

A command the runtime cannot run is a hook that lets everything through: the runtimes read
exit 127 or a failed import as a non-blocking error. So a command entry names the interpreter
by its absolute path (``/path/to/python -I -m handler_kit``, not a ``handler-kit`` looked up on
a ``PATH`` the runtime may not have), runs from the project directory (``cd
"$CLAUDE_PROJECT_DIR"``; Posit's ``$PA_PROJECT_DIR``; Codex sets neither, so its absolute
path), with every path quoted for the shell; and a fail-closed gate's entry exits 2 when
handler-kit itself cannot run, which every runtime reads as a block.

Which entries are ours: Claude Code validates handler fields, and runtimes that share its
settings files skip handlers with fields they do not know (Posit Assistant does), so no marker
field is added to a handler. Instead each entry identifies itself with documented fields only:
a command hook by its command line (``... -I -m handler_kit command MODULE:ATTR ...``, the
``-m handler_kit`` without ``-I`` and the ``handler-kit command MODULE:ATTR ...`` of earlier
releases, or ``... forward ... --app MODULE:ATTR``), an http hook by an
``X-Handler-Kit-App: MODULE:ATTR`` request header (headers are free-form; the server ignores
it). ``install`` replaces exactly the entries of the same
``MODULE:ATTR`` and nothing else.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shlex
import stat
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from handler_kit.config import CLIENT_TOKEN_VARIABLE
from handler_kit.core.matchers import MatcherError, compile_matcher, is_match_all
from handler_kit.core.outputs import SAFE_DECISIONS
from handler_kit.core.vocabulary import COMMAND_STARTUP_ALLOWANCE

if TYPE_CHECKING:
    from handler_kit.core.app import Handler, HookApp

TOKEN_ENV = CLIENT_TOKEN_VARIABLE
APP_HEADER = "X-Handler-Kit-App"
# Claude Code never sends these events to http hooks (command and mcp_tool only): an http entry
# would be a hook that silently never fires.
NO_HTTP_EVENTS = frozenset({"SessionStart", "Setup"})
COMMAND = "handler-kit"
# Every entry runs the interpreter isolated. ``python -m`` puts the current folder (the
# project, which the agent can write to) first on sys.path: a json.py or a handler_kit/ folder
# written there would be imported instead of the real code and could answer "allow", server or
# no server. ``-I`` leaves it off (and ignores PYTHON* variables and the user's site-packages);
# ``handler-kit command`` then puts the project folder back at the end of sys.path, after the
# standard library and site-packages, so the app imports but nothing there can stand in for
# them (see handler_kit.cli.main).
PYTHON_FLAGS = ("-I",)

# The runtimes, as handler-kit command --runtime names them (a test keeps the two lists equal).
CLAUDE_CODE = "claude-code"
RUNTIMES = (CLAUDE_CODE, "codex", "posit", "sandbox")
RUNTIME_NAMES = {
    CLAUDE_CODE: "Claude Code",
    "codex": "Codex",
    "posit": "Posit Assistant",
    "sandbox": "the sandbox runtime",
}
# The variable each runtime sets to the project directory for a command hook; Codex runs hooks
# in the session's working directory and sets none.
PROJECT_DIR_VARIABLES = {CLAUDE_CODE: "CLAUDE_PROJECT_DIR", "posit": "PA_PROJECT_DIR"}
# Codex gives a hook of these events at most this many seconds (it kills it then); a longer
# timeout in hooks.json is not honoured, so the entry says what Codex will do.
CODEX_CAPPED_EVENTS = frozenset({"SessionEnd", "Interrupt"})
CODEX_CAP = 3.0
# The settings folder each runtime reads in a project (the project is the folder above it).
SETTINGS_FOLDERS = {
    CLAUDE_CODE: (".claude",),
    "codex": (".codex",),
    "posit": (".posit", "assistant"),
}


def claude_code_hooks(
    app: HookApp,
    module_attr: str,
    *,
    base_url: str | None = None,
    command: bool = False,
    via: str | None = None,
    fail_closed: bool = False,
    runtime: str = CLAUDE_CODE,
    project_dir: str | None = None,
    python: str | None = None,
    warn: Callable[[str], None] | None = None,
    mcp_server: str | None = None,
    per_handler: bool = False,
) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` block of a Claude Code settings.json for ``app``.

    ``base_url`` (the server's public URL) makes ``http`` hooks on ``{base_url}/hooks/{name}``
    carrying ``Authorization: Bearer $HANDLER_KIT_TOKEN``; ``via`` (the same URL) makes
    command hooks that forward to those routes (``handler-kit forward``), which answer a
    fail-closed gate's safe decision when the server cannot (every handler's, with
    ``fail_closed``); otherwise, or with ``command=True``, every handler is a ``command`` hook
    running the app (``python -I -m handler_kit command MODULE:ATTR --handler NAME``, from the
    project directory). SessionStart and Setup handlers are never http hooks, since Claude
    Code does not call http hooks for them.

    ``mcp_server`` (with ``base_url``) makes ``mcp_tool`` hooks instead of http ones: each
    calls the handler's tool on the MCP server Claude Code knows by that name, which
    :func:`claude_code_mcp_server` describes.

    Command hooks running the app are one entry per event (``python -I -m handler_kit command
    MODULE:ATTR``, no ``--handler``): the runtime starts one process for a call however many
    handlers match it, and that process runs each handler whose matcher matches and merges
    their answers. The entry's matcher is the union of its handlers' (see
    :func:`union_matcher`), so a call none of them matches starts nothing; its timeout is the
    longest of theirs plus the start-up allowance. ``per_handler`` writes one entry per handler
    instead (``--handler NAME``, one process per matching handler), as earlier releases did; so
    does an event whose matchers cannot be joined into one. http, ``mcp_tool`` and forwarder
    (``via``) entries are one per handler: each calls its handler's own route.

    ``runtime`` names the runtime the block is for (``claude-code``, ``codex``, ``posit``): its
    dialect and its project directory variable; Codex sets none, so its entries change to
    ``project_dir`` (default: the current directory). ``python`` is the interpreter written
    (default: this one). ``warn`` (default: a line on stderr) is told about each SessionStart
    written as a command, and each Codex SessionEnd/Interrupt entry whose timeout Codex cuts
    to 3 s. Groups in registration order of their (first) handler; events in order of their
    first handler.
    """
    base_url, via = _checked_options(
        module_attr,
        base_url=base_url,
        command=command,
        via=via,
        runtime=runtime,
        python=python,
        mcp_server=mcp_server,
    )
    if warn is None:
        warn = _warn_stderr
    place = _Place(runtime, project_dir or os.getcwd(), python or sys.executable)
    events: dict[str, list[Handler]] = {}
    for handler in app.handlers:
        events.setdefault(handler.event, []).append(handler)
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event, handlers in events.items():
        runs_app = via is None and (base_url is None or event in NO_HTTP_EVENTS)
        if runs_app and base_url is not None:
            _warn_command_instead(event, handlers, mcp_server, warn)
        union: str | None = _NO_UNION
        if runs_app and not per_handler:
            union = union_matcher([h.matcher for h in handlers])
        if union is not _NO_UNION:
            entry = _event_entry(handlers, module_attr, place, warn)
            hooks[event] = [_group(union, entry)]
            continue
        groups = hooks.setdefault(event, [])
        for handler in handlers:
            entry = _handler_entry(
                handler,
                module_attr,
                place,
                warn,
                runs_app=runs_app,
                base_url=base_url,
                via=via,
                fail_closed=fail_closed,
                mcp_server=mcp_server,
            )
            groups.append(_group(handler.matcher, entry))
    return hooks


def _checked_options(
    module_attr: str,
    *,
    base_url: str | None,
    command: bool,
    via: str | None,
    runtime: str,
    python: str | None,
    mcp_server: str | None,
) -> tuple[str | None, str | None]:
    """Whether :func:`claude_code_hooks`'s options make a block: at most one kind of entry,
    a runtime with a settings file, an ``mcp_server`` only with ``base_url``, http hooks only
    for Claude Code, and a valid ``MODULE:ATTR``. Raises ``ValueError`` naming the first
    that does not hold; returns ``base_url`` and ``via`` checked (:func:`check_base_url`).
    """
    if sum((base_url is not None, command, via is not None)) > 1:
        raise ValueError("pass one of base_url (http hooks), via (forwarders) or command=True")
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r} (choose from {', '.join(RUNTIMES)})")
    if runtime == "sandbox":
        raise ValueError(
            "the sandbox runtime has no settings file: give each hook the script "
            f"`{_python_words(python)} -I -m handler_kit command {module_attr} --handler NAME "
            "--runtime sandbox`"
        )
    if mcp_server is not None:
        if base_url is None:
            raise ValueError(
                "mcp_tool hooks need the server's base URL (its MCP endpoint is URL/mcp)"
            )
        _check_server_name(mcp_server)
    if base_url is not None and runtime != CLAUDE_CODE:
        raise ValueError(
            f"{RUNTIME_NAMES[runtime]} runs no http hooks: use --via URL (a command hook "
            "forwarding to the server) or command hooks"
        )
    if base_url is not None:
        base_url = check_base_url(base_url)
    if via is not None:
        via = check_base_url(via)
    _check_module_attr(module_attr)
    return base_url, via


def _warn_command_instead(
    event: str, handlers: list[Handler], mcp_server: str | None, warn: Callable[[str], None]
) -> None:
    """Tell about each handler of an event Claude Code calls no http (or, before MCP servers
    connect, no ``mcp_tool``) hook on, written as a command hook instead."""
    kind = "mcp_tool hooks before MCP servers connect" if mcp_server else "http hooks"
    for handler in handlers:
        warn(
            f"{event} handler {handler.name!r}: Claude Code does not call {kind} on "
            f"{event}; written as a command hook instead (it needs handler-kit "
            "installed where Claude Code runs)"
        )


def _handler_entry(
    handler: Handler,
    module_attr: str,
    place: _Place,
    warn: Callable[[str], None],
    *,
    runs_app: bool,
    base_url: str | None,
    via: str | None,
    fail_closed: bool,
    mcp_server: str | None,
) -> dict[str, Any]:
    """Which entry one handler gets on its own: a forwarder to ``via``, a command running the
    app (``runs_app``), an ``mcp_tool`` hook on ``mcp_server``, else an http hook."""
    if via is not None:
        return _forward_entry(handler, module_attr, via, place, fail_closed, warn)
    if runs_app:
        return _command_entry(handler, module_attr, place, warn)
    if mcp_server is not None:
        return _mcp_tool_entry(handler, mcp_server)
    return _http_entry(handler, module_attr, base_url or "")


def _group(matcher: str | None, entry: dict[str, Any]) -> dict[str, Any]:
    group: dict[str, Any] = {}
    if not is_match_all(matcher):
        group["matcher"] = matcher
    group["hooks"] = [entry]
    return group


# union_matcher's answer when the matchers cannot be joined into one
_NO_UNION = "\u0000no union"
# A backreference or a named group: numbered or named across the whole pattern, so joining two
# patterns can change what one refers to (``\1`` of the second names the first's group), and
# JavaScript refuses a name defined twice. Matched loosely: a false hit only means one entry
# per handler for that event.
_NUMBERED = re.compile(r"\\[1-9k]|\(\?<(?![=!])")


def union_matcher(matchers: list[str | None]) -> str | None:
    """One matcher that matches a value exactly when one of ``matchers`` does, under Claude
    Code's rule (:mod:`handler_kit.core.matchers`): None (match everything) when one of them
    matches everything; ``a|b|c`` when all are lists of exact names; else a regular expression,
    each pattern in its own group and the exact names anchored (``(?:mcp__.*)|^(?:Bash|Grep)$``),
    which the rule reads as a regular expression since it holds more than names.

    Returns ``_NO_UNION`` when the patterns cannot be joined without changing one's meaning
    (a backreference or a named group in one of two or more).
    """
    if any(is_match_all(m) for m in matchers):
        return None
    names: list[str] = []
    patterns: list[str] = []
    for matcher in matchers:
        assert matcher is not None  # is_match_all(None)
        if _is_name_list(matcher):
            for name in matcher.replace(",", "|").split("|"):
                if name.strip() and name.strip() not in names:
                    names.append(name.strip())
        elif matcher not in patterns:
            patterns.append(matcher)
    if not patterns:
        # "|" alone is a list of no names, which matches nothing; "" would match everything
        return "|".join(names) or "|"
    if len(patterns) == 1 and not names:
        return patterns[0]
    if any(_NUMBERED.search(p) for p in patterns):
        return _NO_UNION
    alternatives = [f"(?:{p})" for p in patterns]
    if names:
        alternatives.append(f"^(?:{'|'.join(names)})$")
    union = "|".join(alternatives)
    try:
        compile_matcher(union)
    except MatcherError:
        return _NO_UNION
    return union


_NAME_LIST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-|,")


def _is_name_list(matcher: str) -> bool:
    """The rule's list of exact names: nothing but letters, digits, ``_-|,`` and whitespace."""
    return all(c in _NAME_LIST or c.isspace() for c in matcher)


def _http_entry(handler: Handler, module_attr: str, base_url: str) -> dict[str, Any]:
    return {
        "type": "http",
        "url": f"{base_url}/hooks/{handler.name}",
        "headers": {"Authorization": f"Bearer ${TOKEN_ENV}", APP_HEADER: module_attr},
        "allowedEnvVars": [TOKEN_ENV],
        "timeout": _number(handler.timeout),
    }


def _mcp_tool_entry(handler: Handler, server: str) -> dict[str, Any]:
    """An ``mcp_tool`` hook calling the handler's tool (named after the handler) with every
    field its schema declares, each filled from the hook input's field of the same name."""
    # The tool's fields, as the MCP server declares them (runbear.generate.tool_input_fields;
    # a test holds the two together: these layers do not import each other).
    fields = ["hook_event_name", *(n for n in handler.model.model_fields if n != "hook_event_name")]
    return {
        "type": "mcp_tool",
        "server": server,
        "tool": handler.name,
        "input": {name: f"${{{name}}}" for name in fields},
        "timeout": _number(handler.timeout),
    }


def claude_code_mcp_server(base_url: str) -> dict[str, Any]:
    """The ``mcpServers`` entry (``.mcp.json``) for the server at ``base_url``: its MCP
    endpoint over http, with the client token Claude Code expands from its environment."""
    return {
        "type": "http",
        "url": f"{check_base_url(base_url)}/mcp",
        "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"},
    }


def _check_server_name(name: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise ValueError(
            f"an MCP server name is letters, digits, '_' and '-' (like refund-gate), got {name!r}"
        )


class _Place:
    """Where and how a command entry runs: the runtime, its project directory, the
    interpreter."""

    def __init__(self, runtime: str, project_dir: str, python: str) -> None:
        self.runtime = runtime
        self.project_dir = project_dir
        self.python = python

    def cd(self) -> str:
        """The shell words that move to the project directory, where the app imports from."""
        variable = PROJECT_DIR_VARIABLES.get(self.runtime)
        if variable is not None:
            return f'cd "${variable}"'
        return f"cd {shlex.quote(self.project_dir)}"

    def handler_kit(self, *words: str) -> str:
        """``PYTHON -I -m handler_kit WORDS... [--runtime R]``, quoted for a shell."""
        runtime = () if self.runtime == CLAUDE_CODE else ("--runtime", self.runtime)
        line = (self.python, *PYTHON_FLAGS, "-m", "handler_kit", *words, *runtime)
        return " ".join(shlex.quote(word) for word in line)


def _closes(handler: Handler) -> bool:
    """A fail-closed gate: its event has a safe decision to fail to."""
    return handler.fail_closed and handler.event in SAFE_DECISIONS


def _or_block(gates: list[Handler]) -> str:
    """Shell words that make a hook process that could not answer a block: exit 127, a failed
    import or a missing project directory, which every runtime reads as "proceed", become exit
    2 with a reason on stderr (Codex reads an exit 2 with an empty stderr as a failed run)."""
    if len(gates) == 1:
        what = f"the check {gates[0].name} could not run, and it is"
    else:
        what = f"the checks {', '.join(g.name for g in gates)} could not run, and they are"
    reason = f"Blocked by policy: {what} configured to fail closed."
    return f" || {{ echo {shlex.quote(reason)} >&2; exit 2; }}"


def _command_entry(
    handler: Handler, module_attr: str, place: _Place, warn: Callable[[str], None]
) -> dict[str, Any]:
    line = f"{place.cd()} && {place.handler_kit('command', module_attr, '--handler', handler.name)}"
    if _closes(handler):
        line += _or_block([handler])
    return {
        "type": "command",
        "command": line,
        "timeout": _entry_timeout([handler], place.runtime, warn),
    }


def _event_entry(
    handlers: list[Handler], module_attr: str, place: _Place, warn: Callable[[str], None]
) -> dict[str, Any]:
    """One command entry running every handler of an event that matches the call."""
    line = f"{place.cd()} && {place.handler_kit('command', module_attr)}"
    gates = [h for h in handlers if _closes(h)]
    if gates:
        # the process cannot tell which handler the call was for before it starts: a call any
        # gate of the event could have been for is blocked
        line += _or_block(gates)
    return {
        "type": "command",
        "command": line,
        "timeout": _entry_timeout(handlers, place.runtime, warn),
    }


def _entry_timeout(
    handlers: list[Handler], runtime: str, warn: Callable[[str], None]
) -> int | float:
    """The longest of the handlers' timeouts plus the start-up allowance; at most the 3 s Codex
    allows a SessionEnd or Interrupt hook, with a warning naming each handler cut short."""
    timeout = max(h.timeout for h in handlers) + COMMAND_STARTUP_ALLOWANCE
    event = handlers[0].event
    if runtime != "codex" or event not in CODEX_CAPPED_EVENTS or timeout <= CODEX_CAP:
        return _number(timeout)
    for handler in handlers:
        wanted = handler.timeout + COMMAND_STARTUP_ALLOWANCE
        if wanted > CODEX_CAP:
            warn(
                f"{event} handler {handler.name!r}: Codex stops a {event} hook after "
                f"{_number(CODEX_CAP)} s, so its entry's timeout is {_number(CODEX_CAP)} s, not "
                f"{_number(wanted)} s (its timeout {_number(handler.timeout)} s plus "
                f"{_number(COMMAND_STARTUP_ALLOWANCE)} s to start); give it timeout="
                f"{_number(CODEX_CAP - COMMAND_STARTUP_ALLOWANCE)} or less to answer before that"
            )
    return _number(CODEX_CAP)


def _forward_entry(
    handler: Handler,
    module_attr: str,
    via: str,
    place: _Place,
    fail_closed: bool,
    warn: Callable[[str], None],
) -> dict[str, Any]:
    closes = handler.event in SAFE_DECISIONS and (fail_closed or handler.fail_closed)
    words = ["forward", f"{via}/hooks/{handler.name}", "--app", module_attr]
    timeout = _entry_timeout([handler], place.runtime, warn)
    # half the allowance to start, the rest of the entry's time to wait for the server
    wait = timeout - COMMAND_STARTUP_ALLOWANCE / 2
    words += ["--timeout", str(_number(wait))]
    if closes:
        words.append("--fail-closed")
    line = place.handler_kit(*words)
    if closes:
        line += _or_block([handler])
    return {"type": "command", "command": line, "timeout": timeout}


def fail_open_warnings(
    app: HookApp, *, runtime: str = CLAUDE_CODE, base_url: str | None = None, via: str | None = None
) -> list[str]:
    """What stays open of each fail-closed gate installed this way, and how to close it.

    Every runtime here lets the call run when a hook crashes, times out or cannot start. A
    command entry answers the gate's safe decision itself (before its timeout, and exit 2 when
    handler-kit cannot start), which leaves a process killed at the timeout; an http entry
    leaves every outage of the server, which only a forwarder (``--via URL``) closes.
    """
    if via is not None:
        return []  # a fail-closed forwarder answers the safe decision when the server cannot
    warnings = []
    name = RUNTIME_NAMES.get(runtime, runtime)
    for handler in app.handlers:
        if not _closes(handler):
            continue
        if base_url is not None and handler.event not in NO_HTTP_EVENTS:
            warnings.append(
                f"fail_closed gate {handler.name!r}: {name} lets the call run when an http "
                "hook's server is down, times out or answers an error; to stay closed across "
                "an outage, install --via URL (a forwarder command hook that fails closed)"
            )
        else:
            warnings.append(
                f"fail_closed gate {handler.name!r}: {name} lets the call run when a hook "
                "crashes or times out; the entry answers the gate's "
                f"{SAFE_DECISIONS[handler.event]} before its timeout and exits 2 (a block) if "
                "handler-kit cannot start, but a process killed at the timeout still lets the "
                "call run"
            )
    return warnings


def setup_notes(
    *, runtime: str = CLAUDE_CODE, base_url: str | None = None, via: str | None = None
) -> list[str]:
    """What the runtime needs before the entries work, and what happens without it: the
    client token an entry that calls a server sends, and Codex's trust review."""
    notes = []
    name = RUNTIME_NAMES.get(runtime, runtime)
    if via is not None or base_url is not None:
        without = (
            "without it the server answers 401: a fail-closed gate denies every call and the "
            "other hooks give no answer"
        )
        if via is None:
            without = f"without it the server answers 401 and {name} lets every call run"
        notes.append(
            f"the entries send the bearer token in ${TOKEN_ENV}: set it where {name} runs, to "
            f"one of the server's tokens (the server reads them from HANDLER_KIT_TOKENS); "
            f"{without}"
        )
    if runtime == "codex":
        notes.append(
            "Codex skips every hook nobody has trusted, a first install included, and says "
            "nothing: review and trust these in the Codex TUI with /hooks (a headless run: codex "
            "exec --dangerously-bypass-hook-trust); a changed hook needs trusting again"
        )
    return notes


def _python_words(python: str | None) -> str:
    return shlex.quote(python or sys.executable)


def _number(value: float) -> int | float:
    """3.0 -> 3: settings files are read by people too."""
    return int(value) if float(value).is_integer() else value


def check_base_url(base_url: str) -> str:
    """``base_url`` without a final slash; ValueError with a one-line message when it is not
    an http(s) URL a hook can call."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"base URL must be an http(s) URL like https://hooks.example.com, got {base_url!r}"
        )
    if parts.query or parts.fragment:
        raise ValueError(f"base URL must not have a query or fragment: {base_url!r}")
    # Claude Code rejects ${VAR} in a hook url when it loads the settings (only headers
    # interpolate), so a url with one would disable every hook of the file.
    if "$" in base_url:
        raise ValueError(f"Claude Code does not expand variables in hook URLs: {base_url!r}")
    return base_url.rstrip("/")


def _check_module_attr(module_attr: str) -> None:
    # It is written into a shell command line: keep it to what a Python import path can be.
    if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", module_attr):
        raise ValueError(f"expected MODULE:ATTR (like myhooks:app), got {module_attr!r}")


def _warn_stderr(message: str) -> None:
    sys.stderr.write(f"handler-kit: warning: {message}\n")


# -- recognising our entries ------------------------------------------------------------------


def is_ours(entry: Any, module_attr: str) -> bool:
    """True when a settings hook entry was written by handler-kit for ``module_attr``.

    A command hook whose command line, after an optional ``cd DIR &&``, runs ``PYTHON -I -m
    handler_kit command MODULE:ATTR``, or ``PYTHON -m handler_kit command MODULE:ATTR`` or
    ``handler-kit command MODULE:ATTR`` (the forms of earlier releases; any path to either,
    any further options), or ``... forward ... --app
    MODULE:ATTR``; or an http hook carrying ``X-Handler-Kit-App: MODULE:ATTR``.
    """
    if not isinstance(entry, dict):
        return False
    if entry.get("type") == "command":
        command = entry.get("command")
        if not isinstance(command, str):
            return False
        words = _handler_kit_words(command)
        if words[:2] == ["command", module_attr]:
            return True
        if words[:1] == ["forward"]:
            return any(
                word == f"--app={module_attr}"
                or (word == "--app" and words[i + 1 : i + 2] == [module_attr])
                for i, word in enumerate(words)
            )
        return False
    if entry.get("type") == "http":
        headers = entry.get("headers")
        return isinstance(headers, dict) and headers.get(APP_HEADER) == module_attr
    return False


def _handler_kit_words(command: str) -> list[str]:
    """The words after the program when ``command`` runs handler-kit, else ``[]``."""
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: not a line handler-kit wrote
        return []
    if len(words) >= 3 and words[0] == "cd" and words[2] == "&&":
        words = words[3:]
    if words and os.path.basename(words[0]) == COMMAND:
        return words[1:]
    if len(words) >= 3 and words[1:3] == ["-m", "handler_kit"]:
        return words[3:]
    flags = len(PYTHON_FLAGS)
    if len(words) >= 3 + flags and words[1 : 3 + flags] == [*PYTHON_FLAGS, "-m", "handler_kit"]:
        return words[3 + flags :]
    return []


def open_form_apps(settings: dict[str, Any]) -> list[str]:
    """The ``MODULE:ATTR`` of every handler-kit command entry in ``settings`` of a form that
    lets the project folder stand in for the standard library or handler-kit: the ``python -m
    handler_kit`` of earlier releases (no ``-I``) or the ``handler-kit`` console script (whose
    app import puts the project folder first). Each app once, in order of appearance."""
    found: list[str] = []
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return found
    for groups in hooks.values():
        for group in groups if isinstance(groups, list) else ():
            entries = group.get("hooks") if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else ():
                app = _open_form_app(entry)
                if app is not None and app not in found:
                    found.append(app)
    return found


def _open_form_app(entry: Any) -> str | None:
    if not isinstance(entry, dict) or entry.get("type") != "command":
        return None
    command = entry.get("command")
    if not isinstance(command, str):
        return None
    words = _handler_kit_words(command)
    if not words:
        return None
    try:
        head = shlex.split(command)
    except ValueError:
        return None
    if len(head) >= 3 and head[0] == "cd" and head[2] == "&&":
        head = head[3:]
    if len(head) > len(PYTHON_FLAGS) and head[1 : 1 + len(PYTHON_FLAGS)] == list(PYTHON_FLAGS):
        return None  # the isolated form this release writes
    if words[:1] == ["command"] and len(words) >= 2:
        return words[1]
    if words[:1] == ["forward"]:
        for i, word in enumerate(words):
            if word.startswith("--app="):
                return word[len("--app=") :]
            if word == "--app" and i + 1 < len(words):
                return words[i + 1]
    return None


def merge_hooks(
    settings: dict[str, Any], block: dict[str, list[dict[str, Any]]], module_attr: str
) -> dict[str, Any]:
    """``settings`` with ``block`` installed: a new dict, the input is not modified.

    Every entry of ``module_attr`` written before is removed (a matcher group left empty by
    that goes too; one that still holds someone else's hooks stays). The new groups of an
    event go where its first removed group was, or at the end of the event's list; a new event
    goes at the end of ``hooks``. Everything else keeps its value and its place, so installing
    the same block again gives an equal dict.
    """
    result = dict(settings)
    old_hooks = settings.get("hooks", {})
    if not isinstance(old_hooks, dict):
        raise SettingsError('"hooks" in the settings file is not an object')
    hooks: dict[str, Any] = {}
    for event, groups in old_hooks.items():
        if not isinstance(groups, list):
            hooks[event] = groups  # not ours to judge
            continue
        kept: list[Any] = []
        insert_at: int | None = None
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list) or not any(is_ours(e, module_attr) for e in entries):
                kept.append(group)
                continue
            if insert_at is None:
                insert_at = len(kept)
            remaining = [e for e in entries if not is_ours(e, module_attr)]
            if remaining:
                kept.append({**group, "hooks": remaining})
        if insert_at is None:
            insert_at = len(kept)
        kept[insert_at:insert_at] = block.get(event, [])
        if kept or not _had_ours(groups, module_attr):
            hooks[event] = kept  # an event left with nothing of anyone's was only ours
    for event, new_groups in block.items():
        if event not in hooks and new_groups:
            hooks[event] = list(new_groups)
    result["hooks"] = hooks
    return result


def _had_ours(groups: list[Any], module_attr: str) -> bool:
    return any(
        isinstance(g, dict)
        and isinstance(g.get("hooks"), list)
        and any(is_ours(e, module_attr) for e in g["hooks"])
        for g in groups
    )


# -- the settings file ------------------------------------------------------------------------


class SettingsError(Exception):
    """A settings file handler-kit refuses to touch; the message says why, on one line."""


def read_settings(path: str) -> tuple[bytes | None, dict[str, Any]]:
    """(the file's bytes, its JSON object); (None, {}) when it does not exist."""
    try:
        with _SettingsFolder(path) as folder:
            raw = folder.read()
    except FileNotFoundError:
        return None, {}
    return raw, _parse_settings(path, raw)


def _parse_settings(path: str, raw: bytes | None) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = (
            f" (line {exc.lineno} column {exc.colno}: {exc.msg})"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        raise SettingsError(
            f"{path} is not valid JSON{where}; fix it first, nothing was written"
        ) from None
    except RecursionError:
        raise _too_deep(path) from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} holds a JSON {type(data).__name__}, not an object")
    return data


def _too_deep(path: str) -> SettingsError:
    return SettingsError(f"{path} nests its JSON too deeply to read; nothing was written")


def render_settings(data: dict[str, Any], original: bytes | None) -> bytes:
    """JSON text in the original file's indentation (two spaces for a new file), with a final
    newline if the original had one (or is new)."""
    indent: str | int = 2
    if original:
        for line in original.decode("utf-8", "replace").splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and stripped != line:
                indent = line[: len(line) - len(stripped)]
                break
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    if original is None or original.endswith(b"\n") or not original.strip():
        text += "\n"
    return text.encode()


def splice_hooks(raw: bytes, hooks: Any) -> bytes | None:
    """``raw`` (a settings file's JSON object) with the value of its ``hooks`` key replaced by
    ``hooks``, or a ``hooks`` key added after its last member; every other byte as it was.

    The file is the user's: a hand-written one-line ``"permissions"`` stays one line, their key
    order, spacing and escapes stay theirs. Only the ``hooks`` value is written out, in the
    file's indentation. None when the text is not laid out as this expects (it is then written
    out whole).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text[len(bom) :]
    members = _members(text)
    if members is None:
        return None
    named = [m for m in members if m[0] == "hooks"]
    if named:  # json.loads keeps the last of duplicate keys; so does this
        _, key_start, value_start, value_end = named[-1]
        indent = _line_indent(text, key_start)
        value = _dumps_at(hooks, indent, _indent_unit(text, indent))
        return (bom + text[:value_start] + value + text[value_end:]).encode()
    if not members:
        return None  # ``{}``: written out whole
    _, key_start, _, last_end = members[-1]
    indent = _line_indent(text, key_start)
    value = _dumps_at(hooks, indent, _indent_unit(text, indent))
    # after the last member: on a line of its own, or on the object's line as the others are
    added = f', "hooks": {value}' if indent is None else f',\n{indent}"hooks": {value}'
    return (bom + text[:last_end] + added + text[last_end:]).encode()


def _skip(text: str, at: int) -> int:
    """Past the JSON whitespace at ``at``."""
    while text[at : at + 1] in (" ", "\t", "\n", "\r") and at < len(text):
        at += 1
    return at


def _members(text: str) -> list[tuple[str, int, int, int]] | None:
    """The top-level members of the JSON object ``text``: (key, key start, value start, value
    end) each; None if it is not one object."""
    decoder = json.JSONDecoder()
    members: list[tuple[str, int, int, int]] = []
    at = _skip(text, 0)
    if text[at : at + 1] != "{":
        return None
    at = _skip(text, at + 1)
    if text[at : at + 1] == "}":
        return members
    try:
        while True:
            key_start = at
            key, at = decoder.raw_decode(text, at)
            if not isinstance(key, str):
                return None
            at = _skip(text, at)
            if text[at : at + 1] != ":":
                return None
            value_start = _skip(text, at + 1)
            _, value_end = decoder.raw_decode(text, value_start)
            members.append((key, key_start, value_start, value_end))
            at = _skip(text, value_end)
            if text[at : at + 1] == ",":
                at = _skip(text, at + 1)
            elif text[at : at + 1] == "}":
                return members
            else:
                return None
    except (ValueError, RecursionError):
        return None


def _line_indent(text: str, at: int) -> str | None:
    """The whitespace before ``at`` on its line, or None when something else precedes it."""
    line_start = text.rfind("\n", 0, at) + 1
    before = text[line_start:at]
    return before if not before.strip(" \t") else None


def _indent_unit(text: str, member_indent: str | None) -> str:
    """One level of the file's indentation: a member's own (they sit one level in), else the
    first indented line's, else two spaces."""
    if member_indent:
        return member_indent
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            return line[: len(line) - len(stripped)]
    return "  "


def _dumps_at(value: Any, indent: str | None, unit: str) -> str:
    """``value`` as JSON for a member at ``indent``: nested lines indented under it."""
    text = json.dumps(value, indent=unit, ensure_ascii=False)
    return text.replace("\n", "\n" + (indent or ""))


def write_atomically(path: str, data: bytes, *, backup: bytes | None) -> str | None:
    """Replace ``path`` with ``data`` in one step (temp file in the same folder, fsync,
    ``os.replace``), keeping the file's mode; write ``backup`` to ``PATH.bak`` first, with the
    same mode.

    Returns the backup path, if one was written. The links on the way to ``path`` are resolved
    once (:func:`install` checks where they lead first); in the file's folder no name is
    followed: a link at ``PATH.bak`` is replaced by the backup, never written through.
    """
    with _SettingsFolder(path, create=True) as folder:
        return folder.write(data, backup=backup)


class _SettingsFolder:
    """The real folder of a settings file, held open: every name in it (the file, its backup,
    the temp files, the lock) is reached through the folder's descriptor without following a
    link. A repository can ship any of those names as a link (``settings.json.bak ->
    ~/.bashrc``); writing through one would overwrite a file outside the project."""

    def __init__(self, path: str, *, create: bool = False) -> None:
        self.path = os.path.realpath(path)
        self.folder, self.name = os.path.split(self.path)
        if create:
            os.makedirs(self.folder, exist_ok=True)
        self.fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def __enter__(self) -> _SettingsFolder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.fd)

    def read(self) -> bytes | None:
        """The file's bytes, or None when it does not exist."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.name, flags, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SettingsError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as fh:
            # a FIFO or a device would never end, or never start
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise SettingsError(f"{self.path} is not a regular file; nothing was written")
            return fh.read()

    def write(self, data: bytes, *, backup: bytes | None) -> str | None:
        try:
            mode: int | None = stat.S_IMODE(
                os.stat(self.name, dir_fd=self.fd, follow_symlinks=False).st_mode
            )
        except FileNotFoundError:
            mode = None  # a new file gets the umask's mode, as any file the user creates
        backup_path = None
        if backup is not None:
            # the original's mode: a 0600 settings file holds what its owner keeps private
            self._replace(f"{self.name}.bak", backup, mode)
            backup_path = f"{self.path}.bak"
        self._replace(self.name, data, mode)
        with contextlib.suppress(OSError):  # not every filesystem syncs a folder
            os.fsync(self.fd)
        return backup_path

    def _replace(self, name: str, data: bytes, mode: int | None) -> None:
        """``name`` holds ``data``: a new file created beside it (never an existing name),
        synced, then renamed over it. A rename replaces a link; it never writes through one."""
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o666 if mode is None else 0o600, dir_fd=self.fd)
        try:
            with os.fdopen(fd, "wb") as fh:
                if mode is not None:
                    os.fchmod(fh.fileno(), mode)  # exactly the original's, whatever the umask
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.fd)
            raise

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the file's install lock, so that installs into one file run one at a time: each
        reads the file after the one before wrote it, and none loses another's hooks.

        The lock is ``flock`` on a lock file beside the settings file, which its holder removes
        before unlocking; so a waiter that gets the lock on a removed file tries again, and no
        lock file is left behind.
        """
        import fcntl

        name = f".{self.name}.lock"
        shown = os.path.join(self.folder, name)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        while True:
            try:
                fd = os.open(name, flags, 0o600, dir_fd=self.fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise SettingsError(
                        f"the lock file {shown} is a symbolic link; remove it (nothing was written)"
                    ) from None
                raise SettingsError(f"cannot create {shown}: {exc.strerror or exc}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                held = os.fstat(fd)
                try:
                    linked = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
                except FileNotFoundError:
                    linked = None
            except BaseException:
                os.close(fd)
                raise
            if linked is not None and (linked.st_dev, linked.st_ino) == (held.st_dev, held.st_ino):
                break
            os.close(fd)  # its holder removed it while this one waited: take the new one
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=self.fd)
            os.close(fd)


def install(
    app: HookApp,
    module_attr: str,
    path: str,
    *,
    base_url: str | None = None,
    command: bool = False,
    via: str | None = None,
    fail_closed: bool = False,
    runtime: str = CLAUDE_CODE,
    project_dir: str | None = None,
    python: str | None = None,
    dry_run: bool = False,
    follow_symlink: bool = False,
    per_handler: bool = False,
) -> str:
    """Install ``app``'s hooks into the settings file at ``path``; return what was done.

    The options are :func:`claude_code_hooks`'s; ``project_dir`` defaults to
    :func:`project_dir_of` ``path``. Raises :class:`SettingsError` (invalid file, or a link out
    of the project) or ``ValueError`` (bad options). A missing file is created; an unchanged
    result leaves the file's bytes alone; ``dry_run`` prints a unified diff on stdout and
    writes nothing.

    A ``path`` whose links lead out of its project (out of its own folder, for a file in no
    runtime's settings folder) is refused unless ``follow_symlink``. Installs into one file
    wait for each other: the file is read, merged and written under a lock.
    """
    target = _checked_target(path, runtime, follow_symlink)
    notes: list[str] = []  # told after the file is read: an unreadable file is the news
    block = claude_code_hooks(
        app,
        module_attr,
        base_url=base_url,
        command=command,
        via=via,
        fail_closed=fail_closed,
        runtime=runtime,
        project_dir=project_dir or project_dir_of(path, runtime),
        python=python,
        warn=notes.append,
        per_handler=per_handler,
    )
    notes += fail_open_warnings(app, runtime=runtime, base_url=base_url, via=via)
    notes += setup_notes(runtime=runtime, base_url=base_url, via=via)
    count = sum(len(groups) for groups in block.values())
    what = f"{count} hook{'s' if count != 1 else ''} of {module_attr}"
    if dry_run:
        raw, settings = read_settings(target)
        rewritten = _open_form_notes(settings, module_attr, notes)
        rewritten += _per_handler_note(settings, block, module_attr)
        _warn_all(notes)
        data = _updated(path, raw, settings, block, module_attr)
        if data is None:
            return f"{path} already has the {what}; nothing written"
        _print_diff(path, raw, data)
        return f"dry run: {path} would get the {what}{rewritten}; nothing written"
    with _SettingsFolder(target, create=True) as folder, folder.locked():
        raw = folder.read()  # under the lock: what the install before this one wrote
        settings = _parse_settings(path, raw)
        rewritten = _open_form_notes(settings, module_attr, notes)
        rewritten += _per_handler_note(settings, block, module_attr)
        _warn_all(notes)
        data = _updated(path, raw, settings, block, module_attr)
        if data is None:
            return f"{path} already has the {what}; nothing written"
        backup = folder.write(data, backup=raw)
    if backup is None:
        return f"created {path} with the {what}"
    return f"installed the {what} into {path}{rewritten} (previous version: {backup})"


def _open_form_notes(settings: dict[str, Any], module_attr: str, notes: list[str]) -> str:
    """Tell about entries of the earlier, open form: ``module_attr``'s are rewritten (the
    words returned, for the outcome line), another app's are a warning in ``notes``."""
    rewritten = ""
    for app in open_form_apps(settings):
        if app == module_attr:
            rewritten = (
                ", rewriting its entries of the earlier form (python without -I: a file the "
                "agent writes into the project, such as json.py or handler_kit/, was imported "
                "in their place and could answer for them)"
            )
        else:
            notes.append(
                f"the entries of {app} are of the earlier form (python without -I): a file the "
                "agent writes into the project, such as json.py or handler_kit/, is imported in "
                f"their place and can answer for them; reinstall them (handler-kit install {app} "
                "...)"
            )
    return rewritten


def _per_handler_note(
    settings: dict[str, Any], block: dict[str, list[dict[str, Any]]], module_attr: str
) -> str:
    """The words for the outcome line when ``module_attr``'s entries of one process per
    handler (``--handler NAME``, every earlier release's layout) give way to one per event."""
    old = _handler_entries(settings.get("hooks"), module_attr)
    replaced = old - _handler_entries(block, module_attr)
    if not replaced:
        return ""
    count = len(replaced)
    return (
        f", replacing its {count} entr{'ies' if count != 1 else 'y'} of one process per handler "
        "(--handler NAME) with one entry per event, which runs every matching handler in one "
        "process (--per-handler keeps them)"
    )


def _handler_entries(hooks: Any, module_attr: str) -> set[str]:
    """The command lines of ``module_attr``'s ``--handler NAME`` entries in ``hooks``."""
    found: set[str] = set()
    for groups in hooks.values() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            entries = group.get("hooks") if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else ():
                if not is_ours(entry, module_attr):
                    continue
                words = _handler_kit_words(entry.get("command", ""))
                if words[:1] == ["command"] and any(
                    w == "--handler" or w.startswith("--handler=") for w in words
                ):
                    found.add(entry["command"])
    return found


def _warn_all(warnings: list[str]) -> None:
    for warning in warnings:
        _warn_stderr(warning)


def _updated(
    path: str,
    raw: bytes | None,
    settings: dict[str, Any],
    block: dict[str, list[dict[str, Any]]],
    module_attr: str,
) -> bytes | None:
    """The file's new bytes with ``block`` installed, or None when it has it already."""
    try:
        updated = merge_hooks(settings, block, module_attr)
        if "hooks" not in settings and not updated["hooks"]:
            del updated["hooks"]
        if raw is not None and _same(updated, settings):
            return None
        if raw is not None:
            spliced = splice_hooks(raw, updated["hooks"])
            if spliced is not None:
                return spliced
        return render_settings(updated, raw)
    except RecursionError:  # a file json.loads could read may still be too deep to write
        raise _too_deep(path) from None


def _checked_target(path: str, runtime: str, follow_symlink: bool) -> str:
    """The file ``path`` names, its links resolved. Links that lead out of the project (a
    repository's ``.claude/settings.json -> ~/.claude/settings.json``) are refused unless
    ``follow_symlink``: the user asked to change this project's settings, not that file."""
    real = os.path.realpath(path)
    if follow_symlink:
        return real
    root = os.path.realpath(_link_root(path, runtime))
    if os.path.commonpath([real, root]) != root:
        raise SettingsError(
            f"{path} leads through a symbolic link to {real}, outside {root}; nothing was "
            "written (--follow-symlink writes there)"
        )
    return real


def _link_root(path: str, runtime: str) -> str:
    """The folder a settings file's links must stay in: its project (the folder above the
    runtime's settings folder), or for a file elsewhere the folder that holds it."""
    folder = os.path.dirname(os.path.abspath(path))
    root = folder
    for name in reversed(SETTINGS_FOLDERS.get(runtime, ())):
        if os.path.basename(root) != name:
            return folder
        root = os.path.dirname(root)
    return root


def project_dir_of(path: str, runtime: str = CLAUDE_CODE) -> str:
    """The project a settings file belongs to: the folder above the runtime's settings folder
    (``PROJECT/.claude/settings.json``, ``PROJECT/.codex/hooks.json``,
    ``PROJECT/.posit/assistant/settings.json``), else the current directory."""
    folder = os.path.dirname(os.path.abspath(path))
    for name in reversed(SETTINGS_FOLDERS.get(runtime, ())):
        if os.path.basename(folder) != name:
            return os.getcwd()
        folder = os.path.dirname(folder)
    return folder if runtime in SETTINGS_FOLDERS else os.getcwd()


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal including key order: reordering keys is a change to the file."""
    return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)


def _print_diff(path: str, old: bytes | None, new: bytes) -> None:
    import difflib

    before = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
    after = new.decode("utf-8", "replace").splitlines(keepends=True)
    if before and not before[-1].endswith("\n"):
        before[-1] += "\n"
    label = path if old is not None else "/dev/null"
    sys.stdout.writelines(difflib.unified_diff(before, after, label, f"{path} (installed)"))
    sys.stdout.flush()
