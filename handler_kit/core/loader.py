"""Find the user's :class:`~handler_kit.core.app.HookApp` from a ``MODULE:ATTR`` string.

Every subcommand that takes an app (``command``, ``install``, ``document``, ``serve``) names it
the way uvicorn does, so one loader gives them the same rules and the same one-line errors. The
errors are :class:`LoadError` with a message fit for a terminal (a command hook prints it as its
one stderr line), never a traceback.

Kept tiny on purpose: ``handler-kit command`` imports it on every tool call.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from handler_kit.core.app import HookApp


class LoadError(Exception):
    """``MODULE:ATTR`` could not be turned into a HookApp; the message says why, on one line.

    ``detail`` is what a terminal can show below it (the offending source line and a caret
    under the error), empty when there is nothing more to show. A command hook, whose stderr
    a runtime reads line by line, prints the message alone.
    """

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


def load_app(spec: str) -> HookApp:
    """Import ``MODULE`` and return its ``ATTR`` (dotted paths allowed: ``mod:ns.hooks``).

    The current directory is put on ``sys.path`` first: a console script's ``sys.path[0]`` is
    the script's own folder (``.venv/bin``), so without it ``myhooks:app`` or
    ``example_servers.refund_gate:app`` would not import from the project a runtime starts the
    hook in. The attribute may be a HookApp, or an object carrying one as ``.hook_app`` (such as
    an ASGI app built from it).
    """
    from handler_kit.core._decorators import HandlerDefinitionError
    from handler_kit.core.app import HookApp

    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise LoadError(f"expected MODULE:ATTR (like myhooks:app), got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            # the module (or a package on its path) is missing, not one of its imports
            raise LoadError(
                f"cannot import {module_name!r}: no module named {exc.name!r} "
                f"(looked in {cwd} and the installed packages)"
            ) from None
        raise LoadError(
            f"importing {module_name!r} failed: {_one_line(exc)}{_where(exc)}"
        ) from None
    except SyntaxError as exc:  # the user's code does not parse: where, and the line itself
        raise LoadError(
            f"importing {module_name!r} failed: {_syntax_error(exc)}", _caret(exc)
        ) from None
    except HandlerDefinitionError as exc:  # already at the user's line, naming the handler
        raise LoadError(f"importing {module_name!r} failed: {' '.join(str(exc).split())}") from None
    except Exception as exc:
        raise LoadError(
            f"importing {module_name!r} failed: {_one_line(exc)}{_where(exc)}"
        ) from None
    except SystemExit as exc:  # a module that calls sys.exit() at import time
        raise LoadError(f"importing {module_name!r} called sys.exit({exc.code!r})") from None
    target: object = module
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise LoadError(
                f"{spec!r}: module {module_name!r} has no attribute {attr_path!r}"
            ) from None
    if isinstance(target, HookApp):
        return target
    inner = getattr(target, "hook_app", None)
    if isinstance(inner, HookApp):
        return inner
    raise LoadError(f"{spec!r} is a {type(target).__name__}, not a HookApp")


def _one_line(exc: BaseException) -> str:
    """``Type: message`` on one line: a hook's stderr is read line by line by its runtime."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _syntax_error(exc: SyntaxError) -> str:
    """``FILE, line N: SyntaxError: message: the line`` (the absolute file, as an editor takes
    it; the line's text so the one-line form is enough on its own)."""
    where = os.path.abspath(exc.filename) if exc.filename else "<unknown file>"
    text = (exc.text or "").strip()
    line = f"{where}, line {exc.lineno}: {type(exc).__name__}: {exc.msg}"
    return f"{line}: {text}" if text else line


def _caret(exc: SyntaxError) -> str:
    """The offending line and a caret under the error's column, as Python prints them."""
    text = (exc.text or "").rstrip("\n")
    if not text.strip():
        return ""
    stripped = text.lstrip()
    column = max((exc.offset or 1) - 1 - (len(text) - len(stripped)), 0)
    return f"    {stripped}\n    {' ' * column}^"


def _where(exc: BaseException) -> str:
    """`` (at FILE, line N: code)`` for the innermost frame of the user's import, if any."""
    import traceback

    ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frames = traceback.extract_tb(exc.__traceback__)
    # the innermost frame outside importlib's machinery and handler-kit's own code is where
    # the user's code failed: a line of ours would say nothing the user can change
    for frame in reversed(frames):
        if (
            "importlib" not in frame.filename
            and not frame.filename.startswith("<frozen")
            and not os.path.abspath(frame.filename).startswith(ours)
        ):
            code = f": {frame.line.strip()}" if frame.line else ""
            return f" (at {frame.filename}, line {frame.lineno}{code})"
    return ""
