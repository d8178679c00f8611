"""Where the settings come from, and which wins: defaults < TOML file < ``CHUNKBRIDGE_*``
environment < command-line flags.

Every setting has one name used everywhere: the TOML key and the field name of
:class:`~chunkbridge.gateway.config.GatewayConfig` are the same (``upstream``,
``idle_timeout``…), the environment variable is ``CHUNKBRIDGE_`` + the name in capitals
(``CHUNKBRIDGE_IDLE_TIMEOUT=30``), the flag is ``--`` + the name with dashes (``--idle-timeout
30``, generated from the model by :mod:`chunkbridge.gateway.cli.flags`). A dialect's own settings
(its ``Dialect.settings`` model) follow the same rule under the dialect's name: the TOML table
``[openai-chat]``, ``CHUNKBRIDGE_OPENAI_CHAT_MODEL``, ``--openai-chat-model``.

An environment variable that starts with ``CHUNKBRIDGE_`` but names no setting is reported (a
typo would otherwise be silently ignored); files (the TOML file, ``jwt_key_file``) are read once,
when the configuration is loaded.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from chunkbridge.gateway.config import ConfigError, GatewayConfig

__all__ = ["LoadedConfig", "dialect_env_prefix", "environment_values", "load_config"]

ENV_PREFIX = "CHUNKBRIDGE_"


def dialect_env_prefix(dialect: str) -> str:
    """``CHUNKBRIDGE_OPENAI_CHAT_`` for ``openai-chat``."""
    return ENV_PREFIX + dialect.upper().replace("-", "_") + "_"


def _env_value(raw: str) -> Any:
    """Lists and objects are given as JSON (``'["https://a.example"]'``); scalars as plain text,
    which pydantic coerces (``"30"`` → 30.0, ``"true"`` → True)."""
    if raw[:1] in ("[", "{"):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return raw


def environment_values(
    environ: Mapping[str, str], dialect_models: Mapping[str, type[BaseModel]]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[str]]:
    """``CHUNKBRIDGE_*`` variables: (gateway settings, dialect settings by dialect, warnings
    about variables that name no setting)."""
    known = {ENV_PREFIX + name.upper(): name for name in GatewayConfig.model_fields}
    known.pop(ENV_PREFIX + "DIALECT_SETTINGS", None)
    dialect_known = {
        dialect_env_prefix(dialect) + name.upper(): (dialect, name)
        for dialect, model in dialect_models.items()
        for name in model.model_fields
    }
    values: dict[str, Any] = {}
    dialect_values: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    for variable, raw in environ.items():
        if not variable.startswith(ENV_PREFIX):
            continue
        if variable in known:
            values[known[variable]] = _env_value(raw)
        elif variable in dialect_known:
            dialect, name = dialect_known[variable]
            dialect_values.setdefault(dialect, {})[name] = _env_value(raw)
        else:
            close = difflib.get_close_matches(variable, [*known, *dialect_known], n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            warnings.append(f"{variable} is not a chunkbridge setting; it is ignored{hint}")
    return values, dialect_values, warnings


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A configuration and what loading it found worth a warning."""

    config: GatewayConfig
    warnings: list[str]


def _problems(exc: ValidationError, where: str = "") -> str:
    return "; ".join(
        f"{where}{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors()
    )


def load_config(
    toml_path: Path | None = None,
    *,
    dialect_models: Mapping[str, type[BaseModel]] | None = None,
    dialect_flags: Mapping[str, Mapping[str, Any]] | None = None,
    environ: Mapping[str, str] | None = None,
    **flags: Any,
) -> LoadedConfig:
    """Build the configuration: TOML file, overridden by environment, overridden by flags.

    ``dialect_models`` (name → settings model) says which dialect settings exist; each
    dialect's settings are validated against its model. ``None`` flag values do not override.
    """
    models = dict(dialect_models or {})
    environ = os.environ if environ is None else environ
    file_values: dict[str, Any] = {}
    if toml_path is not None:
        try:
            file_values = tomllib.loads(toml_path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config file {toml_path}: {exc}") from exc
        file_values = {k.replace("-", "_"): v for k, v in file_values.items()}
    file_dialects = {
        name: file_values.pop(name.replace("-", "_"))
        for name in models
        if isinstance(file_values.get(name.replace("-", "_")), dict)
    }
    explicit = {k: v for k, v in flags.items() if v is not None}
    env, env_dialects, warnings = environment_values(environ, models)
    # The PaaS convention (and the benchmark harness): a bare PORT is used when nothing else
    # names the port.
    if "port" not in explicit and "port" not in env and "port" not in file_values:
        if environ.get("PORT", "").isdigit():
            explicit["port"] = int(environ["PORT"])
    dialect_settings: dict[str, Any] = {}
    for name, model in models.items():
        raw = {
            **file_dialects.get(name, {}),
            **env_dialects.get(name, {}),
            **{k: v for k, v in (dialect_flags or {}).get(name, {}).items() if v is not None},
        }
        try:
            dialect_settings[name] = model.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"invalid configuration: {_problems(exc, f'{name}.')}") from exc
    try:
        config = GatewayConfig(
            **{**file_values, **env, **explicit}, dialect_settings=dialect_settings
        )
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {_problems(exc)}") from exc
    return LoadedConfig(config=config, warnings=warnings)
