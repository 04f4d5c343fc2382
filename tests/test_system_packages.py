"""``scripts/system-packages.sh``: what ``make test`` does about missing system programs.

Where it cannot install (not root, no password-less sudo, or not a Debian system), it must stop
with one line that names what to install, never half-run the suite with tests skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "system-packages.sh"
BASH = shutil.which("bash") or "/bin/bash"


def fake_bin(folder: Path, **programs: str) -> Path:
    """A PATH folder with ``grep`` and ``ls`` (the script's own tools) plus fake programs."""
    folder.mkdir()
    for tool in ("grep", "ls"):
        real = shutil.which(tool)
        assert real is not None
        (folder / tool).symlink_to(real)
    for name, body in programs.items():
        path = folder / name
        path.write_text(f"#!{BASH}\n{body}\n")
        path.chmod(0o755)
    return folder


def run(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, str(SCRIPT)],
        env={"PATH": str(path), "HOME": os.environ.get("HOME", "/tmp")},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_debian_without_root_or_sudo_names_the_apt_line(tmp_path: Path) -> None:
    path = fake_bin(
        tmp_path / "bin",
        # every package reported missing; an ordinary user; no sudo on PATH
        **{"dpkg-query": "exit 1", "id": "echo 1000"},
    )
    result = run(path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "make test needs these Debian packages: sudo apt-get install -y "
        "chromium chromium-driver redis-server postgresql curl wrk nodejs"
    ]
    assert result.stdout == ""


def test_sudo_that_asks_for_a_password_is_not_used(tmp_path: Path) -> None:
    path = fake_bin(
        tmp_path / "bin",
        # only wrk missing; sudo -n fails as it does when it would prompt
        **{
            "dpkg-query": '[ "$3" = wrk ] && exit 1; echo "install ok installed"',
            "id": "echo 1000",
            "sudo": "exit 1",
        },
    )
    result = run(path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "make test needs these Debian packages: sudo apt-get install -y wrk"
    )


def test_other_systems_get_the_missing_programs_named(tmp_path: Path) -> None:
    path = fake_bin(tmp_path / "bin", curl="true")
    result = run(path)
    assert result.returncode == 1
    message = result.stderr.strip()
    # Debian's Postgres lives outside PATH; the script looks for it where the package puts it
    postgres = "" if list(Path("/usr/lib/postgresql").glob("*/bin/initdb")) else " postgresql"
    assert message == (
        "make test needs these programs, which this system's package manager must install: "
        f"chromium chromedriver redis-server{postgres} wrk nodejs"
    )


def test_nothing_to_do_when_everything_is_installed(tmp_path: Path) -> None:
    path = fake_bin(tmp_path / "bin", **{"dpkg-query": 'echo "install ok installed"'})
    result = run(path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
