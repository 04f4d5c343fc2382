"""The wheel a user installs, built from this checkout: once per test run, shared by every test
that installs handler-kit into a fresh virtualenv (tests/test_packaging.py, the tutorial)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.processes import REPO

# What building the wheel reads: pyproject.toml names README.md and LICENSE
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "handler_kit")


def build_wheel(work: Path) -> Path:
    """``pip wheel`` on a copy of the files a build reads (as the container image's build
    context is), so a stale ``build/`` folder in the checkout cannot slip a removed module into
    the wheel, and the checkout is left untouched. The build backend comes from the package
    index, in pip's isolated build environment, as for a user's ``pip install``."""
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, source / name)
    out = work / "dist"
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out), str(source)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    (built,) = out.glob("*.whl")
    return built
