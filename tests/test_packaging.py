"""The package as a user gets it: the wheel built from this checkout, installed into a fresh
virtualenv, and its console script run from a folder that holds nothing but a user's app.

The build runs on a copy of the files a build reads (as the container image's build context
does), so a stale ``build/`` folder in the checkout cannot slip a removed module into the
wheel, and the checkout is left untouched. The fresh virtualenv reuses the dependencies
installed in the one running the tests instead of downloading them.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

import handler_kit
from handler_kit.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
VERSION = handler_kit.__version__
DIST_INFO = f"handler_kit-{VERSION}.dist-info"

pytestmark = pytest.mark.slow

APP = """\
from handler_kit import HookApp, PreToolUse, deny

app = HookApp("packaged")


@app.pre_tool_use(matcher="Bash")
def no_force_push(event: PreToolUse):
    if "push --force" in str((event.tool_input or {}).get("command", "")):
        return deny("Force pushes need a review.")
    return None
"""
FORCE_PUSH = {
    "hook_event_name": "PreToolUse",
    "session_id": "s1",
    "tool_name": "Bash",
    "tool_input": {"command": "git push --force origin main"},
}


def _run(argv: list[str | Path], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=120, **kwargs
    )
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(checkout_wheel: Path) -> Path:
    """The wheel built from this checkout (the suite's ``checkout_wheel``)."""
    return checkout_wheel


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    """A new virtualenv with the wheel installed, and this one's site-packages after its own
    (a ``.pth`` line adds a folder but runs none of its ``.pth`` files, so the editable
    install of the checkout stays out)."""
    root = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--without-pip", root])
    python = root / "bin" / "python"
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    (Path(purelib.stdout.strip()) / "dependencies.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n"
    )
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    _run([*pip, "install", "--no-index", "--no-deps", "--no-compile", wheel])
    return root


def _env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HANDLER_KIT_", "PYTHON", "VIRTUAL_ENV"))
    }
    env["PYTHONNOUSERSITE"] = "1"
    return env


def test_the_wheel_holds_handler_kit_only(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"handler_kit", DIST_INFO}
    # Every file of the package is in the wheel: modules of every subpackage, the typing
    # marker and the inspector's assets (package data that pyproject.toml must name).
    package = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "handler_kit").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert {"handler_kit/py.typed", "handler_kit/inspector/inspector.js"} <= package
    assert {name for name in names if name.startswith("handler_kit/")} == package

    metadata = zipfile.ZipFile(wheel).read(f"{DIST_INFO}/METADATA").decode()
    assert f"\nVersion: {VERSION}\n" in metadata
    assert "\nLicense-Expression: MIT\n" in metadata
    assert f"{DIST_INFO}/licenses/LICENSE" in names
    entry_points = zipfile.ZipFile(wheel).read(f"{DIST_INFO}/entry_points.txt").decode()
    assert "handler-kit = handler_kit.cli:main" in entry_points


def test_the_installed_console_script_runs(venv: Path, tmp_path: Path) -> None:
    bin_dir = venv / "bin"
    env = _env()
    where = _run(
        [bin_dir / "python", "-c", "import handler_kit; print(handler_kit.__file__)"],
        cwd=tmp_path,
        env=env,
    )
    assert Path(where.stdout.strip()).is_relative_to(venv)  # the wheel, not the checkout

    version = f"handler-kit {VERSION}\n"
    assert _run([bin_dir / "handler-kit", "--version"], cwd=tmp_path, env=env).stdout == version
    by_module = _run([bin_dir / "python", "-m", "handler_kit", "--version"], cwd=tmp_path, env=env)
    assert by_module.stdout == version

    (tmp_path / "myhooks.py").write_text(APP)
    answer = _run(
        [bin_dir / "handler-kit", "command", "myhooks:app"],
        input=json.dumps(FORCE_PUSH),
        cwd=tmp_path,
        env=env,
    )
    assert json.loads(answer.stdout) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Force pushes need a review.",
        }
    }


def test_every_subcommand_loads_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    """Each entry of the command table names a module and two functions of the installed
    package: ``--help`` imports the module, looks up both and calls the add-arguments one."""
    for name in COMMANDS:
        shown = _run([venv / "bin" / "handler-kit", name, "--help"], cwd=tmp_path, env=_env())
        assert shown.stdout.startswith(f"usage: handler-kit {name} "), name
