"""Loading the HookApp that a command line names as ``MODULE:ATTR``."""

from __future__ import annotations

import importlib
import os
import sys

from handler_kit.app import HookApp


class LoadError(Exception):
    """The target could not be imported or is not a HookApp; the message says why."""


def load_app(target: str) -> HookApp:
    """Import ``MODULE:ATTR`` (the current directory is importable) and return its HookApp.

    ``ATTR`` may be a HookApp or anything with a ``hook_app`` attribute (the ASGI app built by
    ``HookApp.asgi()``).
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise LoadError(
            f"expected MODULE:ATTR (e.g. example_servers.refund_gate:app), got {target!r}"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise LoadError(f"cannot import {module_name!r}: {exc}") from None
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise LoadError(f"{module_name!r} has no attribute {attr!r}") from None
    if isinstance(obj, HookApp):
        return obj
    hook_app = getattr(obj, "hook_app", None)
    if isinstance(hook_app, HookApp):
        return hook_app
    raise LoadError(f"{target} is a {type(obj).__name__}, not a HookApp")
