"""The state of one gateway app: configuration, dialect, connector, metrics, resume store, the
per-session turn counts and the open streams (what SIGTERM drains)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import Counter
from typing import TYPE_CHECKING

from pydantic import ValidationError

from chunkbridge.gateway.approvals import ApprovalLedger, MemoryApprovalLedger, RedisApprovalLedger
from chunkbridge.gateway.config import ConfigError, GatewayConfig
from chunkbridge.gateway.connectors import Connector, connector_for
from chunkbridge.gateway.dialects import UnknownDialect, get_dialect, registry
from chunkbridge.gateway.driver import DriverSettings
from chunkbridge.gateway.errors import TurnInProgress
from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.resume import MemoryResumeStore
from chunkbridge.gateway.streaming import ChatStream
from chunkbridge.kit import Dialect, TranslatorOptions, UnknownEventPolicy

if TYPE_CHECKING:
    from chunkbridge.gateway.resume_redis import RedisResumeStore

__all__ = ["RETRY_AFTER_DRAINING", "SESSION_ID", "GatewayState"]

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@~-]{0,127}")
#: ``Retry-After`` of the 503 a draining gateway answers, in seconds.
RETRY_AFTER_DRAINING = 5


class GatewayState:
    """Per-app state: config, dialect, connector, metrics, turn locks, open streams."""

    def __init__(self, config: GatewayConfig) -> None:
        self.metrics = Metrics()
        self.turns: Counter[str] = Counter()
        self.streams: set[ChatStream] = set()
        self.draining = False
        self.log = get_logger("chunkbridge.gateway")
        self._stream_closed = asyncio.Event()
        self.configure(config)

    def configure(self, config: GatewayConfig) -> None:
        """Use ``config`` for the next turns. Raises :class:`ConfigError` when the dialect is
        unknown, its settings are invalid, or it does not speak the upstream URL's transport."""
        if config.dialect is None:
            names = ", ".join(registry().dialects) or "none registered"
            raise ConfigError(f"no dialect: set one with --dialect NAME (available: {names})")
        try:
            dialect = get_dialect(config.dialect)
        except UnknownDialect as exc:
            raise ConfigError(str(exc)) from exc
        raw = config.dialect_settings.get(dialect.name, {})
        try:
            settings = dialect.settings.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"invalid settings for dialect {dialect.name}: {exc}") from exc
        self.config = config
        self.dialect: Dialect = dialect
        self.dialect_settings = settings
        self.connector: Connector = connector_for(dialect, config)
        if config.resume == "off":
            self.resume: MemoryResumeStore | RedisResumeStore | None = None
        elif getattr(self, "resume", None) is None:
            if config.resume == "redis":
                from chunkbridge.gateway.resume_redis import RedisResumeStore

                self.resume = RedisResumeStore(
                    config.redis_url, config.resume_ttl, config.owner_lease, self.log
                )
            else:
                self.resume = MemoryResumeStore(config.resume_ttl)
        if getattr(self, "approvals", None) is None:
            redis = getattr(self.resume, "redis", None)  # resume = redis: shared by instances
            self.approvals: ApprovalLedger = (
                RedisApprovalLedger(redis, config.approval_ttl, self.log)
                if redis is not None
                else MemoryApprovalLedger(config.approval_ttl)
            )
        self.driver_settings = DriverSettings(
            first_event_timeout=config.first_event_timeout,
            idle_timeout=config.idle_timeout,
            total_timeout=config.total_timeout,
            keepalive_interval=config.keepalive_interval,
            flush_interval=config.flush_interval,
            question_settle=config.question_settle,
        )
        #: The same for every turn (one object, not one per turn).
        self.translator_options = TranslatorOptions(
            unknown_events=UnknownEventPolicy(config.unknown_events),
            dynamic_tools=config.dynamic_tools,
            settings=settings,
        )

    def acquire_turn(self, session_id: str) -> None:
        if self.turns[session_id] >= self.config.max_turns_per_session:
            raise TurnInProgress(detail=f"{self.turns[session_id]} active")
        self.turns[session_id] += 1

    def release_turn(self, session_id: str) -> None:
        self.turns[session_id] -= 1
        if self.turns[session_id] <= 0:
            del self.turns[session_id]

    def forget_stream(self, stream: ChatStream) -> None:
        self.streams.discard(stream)
        self._stream_closed.set()

    async def drain(self, grace: float) -> None:
        """End every open stream with a valid ending; wait up to ``grace`` seconds for them."""
        self.draining = True
        for stream in list(self.streams):
            stream.shutdown()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                while self.streams:
                    self._stream_closed.clear()
                    await self._stream_closed.wait()
