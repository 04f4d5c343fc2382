"""``python -m handler_kit.agents install --cache DIR``: the pinned agents, installed with npm
into ``DIR/<versions>`` unless already there; prints the versions (stderr) and the folder
(stdout). ``python -m handler_kit.agents versions`` prints the versions alone."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from handler_kit.agents.versions import AGENTS, describe, executable, install_dir, npm_specs


def install(cache: Path) -> Path:
    """The install folder of the pinned agents under ``cache``, made with npm when missing.

    npm writes into a folder beside it, renamed into place once complete, so an interrupted
    install is never taken for a finished one.
    """
    target = install_dir(cache)
    if all(executable(target, agent).exists() for agent in AGENTS):
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is missing: install Node.js and npm (Debian: apt-get install npm)")
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(partial), *npm_specs()],
        stdin=subprocess.DEVNULL,
        stdout=sys.stderr,  # stdout is the folder's name alone, for the Makefile to read
    )
    if done.returncode != 0:
        raise SystemExit(f"npm install {' '.join(npm_specs())} failed (exit {done.returncode})")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m handler_kit.agents")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("versions", help="print the pinned agent versions")
    installer = commands.add_parser("install", help="install the pinned agents with npm")
    installer.add_argument("--cache", required=True, type=Path, help="a folder outside the repo")
    args = parser.parse_args(argv)
    sys.stderr.write(f"agents: {describe()}\n")
    if args.command == "install":
        print(install(args.cache.expanduser().resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
