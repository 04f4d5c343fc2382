"""handler_kit.config: one parser per kind of value, refusals that name the variable, renamed
variables still read, overrides that refuse a misspelt field, and the one table behind the
docs and the CLI's help."""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from handler_kit.config import (
    SETTINGS,
    ClientConfig,
    CommandConfig,
    ConfigError,
    DeprecatedSetting,
    JWTConfig,
    OperationsConfig,
    ServeConfig,
    ServerConfig,
    export_env,
    settings_table,
)

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "config-test-token-0123456789"


def test_defaults_without_environment() -> None:
    config = ServeConfig.from_env({})
    assert config == ServeConfig()
    assert config.server.operations == OperationsConfig()
    assert not config.server.operations.enabled
    assert CommandConfig.from_env({}) == CommandConfig()
    assert ClientConfig.from_env({}).token is None


@pytest.mark.parametrize(
    ("variable", "raw", "field", "expected"),
    [
        ("HANDLER_KIT_MAX_BODY_BYTES", "4096", "max_body_bytes", 4096),
        ("HANDLER_KIT_MAX_BODY_BYTES", "2KiB", "max_body_bytes", 2048),
        ("HANDLER_KIT_MAX_BODY_BYTES", "1MB", "max_body_bytes", 1_000_000),
        ("HANDLER_KIT_REQUIRE_EVENT_HEADER", "yes", "require_event_header", True),
        ("HANDLER_KIT_MCP", "off", "mcp", False),
        ("HANDLER_KIT_ALLOWED_HOSTS", " a.example , b:80,", "allowed_hosts", ("a.example", "b:80")),
        ("HANDLER_KIT_TOKENS", f"{TOKEN},{TOKEN}x", "tokens", (TOKEN, f"{TOKEN}x")),
    ],
)  # fmt: skip
def test_server_settings_parse(variable: str, raw: str, field: str, expected: object) -> None:
    assert getattr(ServerConfig.from_env({variable: raw}), field) == expected


@pytest.mark.parametrize(
    ("raw", "seconds"), [("90", 90.0), ("1.5", 1.5), ("250ms", 0.25), ("5m", 300.0), ("2h", 7200.0)]
)
def test_durations(raw: str, seconds: float) -> None:
    config = OperationsConfig.from_env({"HANDLER_KIT_IDEMPOTENCY_TTL": raw})
    assert config.idempotency_ttl == seconds


