"""README.md is the front page: short, its links lead somewhere, and its examples run as written
(an example that rots is a bug)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handler_kit.testing import running_server
from tests.docs.pages import README, REPO, blocks, page

MAX_LINES = 250


def _anchor(heading: str) -> str:
    """The id MkDocs (and GitHub) give a heading."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text)


def _require_curl() -> None:
    if shutil.which("curl") is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("curl is not installed: .ci/run must install it")
        pytest.skip("curl is not installed")


def test_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, (
        f"README.md has {len(lines)} lines; the front page keeps to {MAX_LINES}: move the "
        "details to a page under docs/ and link it"
    )
    text = "\n".join(lines)
    assert "make run" in text and "make test" in text


def test_readme_links_lead_to_files_and_headings() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", page("README.md"))
    relative = [link for link in links if "://" not in link]
    assert len(relative) >= 10
    for link in relative:
        path, _, anchor = link.partition("#")
        target = REPO / path
        assert target.is_file(), f"README links to {path}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            assert anchor in [_anchor(h) for h in headings], f"{path} has no heading #{anchor}"


def test_readme_app_and_its_tests_run(
    myhooks: types.ModuleType, hook_dispatcher: Callable[..., Any]
) -> None:
    test_block = blocks(page("README.md"), "python")[1]
    namespace: dict[str, Any] = {"__name__": "test_myhooks"}
    exec(compile(test_block, "README:test_myhooks.py", "exec"), namespace)
    tests = sorted(name for name in namespace if name.startswith("test_"))
    assert tests == ["test_force_push_is_denied", "test_through_the_reference_runtime"]
    namespace["test_force_push_is_denied"]()
    namespace["test_through_the_reference_runtime"](hook_dispatcher)


def test_readme_curl_answers_as_shown(myhooks: types.ModuleType) -> None:
    _require_curl()
    text = page("README.md")
    shell = blocks(text, "sh")
    (serve,) = [block for block in shell if "handler-kit serve myhooks:app" in block]
    token_set = re.search(r"^export HANDLER_KIT_TOKENS=(\S+)", serve, re.M)
    assert token_set, "the serve block sets HANDLER_KIT_TOKENS"
    (curl,) = [block for block in shell if block.startswith("curl ")]
    assert "http://127.0.0.1:8000" in curl
    shown = blocks(text, "json")[0].strip()
    with running_server(myhooks.app, tokens=[token_set.group(1)]) as server:
        done = subprocess.run(
            ["bash", "-c", curl.replace("http://127.0.0.1:8000", server.url)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    assert done.stdout == shown


def test_readme_install_commands(tmp_path: Path) -> None:
    text = page("README.md")
    (install,) = [block for block in blocks(text, "sh") if "handler-kit install" in block]
    (tmp_path / "myhooks.py").write_text(blocks(text, "python")[0], encoding="utf-8")
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        ["bash", "-e", "-c", install],
        cwd=tmp_path,
        env={"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "+++" in done.stdout  # the dry run's diff
    settings = tmp_path / ".claude" / "settings.json"
    # the last command installed http hooks; SessionStart stays a command hook
    hooks = json.loads(settings.read_text(encoding="utf-8"))["hooks"]
    (pre,) = hooks["PreToolUse"]
    assert pre["matcher"] == "Bash"
    assert pre["hooks"][0]["url"] == "https://hooks.example.com/hooks/no_force_push"
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == (
        f'cd "$CLAUDE_PROJECT_DIR" && {sys.executable} -I -m handler_kit command myhooks:app'
    )
    # the one before installed command hooks, kept as the backup
    before = json.loads((tmp_path / ".claude" / "settings.json.bak").read_text(encoding="utf-8"))
    assert before["hooks"]["PreToolUse"][0]["hooks"][0]["type"] == "command"


def test_readme_cases_file_runs_from_the_cli_and_pytest(tmp_path: Path) -> None:
    text = page("README.md")
    (cases,) = blocks(text, "yaml")
    assert cases.startswith("# hookcases_myhooks.yaml\n")
    (commands,) = [block for block in blocks(text, "sh") if "handler-kit test" in block]
    (tmp_path / "myhooks.py").write_text(blocks(text, "python")[0], encoding="utf-8")
    (tmp_path / "hookcases_myhooks.yaml").write_text(cases, encoding="utf-8")
    bin_dir = Path(sys.executable).parent
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path)}
    lines = [line.split("#")[0].strip() for line in commands.splitlines()]
    assert lines == ["handler-kit test hookcases_myhooks.yaml", "pytest"]
    done = subprocess.run(
        ["bash", "-e", "-c", "handler-kit test hookcases_myhooks.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout
    # pytest in the user's project collects the same file, one item per case
    collected = subprocess.run(
        ["pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "2 passed" in collected.stdout, collected.stdout
    # and a case the app does not meet fails both
    (tmp_path / "hookcases_myhooks.yaml").write_text(
        cases.replace("decision: none", "decision: deny"), encoding="utf-8"
    )
    failed = subprocess.run(
        ["handler-kit", "test", "hookcases_myhooks.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode == 1, failed.stdout + failed.stderr
