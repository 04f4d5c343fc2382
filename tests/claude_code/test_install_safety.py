"""``handler-kit install`` run on a repository someone else prepared.

A cloned repository decides what is in its ``.claude`` folder: the settings file, a ``.bak``
beside it, links to anywhere. Each test plants what such a repository could ship, runs the real
console script on it the way a user would, and checks that nothing outside the project was
written, that the backup is as private as the original, and that installs running at once all
land.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import HANDLER_KIT, clean_env

pytestmark = pytest.mark.skipif(
    not HANDLER_KIT.exists(), reason=f"no handler-kit console script at {HANDLER_KIT}"
)

APP = """\
from handler_kit import HookApp, Stop

app = HookApp({name!r})


@app.stop()
def {name}_stop(event: Stop) -> None:
    return None
"""
APPS = ("first", "second", "third", "fourth", "fifth")
BASHRC = b"# the victim's shell start-up\nexport PATH=$HOME/bin:$PATH\n"
ORIGINAL = b'{\n  "permissions": {\n    "allow": ["Bash(ls)"]\n  }\n}\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``tmp_path/project``: a module per name of ``APPS``, and ``.claude/settings.json``."""
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    for name in APPS:
        (root / f"{name}.py").write_text(APP.format(name=name))
    (root / ".claude" / "settings.json").write_bytes(ORIGINAL)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """``tmp_path/home``: the victim's home, outside the project, with a ``.bashrc``."""
    root = tmp_path / "home"
    (root / ".claude").mkdir(parents=True)
    (root / ".bashrc").write_bytes(BASHRC)
    (root / ".claude" / "settings.json").write_bytes(b"{}\n")
    return root


def install(
    project: Path, *options: str, app: str = "first", settings: str = ".claude/settings.json"
) -> subprocess.Popen[str]:
    """``handler-kit install APP:app --settings SETTINGS`` from the project, started."""
    return subprocess.Popen(
        [str(HANDLER_KIT), "install", f"{app}:app", "--settings", settings, *options],
        cwd=project,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        umask=0o022,  # the common umask: a file created without a mode gets 0644
    )


def run(project: Path, *options: str, **kwargs: str) -> tuple[int, str]:
    process = install(project, *options, **kwargs)
    _, err = process.communicate(timeout=120)
    return process.returncode, err


def apps_in(settings: Path) -> set[str]:
    """The apps whose hooks the settings file holds."""
    data = json.loads(settings.read_bytes())
    commands = [
        entry["command"]
        for groups in data.get("hooks", {}).values()
        for group in groups
        for entry in group["hooks"]
    ]
    # the app's name ends a word: `command first:app` alone, or before its options
    return {
        name for name in APPS for command in commands if f" command {name}:app " in command + " "
    }


def assert_one_line_refusal(code: int, err: str) -> None:
    assert code == 1, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("handler-kit install: "), err


# -- links the repository ships ---------------------------------------------------------------


def test_a_backup_path_linked_to_a_home_file_is_replaced_not_followed(project, home):
    """The attack: ``.claude/settings.json.bak -> ../../home/.bashrc``, relative as a
    repository ships it. The victim's file keeps its bytes; the link becomes the backup."""
    backup = project / ".claude" / "settings.json.bak"
    backup.symlink_to(Path("..") / ".." / "home" / ".bashrc")

    code, err = run(project)

    assert code == 0, err
    assert (home / ".bashrc").read_bytes() == BASHRC
    assert not backup.is_symlink()
    assert backup.read_bytes() == ORIGINAL
    assert apps_in(project / ".claude" / "settings.json") == {"first"}


def test_a_lock_path_linked_out_of_the_project_is_refused(project, home):
    lock = project / ".claude" / ".settings.json.lock"
    lock.symlink_to(home / ".bashrc")

    code, err = run(project)

    assert_one_line_refusal(code, err)
    assert "symbolic link" in err
    assert (home / ".bashrc").read_bytes() == BASHRC
    assert (project / ".claude" / "settings.json").read_bytes() == ORIGINAL


