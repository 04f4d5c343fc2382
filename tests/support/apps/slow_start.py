"""A fail-closed gate whose module takes a while to import (a heavy dependency, a loaded
machine) and whose handler then hangs: tests/command/test_slow_start.py."""

from __future__ import annotations

import time

from handler_kit import HookApp, PreToolUse

# what a slow start-up costs before the handler is even called
time.sleep(1.2)

app = HookApp("slow-start")


@app.pre_tool_use(matcher="Bash", fail_closed=True, timeout=2)
def gate(event: PreToolUse) -> None:
    time.sleep(60)  # hangs: only the deadline can answer