@pytest.mark.parametrize(
    ("variable", "raw", "message"),
    [
        ("HANDLER_KIT_MAX_BODY_BYTES", "abc", "HANDLER_KIT_MAX_BODY_BYTES must be a positive size"),
        ("HANDLER_KIT_MAX_BODY_BYTES", "0", "HANDLER_KIT_MAX_BODY_BYTES must be a positive size"),
        ("HANDLER_KIT_METRICS", "maybe", "HANDLER_KIT_METRICS must be a flag"),
        ("HANDLER_KIT_PORT", "http", "HANDLER_KIT_PORT must be an integer, got 'http'"),
        ("HANDLER_KIT_PORT", "70000", "HANDLER_KIT_PORT must be a port number"),
        ("HANDLER_KIT_WORKERS", "0", "HANDLER_KIT_WORKERS must be a positive integer"),
        ("HANDLER_KIT_AUDIT_ON_FULL", "spill", "HANDLER_KIT_AUDIT_ON_FULL must be 'block' or"),
        ("HANDLER_KIT_IDEMPOTENCY_TTL", "soon", "HANDLER_KIT_IDEMPOTENCY_TTL must be a duration"),
        ("HANDLER_KIT_LOG_LEVEL", "loud", "HANDLER_KIT_LOG_LEVEL must be one of"),
        ("HANDLER_KIT_JWT_ALGORITHMS", "RS256", "HANDLER_KIT_JWT_ALGORITHMS set without a JWT key"),
        ("HANDLER_KIT_JWT_SECRET", "s" * 40, "HANDLER_KIT_JWT_ALGORITHMS is required"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_naming_the_variable(variable: str, raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ServeConfig.from_env({variable: raw})


def test_a_secret_value_is_not_echoed() -> None:
    config = ServerConfig.from_env({"HANDLER_KIT_TOKENS": TOKEN, "HANDLER_KIT_JWT_SECRET": "x" * 40,
                                    "HANDLER_KIT_JWT_ALGORITHMS": "HS256"})  # fmt: skip
    assert TOKEN not in repr(config) and "x" * 40 not in repr(config)


@pytest.mark.parametrize(
    ("old", "raw", "field", "expected"),
    [
        ("HANDLER_KIT_NO_MCP", "1", "mcp", False),
        ("HANDLER_KIT_NO_MCP", "0", "mcp", True),
        ("HANDLER_KIT_AUDIT_QUEUE", "7", "audit_queue_size", 7),
    ],
)
def test_renamed_variables_still_work_with_a_warning(
    old: str, raw: str, field: str, expected: object
) -> None:
    with pytest.warns(DeprecatedSetting, match=old):
        config = ServerConfig.from_env({old: raw})
    holder = config.operations if field.startswith("audit") else config
    assert getattr(holder, field) == expected


def test_the_new_name_wins_over_the_old_one() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = ServerConfig.from_env({"HANDLER_KIT_MCP": "1", "HANDLER_KIT_NO_MCP": "1"})
    assert config.mcp is True


def test_overrides_refuse_a_misspelt_field() -> None:
    with pytest.raises(TypeError, match="tokns"):
        ServerConfig.from_env({}, tokns=[TOKEN])
    with pytest.raises(TypeError, match="tokns"):
        dataclasses.replace(ServerConfig(), tokns=[TOKEN])  # type: ignore[call-arg]
    assert ServerConfig.from_env({}, tokens=[TOKEN]).tokens == (TOKEN,)


def test_configs_are_frozen_and_hold_no_caller_list() -> None:
    hosts = ["a.example"]
    config = ServerConfig(allowed_hosts=hosts)
    hosts.append("b.example")
    assert config.allowed_hosts == ("a.example",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.mcp = False  # type: ignore[misc]
    with pytest.raises(ConfigError, match="must be a list"):
        ServerConfig(tokens=TOKEN)


def test_jwt_settings() -> None:
    config = ServerConfig.from_env(
        {"HANDLER_KIT_JWT_ALGORITHMS": "RS256, ES256", "HANDLER_KIT_JWT_JWKS_URL": "https://k",
         "HANDLER_KIT_JWT_AUDIENCE": "hooks"}
    )  # fmt: skip
    assert config.jwt == JWTConfig(algorithms=("RS256", "ES256"), jwks_url="https://k",
                                   audience="hooks")  # fmt: skip


def test_export_env_round_trips() -> None:
    config = ServeConfig(
        app="myhooks:app",
        port=9001,
        workers=2,
        graceful_timeout=2.5,
        access_log=True,
        server=ServerConfig(
            tokens=(TOKEN,),
            mcp=False,
            max_body_bytes=4096,
            allowed_hosts=("a.example",),
            jwt=JWTConfig(algorithms=("HS256",), secret="k" * 40),
            operations=OperationsConfig(audit=("stdout",), audit_on_full="drop", metrics=True),
        ),
    )
    exported = export_env(config)
    assert exported["HANDLER_KIT_MCP"] == "0"
    assert "HANDLER_KIT_HOST" not in exported  # defaults are not written
    assert ServeConfig.from_env(exported) == config


def test_objects_cannot_be_exported_to_workers() -> None:
    from handler_kit.auth import StaticTokenAuth

    with pytest.raises(ConfigError, match="worker processes"):
        export_env(ServeConfig(server=ServerConfig(auth=StaticTokenAuth([TOKEN]))))


def test_every_setting_is_documented_and_named_once() -> None:
    names = [s.env for s in SETTINGS]
    assert len(names) == len(set(names))
    for setting in SETTINGS:
        assert setting.help and not setting.help.endswith("."), setting.env
    config_page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    start, end = "<!-- settings:start -->\n", "<!-- settings:end -->"
    assert start in config_page and end in config_page, "docs/configuration.md lost its markers"
    shown = config_page.split(start, 1)[1].split(end, 1)[0]
    assert shown == settings_table(), (
        "docs/configuration.md's table differs from handler_kit.config.SETTINGS: put the output "
        "of `python -c 'import handler_kit.config as c; print(c.settings_table(), end=\"\")'` "
        "between its markers"
    )


def test_serve_help_is_generated_from_the_settings() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "handler_kit", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    help_text = " ".join(proc.stdout.split())
    options = [s for s in SETTINGS if s.option]
    assert len(options) >= 10
    for setting in options:
        assert setting.option in help_text
        assert " ".join(setting.describe().split()) in help_text, setting.env


def test_only_the_config_module_reads_the_environment() -> None:
    """``os.environ``/``os.getenv`` appear in the handler_kit.config package and nowhere else,
    except where a process hands its configuration on (``serve`` exporting to its workers)."""
    allowed_writes = {"handler_kit/cli/serve.py"}
    offenders = []
    for path in sorted((ROOT / "handler_kit").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("handler_kit/config/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv"):
                if relative in allowed_writes and _is_update(tree, node):
                    continue
                offenders.append(f"{relative}:{node.lineno}")
    assert not offenders, offenders


def _is_update(tree: ast.AST, target: ast.Attribute) -> bool:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and node.func.value is target
        ):
            return True
    return False


def test_tokens_from_a_mounted_secret_file(tmp_path: Path) -> None:
    """HANDLER_KIT_TOKENS_FILE: tokens by commas or lines, the trailing newline no part of one;
    ``serve`` hands them to its workers under HANDLER_KIT_TOKENS, never the file variable."""
    secret = tmp_path / "tokens"
    other = "config-test-token-second-012345"
    secret.write_text(f"{TOKEN}\n{other},\n", encoding="utf-8")
    config = ServeConfig.from_env({"HANDLER_KIT_TOKENS_FILE": str(secret)})
    assert config.server.tokens == (TOKEN, other)
    exported = export_env(config)
    assert exported["HANDLER_KIT_TOKENS"] == f"{TOKEN},{other}"
    assert "HANDLER_KIT_TOKENS_FILE" not in exported
    # a worker's environment holds both, equal
    both = {**exported, "HANDLER_KIT_TOKENS_FILE": str(secret)}
    assert ServeConfig.from_env(both) == config
    with pytest.raises(ConfigError, match="HANDLER_KIT_TOKENS and HANDLER_KIT_TOKENS_FILE"):
        ServerConfig.from_env({"HANDLER_KIT_TOKENS": other, "HANDLER_KIT_TOKENS_FILE": str(secret)})
    # the audit sinks likewise, for a database URL that holds its password
    dsn = tmp_path / "audit"
    dsn.write_text("postgresql://hk:pw-in-a-secret@db:5432/hk\n", encoding="utf-8")
    operations = OperationsConfig.from_env({"HANDLER_KIT_AUDIT_FILE": str(dsn)})
    assert operations.audit == ("postgresql://hk:pw-in-a-secret@db:5432/hk",)


def test_an_unreadable_or_empty_token_file_is_refused_without_its_text(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    with pytest.raises(ConfigError, match=r"HANDLER_KIT_TOKENS_FILE: cannot read .*absent"):
        ServerConfig.from_env({"HANDLER_KIT_TOKENS_FILE": str(missing)})
    empty = tmp_path / "empty"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="holds no value"):
        ServerConfig.from_env({"HANDLER_KIT_TOKENS_FILE": str(empty)})
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff" + TOKEN.encode())
    with pytest.raises(ConfigError) as caught:
        ServerConfig.from_env({"HANDLER_KIT_TOKENS_FILE": str(binary)})
    assert TOKEN not in str(caught.value)
