"""The pinned agents' install folder: reused when both commands are there, named by the
versions, and a run without them fails with the way to get them."""

from __future__ import annotations

from pathlib import Path

import pytest

from handler_kit.agents import run_agent
from handler_kit.agents.__main__ import install
from handler_kit.agents.versions import PACKAGES, executable, install_dir, npm_specs


def test_the_folder_is_named_by_the_pinned_versions(tmp_path: Path) -> None:
    assert install_dir(tmp_path) == tmp_path / "claude-code-2.1.197_codex-0.171.0"
    assert npm_specs() == ["@anthropic-ai/claude-code@2.1.197", "@openai/codex@0.171.0"]
    assert executable(tmp_path, "codex") == tmp_path / "node_modules" / ".bin" / "codex"


def test_an_installed_folder_is_reused_without_npm(tmp_path: Path, monkeypatch) -> None:
    target = install_dir(tmp_path)
    for _, _, command in PACKAGES.values():
        path = target / "node_modules" / ".bin" / command
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    monkeypatch.setattr("shutil.which", lambda name: pytest.fail(f"looked for {name}"))
    assert install(tmp_path) == target


def test_a_run_without_the_agents_names_the_way_to_get_them(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make test-runtimes"):
        run_agent("claude-code", tmp_path, [], agents_dir=tmp_path, home=tmp_path / "home")
    with pytest.raises(ValueError, match="unknown agent 'cursor'"):
        run_agent("cursor", tmp_path, [], agents_dir=tmp_path, home=tmp_path / "home")
