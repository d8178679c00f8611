"""Gateway configuration: defaults < TOML file < ``CHUNKBRIDGE_*`` environment < command-line flags.

Every setting has one name used everywhere: the TOML key and the field name are the same
(``upstream``, ``idle_timeout``…), the environment variable is ``CHUNKBRIDGE_`` + the name in
capitals (``CHUNKBRIDGE_IDLE_TIMEOUT=30``), the flag is ``--`` + the name with dashes
(``--idle-timeout 30``). ``chunkbridge serve --help`` lists them; the README has the table.
"""

from __future__ import annotations

import os
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["AuthMode", "GatewayConfig", "HistoryMode", "load_config"]


class AuthMode(StrEnum):
    NONE = "none"
    #: Require ``Authorization: Bearer`` and pass it on the upstream handshake.
    BEARER_FORWARD = "bearer-forward"
    #: Verify a JWT (HS256/RS256) with the configured key, issuer and audience.
    JWT = "jwt"


class HistoryMode(StrEnum):
    #: Send only the newest user message (the upstream keeps the history).
    LATEST = "latest"
    #: Send the whole UIMessage history (openai-chat always converts the history).
    FULL = "full"


ENV_PREFIX = "CHUNKBRIDGE_"


class GatewayConfig(BaseModel):
    """Every setting; pydantic validates and coerces them whatever their source."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    #: Upstream URL template; ``{session_id}`` is replaced by the URL-quoted session id.
    #: ``ws://``/``wss://`` for WebSocket upstreams; for ``upstream_kind = "openai"`` the base URL.
    upstream: str = "ws://127.0.0.1:9000/sessions/{session_id}/ws"
    upstream_kind: Literal["websocket", "openai"] = "websocket"
    dialect: str = "agent-ops-v2"
    #: AI SDK major of the clients: 5 (default) is accepted by 5, 6 and 7.
    target: Literal[5, 6, 7] = 5
    unknown_events: Literal["forward", "drop", "error"] = "forward"
    dynamic_tools: bool = False
    history: HistoryMode = HistoryMode.LATEST

    auth: AuthMode = AuthMode.NONE
    jwt_key: str | None = None
    jwt_key_file: Path | None = None
    jwt_algorithms: list[str] = ["HS256", "RS256"]
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    #: Claim listing the session ids a token may use (``"*"`` allows all); absent → 403.
    jwt_sessions_claim: str = "sessions"

    connect_timeout: float = Field(10.0, gt=0)
    first_event_timeout: float = Field(60.0, gt=0)
    idle_timeout: float = Field(120.0, gt=0)
    total_timeout: float = Field(1800.0, gt=0)
    keepalive_interval: float = Field(15.0, gt=0)
    #: Writes to one client at most this often (s): frames arriving sooner after a write are
    #: held and sent together. 0 writes as soon as frames arrive.
    flush_interval: float = Field(0.001, ge=0, le=1)
    #: Seconds in-flight streams get to finish after SIGTERM.
    drain_timeout: float = Field(10.0, ge=0)
    max_body_bytes: int = Field(4 * 1024 * 1024, gt=0)
    cors_origins: list[str] = []
    #: Replace upstream error texts with a generic message in the ``error`` chunk.
    mask_errors: bool = False
    on_disconnect: Literal["abort", "detach"] = "abort"
    #: Concurrent turns allowed per session id (a further POST gets 409).
    max_turns_per_session: int = Field(1, ge=1)

    #: Frame templates overriding the dialect defaults (JSON objects with ``{text}``,
    #: ``{message_id}``, ``{run_id}`` placeholders in string values).
    prompt_frame: dict[str, Any] | None = None
    abort_frame: dict[str, Any] | None = None
    regenerate_frame: dict[str, Any] | None = None

    openai_api_key: str | None = None
    openai_model: str = "gpt-4.1-mini"
    openai_max_retries: int = Field(3, ge=0, le=10)

    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["json", "console"] = "json"

    @field_validator("upstream")
    @classmethod
    def _template(cls, value: str) -> str:
        if "{session_id}" not in value and not value.startswith(("http://", "https://")):
            raise ValueError("the upstream URL template must contain {session_id}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> GatewayConfig:
        if self.auth is AuthMode.JWT and not (self.jwt_key or self.jwt_key_file):
            raise ValueError("auth = jwt needs jwt_key or jwt_key_file")
        if self.keepalive_interval >= self.idle_timeout:
            raise ValueError("keepalive_interval must be shorter than idle_timeout")
        return self

    def jwt_verification_key(self) -> str:
        if self.jwt_key_file is not None:
            return self.jwt_key_file.read_text()
        assert self.jwt_key is not None
        return self.jwt_key


class ConfigError(ValueError):
    """The configuration cannot be used; the message says which setting and why."""


def environment_values(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """``CHUNKBRIDGE_<NAME>`` variables for known settings. Lists and objects are given as JSON
    (``CHUNKBRIDGE_CORS_ORIGINS='["https://a.example"]'``); scalars as plain text, which pydantic
    coerces (``"30"`` → 30.0, ``"true"`` → True)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for name in GatewayConfig.model_fields:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is None:
            continue
        if raw[:1] in ("[", "{"):
            try:
                values[name] = orjson.loads(raw)
                continue
            except orjson.JSONDecodeError:
                pass
        values[name] = raw
    return values


def load_config(toml_path: Path | None = None, **flags: Any) -> GatewayConfig:
    """Build the configuration: TOML file, overridden by environment, overridden by flags."""
    from pydantic import ValidationError

    file_values: dict[str, Any] = {}
    if toml_path is not None:
        try:
            file_values = tomllib.loads(toml_path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config file {toml_path}: {exc}") from exc
        file_values = {k.replace("-", "_"): v for k, v in file_values.items()}
    explicit = {k: v for k, v in flags.items() if v is not None}
    env = environment_values()
    # The PaaS convention (and the benchmark harness): a bare PORT is used when nothing else
    # names the port.
    if "port" not in explicit and "port" not in env and "port" not in file_values:
        if os.environ.get("PORT", "").isdigit():
            explicit["port"] = int(os.environ["PORT"])
    try:
        return GatewayConfig(**{**file_values, **env, **explicit})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from exc
