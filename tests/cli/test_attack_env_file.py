"""Attacks on ``--env-file`` (``handler-kit serve``, in a subprocess as a user runs it): a
file that never ends (a FIFO, a huge file), a NUL in a value, and the loader's variables
(``LD_PRELOAD``, ``PYTHONPATH``...) are each one line on stderr and exit status 2, never a
hang or a traceback, and never the value of a line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.support import SERVE_TOKEN, TARGET
from tests.support.processes import HANDLER_KIT, REPO, clean_env

SECRET = "env-file-SECRET-value-0123456789"
# a setting that stops serve before it serves: what shows the file was read past its lines
BAD_PORT = "HANDLER_KIT_PORT=not-a-port\n"


def serve_with(env_file: Path) -> tuple[int, str]:
    argv = [str(HANDLER_KIT), "serve", TARGET, "--env-file", str(env_file)]
    done = subprocess.run(
        argv, cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=60
    )
    return done.returncode, done.stdout + done.stderr


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "secrets.env"
    os.mkfifo(fifo)
    status, output = serve_with(fifo)
    assert status == 2, output
    assert "is not a regular file" in output


def test_a_huge_file_is_refused(tmp_path: Path) -> None:
    huge = write(tmp_path / "huge.env", f"A={'x' * 80}\n" * 20_000 + BAD_PORT)
    status, output = serve_with(huge)
    assert status == 2, output
    assert "not an environment file" in output


def test_a_nul_in_a_value_is_a_line_not_a_traceback(tmp_path: Path) -> None:
    nul = write(tmp_path / "nul.env", f"HANDLER_KIT_TOKENS={SERVE_TOKEN}\nAPI_KEY={SECRET}\x00x\n")
    status, output = serve_with(nul)
    assert status == 2, output
    assert "line 2" in output and "NUL" in output
    assert "Traceback" not in output and SECRET not in output


@pytest.mark.parametrize(
    "line", ["LD_PRELOAD=/tmp/x.so", "PYTHONPATH=/tmp/elsewhere", "PYTHONWARNINGS=ignore::x.Y"]
)
def test_the_loaders_variables_are_refused(tmp_path: Path, line: str) -> None:
    env_file = write(tmp_path / "loader.env", f"HANDLER_KIT_TOKENS={SERVE_TOKEN}\n{line}\n")
    status, output = serve_with(env_file)
    assert status == 2, output
    name = line.partition("=")[0]
    assert f"line 2: {name} changes the code" in output
    assert line.partition("=")[2] not in output


def test_harmless_python_variables_and_app_secrets_are_read(tmp_path: Path) -> None:
    env_file = write(tmp_path / "ok.env", f"PYTHONUNBUFFERED=1\nSTRIPE_KEY={SECRET}\n{BAD_PORT}")
    status, output = serve_with(env_file)
    assert status == 2, output
    # past every line: stopped by the port, and the app's secret is not shown
    assert "HANDLER_KIT_PORT" in output
    assert SECRET not in output