@pytest.mark.parametrize("target", ["existing", "missing", "folder"])
def test_a_settings_path_linked_out_of_the_project_is_refused(project, home, target):
    """``.claude/settings.json`` (or ``.claude`` itself) pointing into the user's home: the
    install would have written the user's own settings, or created a file there."""
    claude = project / ".claude"
    if target == "existing":
        outside = home / ".claude" / "settings.json"
        (claude / "settings.json").unlink()
        (claude / "settings.json").symlink_to(outside)
    elif target == "missing":
        outside = home / ".config" / "autostart.json"
        (home / ".config").mkdir()
        (claude / "settings.json").unlink()
        (claude / "settings.json").symlink_to(outside)
    else:
        outside = home / ".claude" / "settings.json"
        (claude / "settings.json").unlink()
        claude.rmdir()
        claude.symlink_to(home / ".claude")
    before = outside.read_bytes() if outside.exists() else None

    code, err = run(project)

    assert_one_line_refusal(code, err)
    assert "--follow-symlink" in err and ".claude/settings.json" in err
    after = outside.read_bytes() if outside.exists() else None
    assert after == before
    assert not (outside.parent / "settings.json.bak").exists()

    # the user who means it says so
    code, err = run(project, "--follow-symlink")
    assert code == 0, err
    assert apps_in(outside) == {"first"}


def test_a_settings_link_inside_the_project_is_written_through(project):
    shared = project / "config" / "claude.json"
    shared.parent.mkdir()
    shared.write_bytes(ORIGINAL)
    link = project / ".claude" / "settings.json"
    link.unlink()
    link.symlink_to(Path("..") / "config" / "claude.json")

    code, err = run(project)

    assert code == 0, err
    assert link.is_symlink()
    assert apps_in(shared) == {"first"}
    assert (project / "config" / "claude.json.bak").read_bytes() == ORIGINAL


def test_a_settings_file_that_is_a_fifo_is_refused(project):
    """A FIFO would hold the install on its open forever."""
    settings = project / ".claude" / "settings.json"
    settings.unlink()
    os.mkfifo(settings)

    process = install(project)
    try:
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert_one_line_refusal(process.returncode, err)
    assert "not a regular file" in err


# -- the backup's mode ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_the_backup_keeps_the_original_mode(project, mode):
    settings = project / ".claude" / "settings.json"
    settings.chmod(mode)

    code, err = run(project)

    assert code == 0, err
    backup = project / ".claude" / "settings.json.bak"
    assert backup.read_bytes() == ORIGINAL
    assert stat.S_IMODE(backup.stat().st_mode) == mode
    assert stat.S_IMODE(settings.stat().st_mode) == mode


def test_an_existing_wider_backup_gets_the_original_mode(project):
    settings = project / ".claude" / "settings.json"
    settings.chmod(0o600)
    backup = project / ".claude" / "settings.json.bak"
    backup.write_bytes(b"{}\n")
    backup.chmod(0o644)

    code, err = run(project)

    assert code == 0, err
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600


# -- installs at once -------------------------------------------------------------------------


def test_concurrent_installs_of_different_apps_all_land(project):
    """Every app installed at the same moment into one file ends up in it: each install reads
    the file after the one before it wrote it."""
    settings = project / ".claude" / "settings.json"
    for _ in range(3):
        settings.write_bytes(ORIGINAL)
        processes = [install(project, app=name) for name in APPS]
        results = [(p.communicate(timeout=180)[1], p.returncode) for p in processes]
        for err, code in results:
            assert code == 0, err
        assert apps_in(settings) == set(APPS)
        assert json.loads(settings.read_bytes())["permissions"] == {"allow": ["Bash(ls)"]}
        left = sorted(p.name for p in (project / ".claude").iterdir())
        assert left == ["settings.json", "settings.json.bak"]


# -- files json cannot read -------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"x": ' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}",
    ],
    ids=["lists", "objects"],
)
def test_a_deeply_nested_settings_file_is_a_one_line_error(project, content):
    settings = project / ".claude" / "settings.json"
    settings.write_text(content)

    code, err = run(project)

    assert_one_line_refusal(code, err)
    assert "too deeply" in err and str(settings) in err
    assert settings.read_text() == content
    assert not (project / ".claude" / "settings.json.bak").exists()
