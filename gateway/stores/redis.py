"""The ``redis`` backends: several gateway instances share chunk logs, stops, the per-session
turn rule (:mod:`~chunkbridge.gateway.stores.redis_resume`), the approval ledger (here) and the
relay to the instance holding a parked call (:mod:`~chunkbridge.gateway.stores.redis_relay`).

This module owns the one Redis client an app uses: :func:`open_redis_stores` makes it and hands
it to every store; the resume store closes it when the app stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis

from chunkbridge.gateway.stores.base import Claim
from chunkbridge.gateway.stores.redis_line import LINE_CHANNEL, RedisLine
from chunkbridge.gateway.stores.redis_relay import RedisRelay
from chunkbridge.gateway.stores.redis_resume import RedisResumeStore
from chunkbridge.translators.core.approvals import IssuedApproval

if TYPE_CHECKING:
    from chunkbridge.gateway.config import GatewayConfig

__all__ = ["RedisApprovalLedger", "RedisRelay", "RedisResumeStore", "open_redis_stores"]

#: All of ARGV pending in hash KEYS[1] → all marked answered (1); otherwise nothing changes (0).
_CLAIM = """
for _, id in ipairs(ARGV) do
  local v = redis.call('HGET', KEYS[1], id)
  if (not v) or v == 'answered' then return 0 end
end
for _, id in ipairs(ARGV) do redis.call('HSET', KEYS[1], id, 'answered') end
return 1
"""


def open_redis_stores(
    config: GatewayConfig, log: Any
) -> tuple[RedisResumeStore, RedisApprovalLedger, RedisRelay, RedisLine]:
    """The resume store, the approval ledger, the relay and the sessions' lines of
    ``config.redis_url``, on one client."""
    client = aioredis.Redis.from_url(config.redis_url, socket_timeout=5, socket_connect_timeout=5)
    resume = RedisResumeStore(client, config.resume_ttl, config.owner_lease, log)
    if config.busy != "reject":  # requests wait for a turn: a turn freed is told
        resume.announce_releases, resume.line_channel = True, LINE_CHANNEL
    relay = RedisRelay(client, resume.instance, log)
    ledger = RedisApprovalLedger(client, config.approval_ttl, log)
    return resume, ledger, relay, RedisLine(resume)


class RedisApprovalLedger:
    """The ledger shared by every instance: hash ``chunkbridge:approvals:<session>``."""

    def __init__(self, client: aioredis.Redis, ttl: float, log: Any) -> None:
        self.redis = client
        self.ttl_ms = int(ttl * 1000)
        self.log = log
        #: Writes under way (strong references: a task nobody holds may be collected).
        self._writes: set[asyncio.Task[None]] = set()
        self._claim = client.register_script(_CLAIM)

    @staticmethod
    def _key(session_id: str) -> str:
        return f"chunkbridge:approvals:{session_id}"

    def issue(self, session_id: str, approval: IssuedApproval) -> None:
        # Called from inside a turn (synchronously): the write runs as its own task, awaited
        # before the turn's end reaches its client (written()).
        task = asyncio.get_running_loop().create_task(self._issue(session_id, approval))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _issue(self, session_id: str, approval: IssuedApproval) -> None:
        key = self._key(session_id)
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hset(key, approval.approval_id, approval.tool_call_id)
                pipe.pexpire(key, self.ttl_ms)
                await pipe.execute()
        except Exception as exc:  # the turn goes on; the answer will be refused (400)
            self.log.error("approval.issue_failed", session_id=session_id, error=repr(exc))

    async def written(self) -> None:
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)

    async def lookup(self, session_id: str, approval_ids: Sequence[str]) -> list[str | None]:
        if not approval_ids:  # (HMGET of no field is an error in Redis)
            return []
        await self.written()  # this instance's own writes first
        values = await self.redis.hmget(self._key(session_id), list(approval_ids))
        return [v.decode() if isinstance(v, bytes) else v for v in values]

    async def claim(self, session_id: str, answers: Sequence[Claim]) -> bool:
        ids = [a.approval_id for a in answers]
        return bool(await self._claim(keys=[self._key(session_id)], args=ids))

    async def release(self, session_id: str, answers: Sequence[Claim]) -> None:
        mapping = {a.approval_id: a.tool_call_id for a in answers}
        await self.redis.hset(self._key(session_id), mapping=mapping)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
