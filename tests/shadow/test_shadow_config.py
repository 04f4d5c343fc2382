"""``--shadow`` names a candidate that must import and be well configured: a bad one stops the
server at start-up, with one line, as a bad app does."""

from __future__ import annotations

import subprocess

import pytest

from handler_kit.config import ConfigError, ServerConfig
from tests.shadow.support import ENFORCED, TOKEN
from tests.support.processes import REPO, clean_env, free_port, serve_argv


def test_a_candidate_that_does_not_import_stops_serve_at_start_up() -> None:
    argv = serve_argv(ENFORCED, free_port(), "--shadow", "tests.shadow.no_such_module:app")
    done = subprocess.run(
        argv,
        cwd=REPO,
        env=clean_env(HANDLER_KIT_TOKENS=TOKEN),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "shadow app (--shadow, HANDLER_KIT_SHADOW)" in done.stderr
    assert "tests.shadow.no_such_module" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shadow": "candidate"}, "is not MODULE:ATTR"),
        ({"shadow": "c:app", "shadow_queue_size": 0}, "shadow_queue_size must be at least 1"),
        ({"shadow": "c:app", "shadow_timeout": 0}, "shadow_timeout must be positive"),
    ],
)
def test_bad_shadow_settings_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ServerConfig(tokens=[TOKEN], **options)  # type: ignore[arg-type]


def test_the_shadow_settings_are_read_from_the_environment() -> None:
    config = ServerConfig.from_env(
        {
            "HANDLER_KIT_SHADOW": "tests.shadow.apps:stricter",
            "HANDLER_KIT_SHADOW_QUEUE_SIZE": "7",
            "HANDLER_KIT_SHADOW_TIMEOUT": "250ms",
        }
    )
    assert (config.shadow, config.shadow_queue_size, config.shadow_timeout) == (
        "tests.shadow.apps:stricter",
        7,
        0.25,
    )
