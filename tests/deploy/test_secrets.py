"""The example Secret's placeholders (deploy/kubernetes/secret.yaml) are refused at start-up:
``handler-kit serve`` given the manifest's token file as it is exits with a message that names
the setting, rather than serving behind a token anybody can read in this repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from handler_kit.config import ConfigError, OperationsConfig, ServeConfig, ServerConfig, export_env
from tests.deploy.support import GATE_NAME, PLACEHOLDER, find
from tests.support.processes import clean_env, free_port, process, serve_argv

APP = "example_servers.refund_gate:app"
REAL = "a-real-token-0123456789abcdef"
# the Redis store takes the MAC keys of its records with its URL
KEYS = {"HANDLER_KIT_IDEMPOTENCY_KEYS": "0123456789abcdef" * 4}


def serve_exit(tmp_path: Path, tokens: str) -> tuple[int, str]:
    """How ``handler-kit serve`` ends given ``tokens`` as its mounted token file."""
    tokens_file = tmp_path / "tokens"
    tokens_file.write_text(tokens, encoding="utf-8")
    env = clean_env(HANDLER_KIT_TOKENS_FILE=str(tokens_file))
    with process(serve_argv(APP, free_port()), env) as server:
        code = server.proc.wait(timeout=30)
        return code, server.output()


def test_serve_refuses_the_example_secrets_token(tmp_path: Path) -> None:
    token = find("Secret", GATE_NAME)["stringData"]["tokens"]
    assert PLACEHOLDER in token
    code, output = serve_exit(tmp_path, f"{REAL}\n{token}\n")
    assert code != 0, output
    assert "HANDLER_KIT_TOKENS" in output and PLACEHOLDER in output, output
    assert "deploy/kubernetes/secret.yaml" in output, output
    assert "Traceback" not in output, output
    assert "Application startup complete" not in output, output


@pytest.mark.parametrize(
    "token", ["REPLACE-ME", "a-token-with-replace-me-inside-0123", "xxxxREPLACE-MExxxxxxxxxxxx"]
)
def test_a_token_equal_to_or_holding_the_placeholder_is_refused(token: str) -> None:
    with pytest.raises(ConfigError, match=r"HANDLER_KIT_TOKENS.*REPLACE-ME") as caught:
        ServerConfig(tokens=[REAL, token])
    assert token not in str(caught.value) or token == PLACEHOLDER


def test_a_real_token_is_accepted() -> None:
    assert ServerConfig(tokens=[REAL]).tokens == (REAL,)


def test_the_redis_url_is_read_from_its_secret_file(tmp_path: Path) -> None:
    url_file = tmp_path / "redis-url"
    url_file.write_text("redis://:a-real-password-0123@redis:6379/0\n", encoding="utf-8")
    env = {"HANDLER_KIT_IDEMPOTENCY_REDIS_URL_FILE": str(url_file), **KEYS}
    config = OperationsConfig.from_env(env)
    assert config.idempotency_redis_url == "redis://:a-real-password-0123@redis:6379/0"
    # what serve hands its workers: the plain variable
    exported = export_env(ServeConfig(server=ServerConfig(tokens=[REAL], operations=config)))
    assert exported["HANDLER_KIT_IDEMPOTENCY_REDIS_URL"] == (
        "redis://:a-real-password-0123@redis:6379/0"
    )
    assert "HANDLER_KIT_IDEMPOTENCY_REDIS_URL_FILE" not in exported


def test_the_example_secrets_redis_url_is_refused(tmp_path: Path) -> None:
    url_file = tmp_path / "redis-url"
    url_file.write_text(find("Secret", GATE_NAME)["stringData"]["redis-url"], encoding="utf-8")
    with pytest.raises(ConfigError, match=r"HANDLER_KIT_IDEMPOTENCY_REDIS_URL.*REPLACE-ME"):
        OperationsConfig.from_env({"HANDLER_KIT_IDEMPOTENCY_REDIS_URL_FILE": str(url_file), **KEYS})


def test_a_secret_file_of_more_than_one_line_is_refused(tmp_path: Path) -> None:
    url_file = tmp_path / "redis-url"
    url_file.write_text("redis://redis:6379/0\nredis://other:6379/0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="one value, on one line") as caught:
        OperationsConfig.from_env({"HANDLER_KIT_IDEMPOTENCY_REDIS_URL_FILE": str(url_file)})
    assert "redis://" not in str(caught.value)
