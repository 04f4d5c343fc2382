"""The throwaway project of ``handler-kit test --runtime``: what of the user's folder it sees
(no agent runs here)."""

from __future__ import annotations

from pathlib import Path

from handler_kit.agents.versions import CODEX
from handler_kit.playback import Player


def test_the_project_links_the_users_folder_but_not_its_hidden_or_the_runs_own_files(
    tmp_path: Path,
) -> None:
    source = tmp_path / "mine"
    (source / "policies").mkdir(parents=True)
    (source / "myhooks.py").write_text("app = None\n")
    (source / ".claude").mkdir()
    (source / ".codex").mkdir()
    (source / "_handler_kit_calls.jsonl").write_text("{}\n")
    project = tmp_path / "project"
    project.mkdir()
    player = Player(CODEX, tmp_path / "codex", tmp_path / "work", source)
    player._link_app("myhooks:app", project)
    assert sorted(p.name for p in project.iterdir()) == ["myhooks.py", "policies"]
    assert (project / "myhooks.py").resolve() == source / "myhooks.py"
