"""The gateway's settings: one model that validates and coerces them whatever their source.

A field's name is the setting's name in every source (the TOML key, ``CHUNKBRIDGE_`` + the name
in capitals, ``--`` + the name with dashes): :mod:`chunkbridge.gateway.config_sources` reads
them and says which wins.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from chunkbridge.gateway.tool_settings import ToolServerSettings

__all__ = ["AuthMode", "ConfigError", "GatewayConfig", "HistoryMode"]

#: Upstream URL schemes: WebSocket dialects, HTTP (server-sent events) dialects.
UPSTREAM_SCHEMES = ("ws", "wss", "http", "https")
POSTGRES_URL = "postgresql://127.0.0.1/chunkbridge"


class AuthMode(StrEnum):
    NONE = "none"
    #: Require ``Authorization: Bearer`` and pass it on to the upstream.
    BEARER_FORWARD = "bearer-forward"
    #: Verify a JWT (HS256/RS256) with the configured key, issuer and audience.
    JWT = "jwt"


class HistoryMode(StrEnum):
    #: Send only the newest user message (the upstream keeps the history).
    LATEST = "latest"
    #: Also send the whole UIMessage history in the prompt frame.
    FULL = "full"
    #: The whole history from the transcript store (the client sends only its last message).
    STORED = "stored"


class GatewayConfig(BaseModel):
    """Every setting of the gateway; pydantic validates and coerces them whatever their source."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(8000, ge=0, le=65535, description="port to listen on")
    upstream: str = Field(
        "ws://127.0.0.1:9000/sessions/{session_id}/ws",
        description="upstream URL: ws(s):// for WebSocket dialects (a template with "
        "{session_id}), http(s):// for HTTP dialects (the base of the dialect's path)",
    )
    dialect: str | None = Field(
        None, description="upstream dialect, required (chunkbridge dialects lists them)"
    )
    target: Literal[5, 6, 7] = Field(
        5, description="AI SDK major of the clients (5 is accepted by 5, 6 and 7)"
    )
    reset_step: bool = Field(
        False,
        description="target = 7: the clients accept reset-step (the app pins ai >= 7.0.70), so "
        "a step can be withdrawn from the message; off: it is a transient data part",
    )
    unknown_events: Literal["forward", "drop", "error"] = Field(
        "forward",
        description="unknown or malformed upstream events: forward (transient data parts), "
        "drop (counted), error (end the turn)",
    )
    dynamic_tools: bool = Field(False, description="send backend tools as dynamic-tool parts")
    history: HistoryMode | None = Field(
        None,
        description="what the upstream gets of the conversation: latest (the newest user "
        "message: it keeps the history), full (the whole UIMessage history the client sent) or "
        "stored (the whole history from the store: the client sends only its last message); "
        "default: the dialect's (full for ag-ui, latest for the others)",
    )
    store: Literal["off", "sqlite", "postgres"] = Field(
        "off", description="keep the chats: off, sqlite (a file: store_path), postgres (store_url)"
    )
    store_path: Path = Field(Path("chunkbridge.sqlite3"), description="store = sqlite: the file")
    store_url: str = Field(POSTGRES_URL, repr=False, description="store = postgres: a URL")
    store_ttl: float = Field(2_592_000.0, gt=0, description="seconds an unwritten chat is kept")
    store_max_messages: int = Field(1000, gt=0, description="history = stored: most messages")
    tools: dict[str, ToolServerSettings] = Field(
        default_factory=dict, description="MCP servers whose tools the gateway runs ([tools.NAME])"
    )
    max_steps: int = Field(10, ge=1, description="tools: model calls in one turn at most")
    tool_concurrency: int = Field(8, ge=1, description="tools: calls of one step run at once")

    auth: AuthMode = Field(AuthMode.NONE, description="client authentication")
    jwt_key: str | None = Field(None, description="HS256 secret or RS256 public key (PEM)")
    jwt_key_file: Path | None = Field(None, description="file holding the JWT key")
    jwt_algorithms: list[str] = Field(["HS256", "RS256"], description="accepted JWT algorithms")
    jwt_issuer: str | None = Field(None, description="required JWT issuer")
    jwt_audience: str | None = Field(None, description="required JWT audience")
    jwt_sessions_claim: str = Field(
        "sessions", description='claim listing the permitted session ids ("*": all)'
    )

    connect_timeout: float = Field(10.0, gt=0, description="upstream connect/handshake, s")
    first_event_timeout: float = Field(
        60.0, gt=0, description="silence allowed before the first upstream event, s"
    )
    idle_timeout: float = Field(120.0, gt=0, description="silence allowed between events, s")
    total_timeout: float = Field(1800.0, gt=0, description="longest turn, s")
    keepalive_interval: float = Field(
        15.0, gt=0, description="keep-alive comment after this much silence, s"
    )
    flush_interval: float = Field(
        0.001,
        ge=0,
        le=1,
        description="at most one write per client per this many s: frames arriving sooner "
        "after a write are held and sent together (0: never hold)",
    )
    question_settle: float = Field(
        0.5,
        gt=0,
        le=60,
        description="after the agent asks (a question, an approval), this much upstream silence "
        "ends the turn waiting for the answer; an agent that goes on streams into that message, s",
    )
    drain_timeout: float = Field(10.0, ge=0, description="SIGTERM: seconds streams get to end")
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="processes serving the port (serve): one per core; turns, the per-session "
        "rule and resume are per process unless resume = redis",
    )
    max_body_bytes: int = Field(4 * 1024 * 1024, gt=0, description="largest request body")
    max_messages: int = Field(
        10_000, gt=0, description="most UIMessages a request may carry (400 beyond)"
    )
    max_event_bytes: int = Field(
        16 * 1024 * 1024,
        ge=1024,
        description="largest single upstream event (an SSE event, an NDJSON line): one that "
        "grows past it ends the turn with an error",
    )
    lingering_bytes: int = Field(
        128 * 1024 * 1024,
        ge=0,
        description="a refusal sent before the body was read (413, 415…) then reads and drops "
        "up to this many bytes of the rest, so a client that writes before reading gets it",
    )
    lingering_time: float = Field(
        10.0, ge=0, description="… and for at most this many s before the connection closes"
    )
    cors_origins: list[str] = Field([], description="browser origins allowed to call (CORS)")
    mask_errors: bool = Field(False, description="replace upstream error texts by generic ones")
    on_disconnect: Literal["abort", "detach"] = Field(
        "abort", description="a client disconnect aborts the upstream turn, or detaches from it"
    )
    resume: Literal["off", "memory", "redis"] = Field(
        "off",
        description="resumable streams: off (a disconnect aborts the upstream turn), memory "
        "(one process: the turn runs on into a chunk log that GET …/chat/<chat id>/stream "
        "replays and follows; POST …/stop ends it), redis (the same, for all instances: redis_url)",
    )
    redis_url: str = Field(
        "redis://127.0.0.1:6379/0", description="Redis for resume = redis (redis:// or rediss://)"
    )
    owner_lease: float = Field(
        10.0,
        gt=0,
        description="resume = redis: seconds after which a turn whose instance stopped "
        "renewing it (it died) ends for its readers, and its session is free again",
    )
    resume_ttl: float = Field(300.0, gt=0, description="seconds a finished answer is replayable")
    durable: bool = Field(
        False,
        description="agent loop turns checkpointed in the store and taken over by another "
        "instance when theirs dies; needs resume = redis and store = sqlite or postgres",
    )
    max_recoveries: int = Field(
        3,
        ge=0,
        description="durable: takeovers of one turn from the same checkpoint before it ends "
        "with an error",
    )
    max_turns_per_session: int = Field(
        1, ge=1, description="concurrent turns per session id (409 beyond)"
    )
    busy: Literal["reject", "queue", "interrupt", "steer"] = Field(
        "reject",
        description="a new user message sent to a session whose turn runs (on any instance): "
        "reject (409), queue (it waits its turn), interrupt (the running turn is stopped, then "
        "it runs) or steer (it joins a loop turn at its next step boundary, or a pi agent's "
        "run through pi's steer; else it waits); "
        "anything but reject needs resume = memory or redis",
    )
    queue_max: int = Field(
        4, ge=1, description="busy: messages waiting per session at most (409 beyond)"
    )
    queue_timeout: float = Field(
        300.0, gt=0, description="busy: seconds a message waits at most (then error + finish)"
    )
    upstream_retries: int = Field(
        3, ge=0, le=10, description="HTTP upstreams: retries of 429/5xx before the first byte"
    )
    tls_client_cert: Path | None = Field(None, description="mTLS: client certificate (PEM)")
    tls_client_key: Path | None = Field(None, description="its key, if not in that file (PEM)")

    prompt_frame: dict[str, Any] | None = Field(
        None, description="JSON template replacing the dialect's prompt frame (WebSocket)"
    )
    regenerate_frame: dict[str, Any] | None = Field(
        None, description="JSON template replacing the dialect's regenerate frame (WebSocket)"
    )
    abort_frame: dict[str, Any] | None = Field(
        None, description="JSON template replacing the dialect's abort frame (WebSocket)"
    )
    answer_frame: dict[str, Any] | None = Field(
        None,
        description="JSON template replacing the dialect's answer frame (WebSocket): what "
        "carries the app's answer to an agent's question ({question_id}, \"{answer}\")",
    )
    approval_frame: dict[str, Any] | None = Field(
        None,
        description="JSON template replacing the dialect's approval frame (WebSocket): the "
        "app's decision on a tool approval ({approval_id}, {tool_call_id}, {tool_name}, "
        '"{approved}", "{reason}")',
    )
    approval_secret: str | None = Field(
        None,
        repr=False,
        description="sign tool approval requests (HMAC-SHA256, the AI SDK 7 scheme) and accept "
        "only answers whose signature verifies",
    )
    approval_ttl: float = Field(
        86_400.0,
        gt=0,
        description="seconds an approval request stays answerable (the gateway accepts answers "
        "only to approvals it issued in that session; shared by every instance with resume = "
        "redis)",
    )

    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="log level")
    log_format: Literal["json", "console"] = Field("json", description="log format")
    telemetry: Literal["off", "otlp"] = Field("off", description="OpenTelemetry (otlp: OTEL_*)")

    #: Each dialect's own settings by dialect name (validated against its model by
    #: :func:`~chunkbridge.gateway.config_sources.load_config`; raw dicts are accepted and
    #: validated when the app starts).
    dialect_settings: dict[str, Any] = Field({}, exclude=True, repr=False)

    _jwt_key_text: str | None = PrivateAttr(None)

    @field_validator("target", mode="before")
    @classmethod
    def _target_text(cls, value: Any) -> Any:
        # a Literal of ints takes no text: CHUNKBRIDGE_TARGET=7 arrives as "7"
        return int(value) if isinstance(value, str) and value.strip().isdigit() else value

    @field_validator("upstream")
    @classmethod
    def _upstream_url(cls, value: str) -> str:
        scheme = urlsplit(value).scheme
        if scheme not in UPSTREAM_SCHEMES:
            raise ValueError(f"use a ws://, wss://, http:// or https:// URL, not {value!r}")
        if scheme in ("ws", "wss") and "{session_id}" not in value:
            raise ValueError("a WebSocket upstream URL template must contain {session_id}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> GatewayConfig:
        if self.auth is AuthMode.JWT and not (self.jwt_key or self.jwt_key_file):
            raise ValueError("auth = jwt needs jwt_key or jwt_key_file")
        if self.history is HistoryMode.STORED and self.store == "off":
            raise ValueError("history = stored needs a store (store = sqlite or postgres)")
        if self.durable and (self.resume != "redis" or self.store == "off"):
            # a turn's checkpoint is kept in the store; instances share turns only through Redis
            raise ValueError(
                "durable needs resume = redis and a store (store = sqlite or postgres)"
            )
        if self.reset_step and self.target != 7:
            raise ValueError("reset_step needs target = 7 (reset-step is in ai 7.0.70 and later)")
        if self.busy != "reject" and self.resume == "off":
            # the waiting requests and the turns' stops are the resume store's
            raise ValueError(
                f"busy = {self.busy} needs resume = memory or redis (resume = off allows only "
                "busy = reject)"
            )
        if self.keepalive_interval >= self.idle_timeout:
            raise ValueError("keepalive_interval must be shorter than idle_timeout")
        if self.jwt_key_file is not None:
            try:
                self._jwt_key_text = self.jwt_key_file.read_text()
            except OSError as exc:
                raise ValueError(f"cannot read jwt_key_file: {exc.strerror or exc}") from exc
        return self

    def jwt_verification_key(self) -> str:
        """The JWT key (the file's content was read once, when the configuration loaded)."""
        if self._jwt_key_text is not None:
            return self._jwt_key_text
        assert self.jwt_key is not None
        return self.jwt_key


class ConfigError(ValueError):
    """The configuration cannot be used; the message says which setting and why."""
