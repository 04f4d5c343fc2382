"""The settings file install works on: a ``settings.json`` in the test's ``tmp_path``, either
not written yet or already holding the settings people have (other hooks, permissions, keys
Claude Code may not know)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.claude_code.support import EXISTING, write_json


@pytest.fixture
def settings_path(tmp_path: Path) -> Path:
    """``tmp_path/settings.json``, not written: the test writes what it is about."""
    return tmp_path / "settings.json"


@pytest.fixture
def settings(settings_path: Path) -> Path:
    """``tmp_path/settings.json`` holding :data:`EXISTING`, two-space indented."""
    write_json(settings_path, EXISTING)
    return settings_path
