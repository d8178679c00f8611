"""Where a gateway keeps what outlives one request: resumable streams and issued approvals.

Two families, each a protocol (:mod:`~chunkbridge.gateway.stores.base`, re-exported here)
with a ``memory`` backend (one process, :mod:`~chunkbridge.gateway.stores.memory`) and a
``redis`` one (several instances share it, :mod:`~chunkbridge.gateway.stores.redis`). The turn
code (:mod:`chunkbridge.gateway.turn`) is written against the protocols only;
:func:`open_stores` picks the backends from the configuration (``resume = off | memory |
redis``) and is the one place that does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkbridge.gateway.stores.base import (
    ANSWERED,
    ApprovalLedger,
    ChunkSink,
    Claim,
    Key,
    ResumeLog,
    ResumeStore,
    Stoppable,
)

if TYPE_CHECKING:
    from chunkbridge.gateway.config import GatewayConfig

__all__ = [
    "ANSWERED",
    "ApprovalLedger",
    "ChunkSink",
    "Claim",
    "Key",
    "ResumeLog",
    "ResumeStore",
    "Stoppable",
    "Stores",
    "open_stores",
]


@dataclass(frozen=True, slots=True)
class Stores:
    """The backends one gateway app uses: ``resume`` is ``None`` with ``resume = off``."""

    resume: ResumeStore | None
    approvals: ApprovalLedger

    async def start(self) -> None:
        if self.resume is not None:
            await self.resume.start()  # redis: fails the start-up when Redis is not there

    async def aclose(self) -> None:
        await self.approvals.aclose()
        if self.resume is not None:
            await self.resume.aclose()


def open_stores(config: GatewayConfig, log: Any) -> Stores:
    """The backends ``config`` asks for. With ``resume = redis`` the approval ledger is in Redis
    as well (any instance may take an answer), through the same client."""
    if config.resume == "redis":
        from chunkbridge.gateway.stores.redis import open_redis_stores

        resume, approvals = open_redis_stores(config, log)
        return Stores(resume, approvals)
    from chunkbridge.gateway.stores.memory import MemoryApprovalLedger, MemoryResumeStore

    memory = MemoryResumeStore(config.resume_ttl) if config.resume == "memory" else None
    return Stores(memory, MemoryApprovalLedger(config.approval_ttl))
