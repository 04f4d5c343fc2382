"""A fail-closed gate that denies every Bash call with a reason as long as the command asks:
``touch long-reason-30000.marker`` is denied with a reason of 30,000 characters, a
recognizable first line, filler, and a recognizable last line. A runtime that cut the hook's
whole answer before parsing it would read the deny as plain text and run the call.

Copied into a throwaway project as ``long_reason.py`` and installed as ``long_reason:app``.
"""

from __future__ import annotations

import re

from handler_kit import HookApp, PreToolUse, deny

FIRST_LINE = "LONG-REASON-START: this command is not allowed.\n"
LAST_LINE = "\nLONG-REASON-END"
FILLER = "the gate quotes the tool input back. "

app = HookApp("long-reason")


def long_reason(length: int) -> str:
    body = length - len(FIRST_LINE) - len(LAST_LINE)
    filler = (FILLER * (body // len(FILLER) + 1))[: max(body, 0)]
    return FIRST_LINE + filler + LAST_LINE


@app.pre_tool_use(matcher="Bash", fail_closed=True)
def gate(event: PreToolUse):
    command = str((event.tool_input or {}).get("command", ""))
    found = re.search(r"long-reason-(\d+)", command)
    return deny(long_reason(int(found.group(1)) if found else 30_000))
