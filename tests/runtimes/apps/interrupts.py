"""An Interrupt handler (Codex's event when the user interrupts a turn): it leaves a marker,
so the check sees that it ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from handler_kit import HookApp

app = HookApp("interrupts")


@app.on("Interrupt")
def note_interrupt(event: Any) -> None:
    Path("interrupted.marker").write_text(str(event.hook_event_name), encoding="utf-8")
