"""What ``handler-kit dev`` adds around uvicorn's reloader: a watcher that leaves virtualenvs,
caches and build folders alone, and the app served while the user's module does not import.

A module that does not import must not leave calls waiting: the reloader holds the socket, so
a process that exits would leave every call queued until the next edit. Instead the process
serves :func:`broken_app`: the fail-closed gates of the last version that imported answer with
their safe decision (a runtime reads an error status as "proceed"), naming the import error,
and every other call gets a JSON 503 naming it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handler_kit.config import ServeConfig
    from handler_kit.core.app import HookApp

# Folders never watched: what pip, npm, git, the test tools and the builds write, never the
# project's own code. A folder holding ``pyvenv.cfg`` is a virtualenv whatever its name.
IGNORED_DIRS: tuple[str, ...] = (
    ".venv",
    "venv",
    ".virtualenv",
    "node_modules",
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".tox",
    ".nox",
    ".eggs",
    "*.egg-info",
    "build",
    "dist",
    "site",
    ".cache",
)


# The watcher waits this many times as long as a look at the tree took, beyond uvicorn's
# reload delay: at most about 1/WATCH_SHARE_INVERSE of a core however large the project is.
WATCH_SHARE_INVERSE = 30


def state_file(pid: int) -> Path:
    """Where the dev process ``pid`` keeps the fail-closed gates of the last version that
    imported: its server processes are restarted, the file outlives each of them."""
    return Path(tempfile.gettempdir()) / f"handler-kit-dev-{pid}-gates.json"


def remember_gates(hook_app: HookApp, pid: int) -> None:
    """Write the fail-closed gates of ``hook_app``, the version that imported, for the server
    process that may next find the module broken."""
    gates = [
        {"name": h.name, "event": h.event, "matcher": h.matcher}
        for h in hook_app.handlers
        if h.fail_closed
    ]
    path = state_file(pid)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"app": hook_app.name, "gates": gates}))
    temporary.replace(path)


def broken_app(problem: str, config: ServeConfig, pid: int) -> Any:
    """The ASGI app served while the module does not import (``problem``: the loader's
    one-line message, naming the file and line)."""
    from handler_kit.core.app import HookApp
    from handler_kit.core.outputs import SAFE_DECISIONS, Output
    from handler_kit.server.app import HandlerKitASGI

    try:
        remembered = json.loads(state_file(pid).read_text())
    except (OSError, ValueError):
        remembered = {"app": "handler-kit-dev", "gates": []}
    stand_in = HookApp(remembered["app"])
    reason = (
        f"the policy does not import, so this gate answers with its safe decision until it "
        f"does ({problem})"
    )
    for gate in remembered["gates"]:
        decision = SAFE_DECISIONS.get(gate["event"])
        if decision is None:
            continue
        output = Output(decision=decision, reason=reason)
        stand_in.on(gate["event"], matcher=gate["matcher"], name=gate["name"], fail_closed=True)(
            _answer(output)
        )
    inner = HandlerKitASGI(stand_in, config.server)
    return BrokenModuleASGI(inner, stand_in, problem)


def _answer(output: Any) -> Any:
    def gate(event: Any) -> Any:
        return output

    return gate


class BrokenModuleASGI:
    """The webhook calls a remembered gate takes go to the stand-in app (its safe decision,
    authenticated as usual); every other HTTP call, once authenticated, is a JSON 503."""

    def __init__(self, inner: Any, stand_in: HookApp, problem: str) -> None:
        self.inner = inner
        self.stand_in = stand_in
        self.problem = problem

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        path: str = scope.get("path", "")
        if path in ("/healthz", "/readyz"):
            await self.inner(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        if self._gated(scope, path, body):
            await self.inner(scope, _replay(body), send)
            return
        headers = dict(scope.get("headers") or ())
        try:
            checked = self.inner.auth.check(headers.get(b"authorization"))
            if hasattr(checked, "__await__"):
                await checked
        except Exception:
            await _json(
                send,
                401,
                {"error": "unauthorized", "message": "missing or invalid bearer token"},
                [(b"www-authenticate", b"Bearer")],
            )
            return
        await _json(
            send,
            503,
            {
                "error": "the app does not import: handler-kit dev waits for a change",
                "detail": self.problem,
            },
            [(b"retry-after", b"1")],
        )

    def _gated(self, scope: Any, path: str, body: bytes) -> bool:
        if scope.get("method") != "POST":
            return False
        if path.startswith("/hooks/"):
            return path[len("/hooks/") :] in self.stand_in.by_name
        if path != "/hooks":
            return False
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return False
        headers = dict(scope.get("headers") or ())
        name = data.get("hook_event_name") or headers.get(b"x-runbear-hook-event", b"").decode(
            "latin-1"
        )
        if name not in self.stand_in.by_event:
            return False
        from handler_kit.core.events import model_for

        fields = {k: v for k, v in data.items() if isinstance(k, str)}
        fields["hook_event_name"] = name
        event = model_for(name).model_construct(**fields)
        return bool(self.stand_in.matching(event))


def _replay(body: bytes) -> Any:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


async def _json(send: Any, status: int, payload: dict[str, Any], extra: list[Any]) -> None:
    data = json.dumps(payload).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


# -- the watcher --------------------------------------------------------------------------------


def ignored(relative: str, name: str, patterns: Sequence[str]) -> bool:
    """Whether the folder ``name`` (at ``relative``, from the watched folder) is left out."""
    return bool(_matcher(tuple(patterns))(name) or _matcher(tuple(patterns))(relative))


def _matcher(patterns: tuple[str, ...]) -> Any:
    """One compiled expression for the ignored folders and ``patterns`` (globs)."""
    import re

    globs = (*IGNORED_DIRS, *(p.rstrip("/") for p in patterns))
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs)).match


def python_files(folder: Path, patterns: Sequence[str]) -> dict[str, float]:
    """The ``.py`` files under ``folder`` and their modification times, not descending into
    ignored folders (nor into virtualenvs of any name). Plain strings and ``os.scandir``:
    this runs four times a second."""
    import re

    skip = _matcher(tuple(patterns))
    user = (
        re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match
        if patterns
        else None
    )
    found: dict[str, float] = {}
    root = str(folder)
    prefix = len(root) + 1
    pending = [root]
    while pending:
        current = pending.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    relative = entry.path[prefix:]
                    if skip(entry.name) or skip(relative):
                        continue
                    if os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
                        continue
                    pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    if user is not None and user(entry.path[prefix:]):
                        continue
                    found[entry.path] = entry.stat().st_mtime
            except OSError:
                continue
    return found


def reloader_class(folder: Path, patterns: Iterable[str]) -> Any:
    """uvicorn's reloader for ``dev``: polls the ``.py`` files of ``folder`` that are not in
    an ignored folder. uvicorn's own watches the whole tree (a virtualenv included) and
    restarts on a ``pip install``."""
    from uvicorn.supervisors.basereload import BaseReload

    kept = tuple(patterns)

    class DevReload(BaseReload):
        def __init__(self, config: Any, target: Any, sockets: Any) -> None:
            super().__init__(config, target, sockets)
            self.reloader_name = "handler-kit dev"
            self.mtimes: dict[str, float] = {}
            self.backoff = 0.0

        def should_restart(self) -> list[Path] | None:
            self.pause()
            # a large tree is looked at less often: the watcher keeps to a few percent of a core
            if self.should_exit.wait(self.backoff):
                raise StopIteration()
            started = time.perf_counter()
            seen = python_files(folder, kept)
            self.backoff = (time.perf_counter() - started) * WATCH_SHARE_INVERSE
            if not self.mtimes:  # the first pass only takes note
                self.mtimes = seen
                return None
            changed = [f for f, mtime in seen.items() if self.mtimes.get(f) != mtime]
            changed += [f for f in self.mtimes if f not in seen]  # removed
            self.mtimes = seen
            return [Path(f) for f in changed] or None

    return DevReload
