"""Where a gateway keeps what outlives one request: resumable streams, issued approvals and
the chats' transcripts.

Three families, each a protocol (:mod:`~chunkbridge.gateway.stores.base`, re-exported here):
resumable streams and approvals with a ``memory`` backend (one process,
:mod:`~chunkbridge.gateway.stores.memory`) and a ``redis`` one (several instances share it,
:mod:`~chunkbridge.gateway.stores.redis`); transcripts on SQL
(:mod:`~chunkbridge.gateway.stores.transcript_sql`) over ``sqlite`` or ``postgres``. The turn
code (:mod:`chunkbridge.gateway.turn`) is written against the protocols only;
:func:`open_stores` picks the backends from the configuration (``resume = off | memory |
redis``, ``store = off | sqlite | postgres``) and is the one place that does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkbridge.gateway.stores.base import (
    ANSWERED,
    ApprovalLedger,
    CheckpointStore,
    ChunkSink,
    Claim,
    Key,
    ResumeLog,
    ResumeStore,
    Stoppable,
    StoreUnavailable,
    TranscriptStore,
)

if TYPE_CHECKING:
    from chunkbridge.gateway.config import GatewayConfig
    from chunkbridge.gateway.stores.redis_line import RedisLine
    from chunkbridge.gateway.stores.redis_relay import RedisRelay
    from chunkbridge.gateway.stores.redis_takeover import RedisTakeovers

__all__ = [
    "ANSWERED",
    "ApprovalLedger",
    "CheckpointStore",
    "ChunkSink",
    "Claim",
    "Key",
    "ResumeLog",
    "ResumeStore",
    "Stoppable",
    "StoreUnavailable",
    "Stores",
    "TranscriptStore",
    "open_stores",
]


@dataclass(frozen=True, slots=True)
class Stores:
    """The backends one gateway app uses: ``resume`` is ``None`` with ``resume = off``,
    ``transcripts`` with ``store = off``; ``relay`` (requests to the instance holding a parked
    call) is there with ``resume = redis`` only (one instance holds every call)."""

    resume: ResumeStore | None
    approvals: ApprovalLedger
    transcripts: TranscriptStore | None = None
    relay: RedisRelay | None = None
    #: ``durable = true`` (``resume = redis`` and a store): the turns' checkpoints, and who
    #: holds each turn.
    checkpoints: CheckpointStore | None = None
    takeovers: RedisTakeovers | None = None
    #: ``resume = redis``: the sessions' lines (``busy``) and their answers, every instance's;
    #: otherwise the process's own (:class:`~chunkbridge.gateway.stores.local_line.LocalLines`).
    line: RedisLine | None = None

    async def start(self) -> None:
        """Connect what needs it; fails the start-up (:class:`StoreUnavailable`, or Redis's
        error) when a configured store is not there."""
        if self.resume is not None:
            await self.resume.start()
        if self.line is not None:
            await self.line.start()
        if self.relay is not None:
            await self.relay.start()
        if self.transcripts is not None:
            await self.transcripts.start()

    async def aclose(self) -> None:
        await self.approvals.aclose()
        if self.line is not None:
            await self.line.aclose()
        if self.relay is not None:
            await self.relay.aclose()
        if self.resume is not None:
            await self.resume.aclose()
        if self.transcripts is not None:
            await self.transcripts.aclose()


def open_stores(config: GatewayConfig, log: Any, on_skipped: Callable[[], None]) -> Stores:
    """The backends ``config`` asks for. With ``resume = redis`` the approval ledger is in Redis
    as well (any instance may take an answer), through the same client. ``on_skipped`` counts
    a stored message that did not load (it is logged here)."""
    transcripts = _transcripts(config, log, on_skipped)
    if config.resume == "redis":
        from chunkbridge.gateway.stores.redis import open_redis_stores

        resume, approvals, relay, line = open_redis_stores(config, log)
        from chunkbridge.gateway.stores.transcript_sql import SqlTranscriptStore

        if not config.durable or not isinstance(transcripts, SqlTranscriptStore):
            return Stores(resume, approvals, transcripts, relay, line=line)
        from chunkbridge.gateway.stores.checkpoint_sql import SqlCheckpointStore
        from chunkbridge.gateway.stores.redis_takeover import RedisTakeovers

        checkpoints = SqlCheckpointStore(transcripts.database)
        takeovers = RedisTakeovers(resume.redis, resume.instance, config.owner_lease, log)
        return Stores(resume, approvals, transcripts, relay, checkpoints, takeovers, line)
    from chunkbridge.gateway.stores.memory import MemoryApprovalLedger, MemoryResumeStore

    memory = MemoryResumeStore(config.resume_ttl) if config.resume == "memory" else None
    return Stores(memory, MemoryApprovalLedger(config.approval_ttl), transcripts)


def _transcripts(
    config: GatewayConfig, log: Any, on_skipped: Callable[[], None]
) -> TranscriptStore | None:
    if config.store == "off":
        return None
    from chunkbridge.gateway.stores.transcript_sql import Database, SqlTranscriptStore

    def skipped(key: Key, message_id: str, reason: str) -> None:
        on_skipped()
        log.warning(
            "transcript.row_skipped",
            session_id=key[0][:128],
            chat_id=key[1][:128],
            message_id=message_id[:128],
            reason=reason,
        )

    database: Database
    if config.store == "sqlite":
        from chunkbridge.gateway.stores.sqlite import SqliteDatabase

        database = SqliteDatabase(config.store_path)
    else:
        try:
            from chunkbridge.gateway.stores.postgres import PostgresDatabase
        except ImportError as exc:
            from chunkbridge.gateway.config import ConfigError

            raise ConfigError(
                f"store = postgres needs psycopg ({exc.name} is missing): "
                "pip install 'chunkbridge[postgres]'"
            ) from exc
        database = PostgresDatabase(config.store_url, config.connect_timeout)
    return SqlTranscriptStore(database, skipped)
