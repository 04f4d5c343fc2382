"""Claude Code settings for a HookApp: the ``hooks`` block, and installing it into a file.

:func:`claude_code_hooks` builds the ``hooks`` block of a Claude Code ``settings.json`` for an
app: one matcher group per handler, each an ``http`` hook on the handler's own route
(``POST /hooks/{name}``) or a ``command`` hook running ``handler-kit command MODULE:ATTR
--handler NAME``. ``handler-kit document --format claude-code`` prints it; :func:`install`
writes it into a settings file (``handler-kit install``, in :mod:`handler_kit.cli.install`).

Which entries are ours: Claude Code validates handler fields, and runtimes that share its
settings files skip handlers with fields they do not know (Posit Assistant does), so no marker
field is added to a handler. Instead each entry identifies itself with documented fields only:
a command hook by its command (``handler-kit command MODULE:ATTR ...``), an http hook by an
``X-Handler-Kit-App: MODULE:ATTR`` request header (headers are free-form; the server ignores
it). ``install`` replaces exactly the entries of the same ``MODULE:ATTR`` and nothing else.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from handler_kit.config import CLIENT_TOKEN_VARIABLE

if TYPE_CHECKING:
    from handler_kit.core.app import Handler, HookApp

TOKEN_ENV = CLIENT_TOKEN_VARIABLE
APP_HEADER = "X-Handler-Kit-App"
# Claude Code never sends these events to http hooks (command and mcp_tool only): an http entry
# would be a hook that silently never fires.
NO_HTTP_EVENTS = frozenset({"SessionStart", "Setup"})
# A command hook starts a new process before the handler's deadline starts to run: give the
# runtime's timeout this much more, so a fail-closed gate's own deny arrives first.
COMMAND_STARTUP_ALLOWANCE = 1.0
COMMAND = "handler-kit"


def claude_code_hooks(
    app: HookApp,
    module_attr: str,
    *,
    base_url: str | None = None,
    command: bool = False,
    warn: Callable[[str], None] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` block of a Claude Code settings.json for ``app``.

    ``base_url`` (the server's public URL) makes ``http`` hooks on ``{base_url}/hooks/{name}``
    carrying ``Authorization: Bearer $HANDLER_KIT_TOKEN``; without it, or with
    ``command=True``, every handler is a ``command`` hook (``handler-kit command MODULE:ATTR
    --handler NAME``, run from the project folder). SessionStart and Setup handlers are always
    command hooks, since Claude Code does not call http hooks for them; ``warn`` (default: a
    line on stderr) is told about each one. One matcher group per handler, in registration
    order; events in order of their first handler.
    """
    if base_url is not None and command:
        raise ValueError("pass base_url for http hooks or command=True, not both")
    if base_url is not None:
        base_url = _check_base_url(base_url)
    _check_module_attr(module_attr)
    if warn is None:
        warn = _warn_stderr
    hooks: dict[str, list[dict[str, Any]]] = {}
    for handler in app.handlers:
        if base_url is not None and handler.event in NO_HTTP_EVENTS:
            warn(
                f"{handler.event} handler {handler.name!r}: Claude Code does not call http "
                f"hooks on {handler.event}; written as a command hook instead (it needs "
                f"handler-kit installed where Claude Code runs)"
            )
            entry = _command_entry(handler, module_attr)
        elif base_url is not None:
            entry = _http_entry(handler, module_attr, base_url)
        else:
            entry = _command_entry(handler, module_attr)
        group: dict[str, Any] = {}
        if handler.matcher is not None and handler.matcher.strip() not in ("", "*"):
            group["matcher"] = handler.matcher
        group["hooks"] = [entry]
        hooks.setdefault(handler.event, []).append(group)
    return hooks


def _http_entry(handler: Handler, module_attr: str, base_url: str) -> dict[str, Any]:
    return {
        "type": "http",
        "url": f"{base_url}/hooks/{handler.name}",
        "headers": {"Authorization": f"Bearer ${TOKEN_ENV}", APP_HEADER: module_attr},
        "allowedEnvVars": [TOKEN_ENV],
        "timeout": _number(handler.timeout),
    }


def _command_entry(handler: Handler, module_attr: str) -> dict[str, Any]:
    return {
        "type": "command",
        "command": f"{COMMAND} command {module_attr} --handler {handler.name}",
        "timeout": _number(handler.timeout + COMMAND_STARTUP_ALLOWANCE),
    }


def _number(value: float) -> int | float:
    """3.0 -> 3: settings files are read by people too."""
    return int(value) if float(value).is_integer() else value


def _check_base_url(base_url: str) -> str:
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

    A command hook whose command runs ``handler-kit command MODULE:ATTR`` (any path to the
    executable, any further options) or an http hook carrying ``X-Handler-Kit-App: MODULE:ATTR``.
    """
    if not isinstance(entry, dict):
        return False
    if entry.get("type") == "command":
        command = entry.get("command")
        if not isinstance(command, str):
            return False
        words = command.split()
        return (
            len(words) >= 3
            and os.path.basename(words[0]) == COMMAND
            and words[1] == "command"
            and words[2] == module_attr
        )
    if entry.get("type") == "http":
        headers = entry.get("headers")
        return isinstance(headers, dict) and headers.get(APP_HEADER) == module_attr
    return False


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
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not raw.strip():
        return raw, {}
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
    if not isinstance(data, dict):
        raise SettingsError(f"{path} holds a JSON {type(data).__name__}, not an object")
    return raw, data


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


def write_atomically(path: str, data: bytes, *, backup: bytes | None) -> str | None:
    """Replace ``path`` with ``data`` in one step (temp file in the same folder, fsync,
    ``os.replace``), keeping the file's mode; write ``backup`` to ``PATH.bak`` first.

    Returns the backup path, if one was written. A symlinked settings file is written through.
    """
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    os.makedirs(folder, exist_ok=True)
    backup_path = None
    if backup is not None:
        backup_path = f"{path}.bak"
        with open(backup_path, "wb") as fh:
            fh.write(backup)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    tmp = os.path.join(folder, f".{os.path.basename(target)}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return backup_path


def install(
    app: HookApp,
    module_attr: str,
    path: str,
    *,
    base_url: str | None = None,
    command: bool = False,
    dry_run: bool = False,
) -> str:
    """Install ``app``'s hooks into the settings file at ``path``; return what was done.

    Raises :class:`SettingsError` (invalid file) or ``ValueError`` (bad options). A missing
    file is created; an unchanged result leaves the file's bytes alone; ``dry_run`` prints a
    unified diff on stdout and writes nothing.
    """
    raw, settings = read_settings(path)
    block = claude_code_hooks(app, module_attr, base_url=base_url, command=command)
    updated = merge_hooks(settings, block, module_attr)
    if "hooks" not in settings and not updated["hooks"]:
        del updated["hooks"]
    count = sum(len(groups) for groups in block.values())
    what = f"{count} hook{'s' if count != 1 else ''} of {module_attr}"
    if raw is not None and _same(updated, settings):
        return f"{path} already has the {what}; nothing written"
    new_bytes = render_settings(updated, raw)
    if dry_run:
        _print_diff(path, raw, new_bytes)
        return f"dry run: {path} would get the {what}; nothing written"
    backup = write_atomically(path, new_bytes, backup=raw)
    if backup is None:
        return f"created {path} with the {what}"
    return f"installed the {what} into {path} (previous version: {backup})"


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
