"""What the Claude Code settings tests share with their fixtures (tests/claude_code/conftest.py):
the settings file people already have, and how the tests write one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# A settings file as people have them: their own hooks (one group mixes in a handler of
# another tool), permissions, an empty event list, keys Claude Code may not even know.
EXISTING: dict[str, Any] = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]},
            {
                "matcher": "Write|Edit",
                "hooks": [
                    {"type": "command", "command": "npx prettier --check", "timeout": 30},
                    {"type": "http", "url": "https://audit.example.com/pre"},
                ],
            },
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
        "SessionEnd": [],
    },
    "env": {"FOO": "1"},
    "someFutureKey": {"nested": [1, {"a": None}], "unicode": "café ✓"},
    "model": "opus",
}


def write_json(path: Path, data: Any, indent: int | str = 2) -> bytes:
    raw = (json.dumps(data, indent=indent, ensure_ascii=False) + "\n").encode()
    path.write_bytes(raw)
    return raw
