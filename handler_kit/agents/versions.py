"""The agent versions the runtime tests run: the one place they are pinned.

A new release of either agent may change what it sends to hooks or how it reads their answers;
moving a pin is a deliberate change, checked by ``make test-runtimes``.
"""

from __future__ import annotations

from pathlib import Path

CLAUDE_CODE = "claude-code"
CODEX = "codex"
AGENTS = (CLAUDE_CODE, CODEX)

# agent -> (npm package, pinned version, command it installs in node_modules/.bin)
PACKAGES: dict[str, tuple[str, str, str]] = {
    CLAUDE_CODE: ("@anthropic-ai/claude-code", "2.1.197", "claude"),
    CODEX: ("@openai/codex", "0.171.0", "codex"),
}


def npm_specs() -> list[str]:
    """``name@version`` of every pinned package, as ``npm install`` takes them."""
    return [f"{name}@{version}" for name, version, _ in PACKAGES.values()]


def versions_key() -> str:
    """The name of the cache folder of this set of versions: a new pin installs afresh."""
    return "_".join(f"{agent}-{PACKAGES[agent][1]}" for agent in AGENTS)


def describe() -> str:
    """One line naming the pinned agents, printed by every run."""
    return ", ".join(f"{name} {version}" for name, version, _ in PACKAGES.values())


def install_dir(cache: Path) -> Path:
    """Where the pinned packages of ``cache`` (a folder outside the repository) live."""
    return cache / versions_key()


def executable(install: Path, agent: str) -> Path:
    """The command of ``agent`` in an install folder made by :func:`install_dir`."""
    return install / "node_modules" / ".bin" / PACKAGES[agent][2]
