"""Configuration: the settings of every part of handler-kit, and the only code that reads them
from the environment.

Each part takes a frozen dataclass built here: :class:`ServerConfig` (the ASGI app: auth, the
webhook, MCP, the inspector), :class:`OperationsConfig` (audit, metrics, tracing,
idempotency), :class:`ServeConfig` (``handler-kit serve``: address, TLS, workers),
:class:`CommandConfig` (``handler-kit command``) and :class:`ClientConfig` (the commands that
call a server). Everything reachable from the environment is reachable as a constructor
argument, so code and tests configure handler-kit without touching ``os.environ``; a copy with
changes is ``dataclasses.replace(config, field=value)``, where a misspelt field is a
``TypeError``.

:data:`SETTINGS` lists every environment variable once: its field, its parser, its help. The
``from_env`` constructors read through it, :func:`export_env` writes through it (how ``serve``
hands its configuration to worker processes), and the docs' table and the CLI's help text are
rendered from it. A value that does not parse is refused with a message naming the variable;
a renamed variable is still read, for one release, with a :class:`DeprecatedSetting` warning.

Importing this package costs almost nothing: the dataclasses and the table live in
:mod:`handler_kit.config._settings`, loaded on first use of one of their names. The variable
reads that must start fast (the forwarder's token: a command hook started on every tool call)
are plain functions here. Everything imports only the standard library.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# typing costs a measurable share of the forwarder's start-up; type checkers read this name
# as typing.TYPE_CHECKING
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler_kit.config._settings import (
        BY_ENV as BY_ENV,
    )
    from handler_kit.config._settings import (
        DEFAULT_AUDIT_QUEUE_SIZE as DEFAULT_AUDIT_QUEUE_SIZE,
    )
    from handler_kit.config._settings import (
        DEFAULT_IDEMPOTENCY_TTL as DEFAULT_IDEMPOTENCY_TTL,
    )
    from handler_kit.config._settings import (
        DEFAULT_MAX_BODY_BYTES as DEFAULT_MAX_BODY_BYTES,
    )
    from handler_kit.config._settings import (
        LOG_FORMATS as LOG_FORMATS,
    )
    from handler_kit.config._settings import (
        LOG_LEVELS as LOG_LEVELS,
    )
    from handler_kit.config._settings import (
        SETTINGS as SETTINGS,
    )
    from handler_kit.config._settings import (
        AuditSink as AuditSink,
    )
    from handler_kit.config._settings import (
        ClientConfig as ClientConfig,
    )
    from handler_kit.config._settings import (
        CommandConfig as CommandConfig,
    )
    from handler_kit.config._settings import (
        ConfigError as ConfigError,
    )
    from handler_kit.config._settings import (
        DeprecatedSetting as DeprecatedSetting,
    )
    from handler_kit.config._settings import (
        Extension as Extension,
    )
    from handler_kit.config._settings import (
        IdempotencyStore as IdempotencyStore,
    )
    from handler_kit.config._settings import (
        JWTConfig as JWTConfig,
    )
    from handler_kit.config._settings import (
        OperationsConfig as OperationsConfig,
    )
    from handler_kit.config._settings import (
        ServeConfig as ServeConfig,
    )
    from handler_kit.config._settings import (
        ServerConfig as ServerConfig,
    )
    from handler_kit.config._settings import (
        Setting as Setting,
    )
    from handler_kit.config._settings import (
        export_env as export_env,
    )
    from handler_kit.config._settings import (
        parse_duration as parse_duration,
    )
    from handler_kit.config._settings import (
        parse_flag as parse_flag,
    )
    from handler_kit.config._settings import (
        parse_int as parse_int,
    )
    from handler_kit.config._settings import (
        parse_list as parse_list,
    )
    from handler_kit.config._settings import (
        parse_log_format as parse_log_format,
    )
    from handler_kit.config._settings import (
        parse_log_level as parse_log_level,
    )
    from handler_kit.config._settings import (
        parse_on_full as parse_on_full,
    )
    from handler_kit.config._settings import (
        parse_port as parse_port,
    )
    from handler_kit.config._settings import (
        parse_positive_int as parse_positive_int,
    )
    from handler_kit.config._settings import (
        parse_size as parse_size,
    )
    from handler_kit.config._settings import (
        parse_str as parse_str,
    )
    from handler_kit.config._settings import (
        setting_for as setting_for,
    )
    from handler_kit.config._settings import (
        settings_table as settings_table,
    )

Environ = Mapping[str, str]
# The variable a client (``send``, ``forward``, generated documents, installed http hooks) takes
# its one bearer token from; the server accepts a list (HANDLER_KIT_TOKENS) so tokens can be
# rotated.
CLIENT_TOKEN_VARIABLE = "HANDLER_KIT_TOKEN"


def environment() -> Environ:
    """The process environment, for documents whose templates name variables by design
    (``Bearer $HANDLER_KIT_TOKEN`` in a hooks document's headers)."""
    return os.environ


def client_token(variable: str = CLIENT_TOKEN_VARIABLE) -> str | None:
    """The bearer token in ``variable`` (surrounding blanks removed; empty is unset), read as
    :class:`ClientConfig` reads it, without loading the settings."""
    return os.environ.get(variable, "").strip() or None


# The variables of a command hook's settings (CommandConfig and its OperationsConfig, old
# names included) that need the settings to be read: with none of them set, the hook's
# configuration is the defaults, and the settings, a measurable share of a process started on
# every tool call, are not loaded. TMPDIR and TRACEPARENT are read as they are (stripped).
# tests/test_config.py holds this list to SETTINGS.
COMMAND_VARIABLES = (
    "HANDLER_KIT_DEBUG",
    "HANDLER_KIT_AUDIT",
    "HANDLER_KIT_AUDIT_FILE",
    "HANDLER_KIT_AUDIT_REDACT",
    "HANDLER_KIT_AUDIT_TEXT",
    "HANDLER_KIT_AUDIT_INPUT",
    "HANDLER_KIT_AUDIT_TOOL_INPUT",
    "HANDLER_KIT_AUDIT_QUEUE_SIZE",
    "HANDLER_KIT_AUDIT_QUEUE",
    "HANDLER_KIT_AUDIT_ON_FULL",
    "HANDLER_KIT_AUDIT_PROCESS",
    "HANDLER_KIT_AUDIT_DURABLE",
    "HANDLER_KIT_APP_VERSION",
    "HANDLER_KIT_REPLICA",
    "HANDLER_KIT_METRICS",
    "PROMETHEUS_MULTIPROC_DIR",
    "HANDLER_KIT_OTEL",
    "HANDLER_KIT_IDEMPOTENCY_REDIS_URL",
    "HANDLER_KIT_IDEMPOTENCY_REDIS_URL_FILE",
    "HANDLER_KIT_IDEMPOTENCY_KEYS",
    "HANDLER_KIT_IDEMPOTENCY_KEYS_FILE",
    "HANDLER_KIT_IDEMPOTENCY_TTL",
)
_PLAIN_COMMAND_VARIABLES = ("TMPDIR", "TRACEPARENT")


# The variables in which a runtime names the project to a command hook: Claude Code's, then
# Posit Assistant's (which sets no CLAUDE_PROJECT_DIR). Codex names none: its hooks run in the
# session's folder, the event's cwd.
PROJECT_DIR_VARIABLES = ("CLAUDE_PROJECT_DIR", "PA_PROJECT_DIR")


def runtime_project_dir() -> str | None:
    """The project folder the runtime that started this process named, if it named one."""
    for name in PROJECT_DIR_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


class _NoOperations:
    """What a command hook asks of an OperationsConfig with every default: nothing is on."""

    auditing = False
    tracing = False


class DefaultCommandConfig:
    """A :class:`CommandConfig` with the defaults and only ``tmpdir`` and ``traceparent``
    from the environment, made without loading the settings (see :func:`command_config`)."""

    debug = False
    operations = _NoOperations()

    def __init__(self, tmpdir: str | None, traceparent: str | None) -> None:
        self.tmpdir = tmpdir
        self.traceparent = traceparent


def command_config() -> CommandConfig | DefaultCommandConfig:
    """``CommandConfig.from_env()``, or the same values without the settings when none of
    :data:`COMMAND_VARIABLES` is set (what a command hook's process usually finds)."""
    env = os.environ
    for name in COMMAND_VARIABLES:
        if env.get(name, "").strip():
            from handler_kit.config._settings import CommandConfig

            return CommandConfig.from_env()
    tmpdir, traceparent = (env.get(name, "").strip() or None for name in _PLAIN_COMMAND_VARIABLES)
    return DefaultCommandConfig(tmpdir=tmpdir, traceparent=traceparent)


_LAZY = frozenset(
    {
        "AuditSink",
        "BY_ENV",
        "ClientConfig",
        "CommandConfig",
        "ConfigError",
        "DEFAULT_AUDIT_QUEUE_SIZE",
        "DEFAULT_IDEMPOTENCY_TTL",
        "DEFAULT_MAX_BODY_BYTES",
        "DeprecatedSetting",
        "Extension",
        "IdempotencyStore",
        "JWTConfig",
        "LOG_FORMATS",
        "LOG_LEVELS",
        "OperationsConfig",
        "SETTINGS",
        "ServeConfig",
        "ServerConfig",
        "Setting",
        "export_env",
        "parse_duration",
        "parse_flag",
        "parse_int",
        "parse_list",
        "parse_log_format",
        "parse_log_level",
        "parse_on_full",
        "parse_port",
        "parse_positive_int",
        "parse_size",
        "parse_str",
        "setting_for",
        "settings_table",
    }
)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from handler_kit.config import _settings

    value = getattr(_settings, name)
    globals()[name] = value
    return value


__all__ = [
    "BY_ENV",
    "CLIENT_TOKEN_VARIABLE",
    "COMMAND_VARIABLES",
    "DEFAULT_AUDIT_QUEUE_SIZE",
    "DEFAULT_IDEMPOTENCY_TTL",
    "DEFAULT_MAX_BODY_BYTES",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "SETTINGS",
    "AuditSink",
    "ClientConfig",
    "CommandConfig",
    "ConfigError",
    "DefaultCommandConfig",
    "DeprecatedSetting",
    "Environ",
    "Extension",
    "IdempotencyStore",
    "JWTConfig",
    "OperationsConfig",
    "ServeConfig",
    "ServerConfig",
    "Setting",
    "client_token",
    "command_config",
    "environment",
    "export_env",
    "parse_duration",
    "parse_flag",
    "parse_int",
    "parse_list",
    "parse_log_format",
    "parse_log_level",
    "parse_on_full",
    "parse_port",
    "parse_positive_int",
    "parse_size",
    "parse_str",
    "runtime_project_dir",
    "setting_for",
    "settings_table",
]
