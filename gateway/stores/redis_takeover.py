"""Durable turns across instances (``durable = true``): who holds each, and the claim of one
whose instance died.

* ``chunkbridge:durable`` — a sorted set of the durable turns that run, scored by the end of
  their owner's lease (renewed with it, by the resume store's heartbeat);
* ``chunkbridge:<session>:<chat>:fence`` — a counter raised by every hold on the turn: its
  first owner's, each takeover's (kept a week past the last). The holder writes its
  checkpoints under it, so a former owner that wakes up (paused past its lease) finds its
  writes refused.

Every instance looks for turns whose lease lapsed (:meth:`RedisTakeovers.due`) and claims them
in one script (:meth:`RedisTakeovers.claim`): only where nobody holds the owner key, so two
instances never both take a turn, and a former owner that renewed in time keeps it. An instance
that stops on purpose (SIGTERM) hands its turns over (:meth:`RedisTakeovers.release`): their
lease ends at once, and the next look of another instance takes them, without waiting for it.
"""

from __future__ import annotations

import time
from typing import Any

import redis.asyncio as aioredis

from chunkbridge.gateway.stores.base import Key
from chunkbridge.gateway.stores.redis_follow import DURABLE, member

__all__ = ["RedisTakeovers"]

#: KEYS: the owner key, the fence, the durable set, the chunk log; ARGV: this instance, the
#: lease in ms, the lease's end, the turn's member, the fence's time to live, and ``own`` (a
#: new turn of this instance's: not where another instance holds the owner key — one of this
#: instance's earlier responses of the chat may still hold it) or ``claim`` (a takeover: only
#: where nobody holds it). The owner key holds ``<instance>:<fence>`` from then on; a new turn
#: drops the log of the chat's previous response at once (so the log a takeover finds is the
#: turn's own, or none). The new fence, or 0.
_HOLD = """
local owner = redis.call('GET', KEYS[1])
if owner and (ARGV[6] == 'claim' or string.sub(owner, 1, #ARGV[1] + 1) ~= ARGV[1] .. ':') then
  return 0
end
if ARGV[6] == 'own' then redis.call('DEL', KEYS[4]) end
local fence = redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. fence, 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
return fence
"""
#: KEYS: the owner key, the durable set; ARGV: the hold's token, the member, now. The hold
#: given up (where it is still the owner's), the turn due at once (its readers wait for the
#: takeover as after a lapse now).
_RELEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
return 1
"""
#: KEYS: the owner key, the durable set; ARGV: the hold's token, the member. The turn leaves
#: the durable ones, if the hold is still the owner's.
_FORGET = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('ZREM', KEYS[2], ARGV[2])
"""
#: How long a chat's fence counter outlives its last hold (a week: far past any turn, so a
#: counter never starts again under a turn that runs).
_FENCE_TTL_MS = 7 * 86_400_000
#: Turns looked at per look.
_BATCH = 16


class RedisTakeovers:
    """The durable turns' holds, in the resume store's Redis (see the module)."""

    def __init__(self, client: aioredis.Redis, instance: str, lease: float, log: Any) -> None:
        self.redis = client
        self.instance = instance
        self.lease = lease
        self.log = log
        self._hold = client.register_script(_HOLD)
        self._release = client.register_script(_RELEASE)
        self._forget = client.register_script(_FORGET)

    def _keys(self, key: Key) -> list[str]:
        base = f"chunkbridge:{key[0]}:{key[1]}"
        return [base + ":owner", base + ":fence", DURABLE]

    async def _held(self, key: Key, how: str) -> int:
        lease_ms = int(self.lease * 1000)
        args: list[str | int | float] = [self.instance, lease_ms, time.time() + self.lease]
        args += [member(key), _FENCE_TTL_MS, how]
        log = f"chunkbridge:{key[0]}:{key[1]}:log"
        return int(await self._hold(keys=[*self._keys(key), log], args=args))

    def token(self, fence: int) -> str:
        """What the owner key holds while this instance holds a turn under ``fence``."""
        return f"{self.instance}:{fence}"

    async def own(self, key: Key) -> int:
        """A new durable turn of this instance's: its fence (0: another instance holds it)."""
        return await self._held(key, "own")

    async def claim(self, key: Key) -> int:
        """Take over ``key`` if nobody holds it: the new fence, or 0."""
        return await self._held(key, "claim")

    async def due(self) -> list[Key]:
        """Durable turns whose owner's lease has ended."""
        members: Any = await self.redis.zrangebyscore(DURABLE, "-inf", time.time(), 0, _BATCH)
        keys = []
        for entry in members:
            text = entry.decode() if isinstance(entry, bytes) else entry
            session_id, _, chat_id = text.partition("\x00")
            keys.append((session_id, chat_id))
        return keys

    async def release(self, key: Key, fence: int) -> bool:
        """Hand ``key`` over (this instance stops): whether it held it under ``fence``."""
        owner, _, durable = self._keys(key)
        args: list[str | float] = [self.token(fence), member(key), time.time()]
        return bool(await self._release(keys=[owner, durable], args=args))

    async def forget(self, key: Key, fence: int) -> None:
        """``key`` is no durable turn any more (it ended with no log to end, or it cannot be
        recorded), where it is held under ``fence`` (an instance that took it over keeps
        it)."""
        owner, _, durable = self._keys(key)
        await self._forget(keys=[owner, durable], args=[self.token(fence), member(key)])

    async def holds(self, key: Key, fence: int) -> bool:
        """Whether ``key`` is held under ``fence`` (no other instance took it over)."""
        owner = await self.redis.get(self._keys(key)[0])
        return (owner.decode() if isinstance(owner, bytes) else owner) == self.token(fence)
