"""A fail-closed gate with no objection to anything, in a handler-kit with a bug injected on
purpose.

On import, this module replaces the function of handler-kit's that ``$INJECTED_BUG`` names
(``MODULE:FUNCTION``, such as ``handler_kit.server.webhook:_body``) with one that raises: a bug
of handler-kit's own, outside ``HookApp.answer`` (reading the input, writing the answer out),
on purpose. The runtime must still see the gate's deny, since handler-kit answers such a bug by
the failure policy of the handlers that were to answer; only the bug can stop a call here.
Without the variable (``handler-kit install`` importing the app) nothing is broken; a name that
no longer exists fails the import, so a renamed function cannot make the test pass unbroken.

Copied into a throwaway project as ``transport_bug.py`` and installed as ``transport_bug:app``.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from handler_kit import HookApp, PreToolUse

BUG_VARIABLE = "INJECTED_BUG"


def _bug(*args: Any, **options: Any) -> Any:
    raise RuntimeError("a bug of handler-kit's, injected on purpose")


if os.environ.get(BUG_VARIABLE):
    _module, _, _function = os.environ[BUG_VARIABLE].partition(":")
    _target = importlib.import_module(_module)
    getattr(_target, _function)  # AttributeError when the function is gone
    setattr(_target, _function, _bug)

app = HookApp("transport-bug")


@app.pre_tool_use(matcher="Bash", fail_closed=True)
def gate(event: PreToolUse) -> None:
    return None
