"""The sessions' lines in Redis (``busy`` with ``resume = redis``): every instance's waiting
requests in one order, each decision one script (the rules of
:class:`~chunkbridge.gateway.stores.line.SessionLine`, atomic across instances).

Per session, beside ``chunkbridge:turns:<session>`` (the turns held, scored by the end of their
lease: :mod:`~chunkbridge.gateway.stores.redis_resume`):

* ``chunkbridge:line:<session>`` — the waiting requests, scored by their admission number
  (``…:seq``, a counter): the order the line admitted them, whichever instance they reached;
* ``…:lapse`` — each waiting request's lease end, renewed by its instance every third of
  ``owner_lease``: a request whose instance died leaves the line after the lease;
* ``…:info`` — how each waits, its user message and its chat (and a steer's frame).

Every change that can let a request run (a turn freed, a request admitted or gone) is
published on ``chunkbridge:line`` (the session id): the waiting requests of every instance look
again at once; so is a request that waits first in line (a running turn that takes steers
looks at it: :mod:`~chunkbridge.gateway.turn.steering`). They also look every second, for what
no message says (an instance that died: its turn's lease lapsed).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from chunkbridge.gateway.stores.base import Key, StoreUnavailable
from chunkbridge.gateway.stores.line import (
    Admitted,
    Entry,
    Gone,
    Joined,
    Refused,
    Taken,
    Waiter,
    Waiting,
    WaitKind,
)
from chunkbridge.gateway.stores.redis_resume import RedisResumeStore

__all__ = ["LINE_CHANNEL", "RedisLine"]

LINE_CHANNEL = "chunkbridge:line"

#: Drop the lapsed: turns (KEYS[1]) whose lease ended, waiting requests (KEYS[2], their lease
#: in KEYS[3], their info in KEYS[4], their state as a steer in KEYS[6]) whose instance stopped
#: renewing them. ARGV[1]: now. ``steer_state(m)``: a waiting request's state as a steer —
#: ``taken:<the turn's hold>``, ``joined`` or false; taken by a turn whose hold lapsed (its
#: instance died), it waits again.
_PURGE = """
local function steer_state(m)
  local state = redis.call('HGET', KEYS[6], m)
  if state and string.sub(state, 1, 6) == 'taken:'
      and not redis.call('ZSCORE', KEYS[1], string.sub(state, 7)) then
    redis.call('HDEL', KEYS[6], m)
    return false
  end
  return state
end
local function purge(now)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  local lapsed = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
  for _, m in ipairs(lapsed) do
    redis.call('ZREM', KEYS[2], m)
    redis.call('ZREM', KEYS[3], m)
    redis.call('HDEL', KEYS[4], m)
    redis.call('HDEL', KEYS[6], m)
  end
  return #lapsed
end
"""
#: A new request (member ARGV[3], lease end ARGV[2]): 0 it runs (a turn of ARGV[4] free and
#: nobody waiting), -1 the line holds ARGV[5] already, else its position (it waits; its info
#: ARGV[6], its number from KEYS[5]). Keys live ARGV[7] ms. A request first in line is
#: published (channel ARGV[8], session ARGV[9]): a running turn that takes steers looks at it.
_ENTER = (
    _PURGE
    + """
purge(ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) and redis.call('ZCARD', KEYS[2]) == 0 then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[7])
  return 0
end
local n = redis.call('ZCARD', KEYS[2])
if n >= tonumber(ARGV[5]) then return -1 end
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[5]), ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[4], ARGV[3], ARGV[6])
for i = 2, 5 do redis.call('PEXPIRE', KEYS[i], ARGV[7]) end
if n == 0 then redis.call('PUBLISH', ARGV[8], ARGV[9]) end
return n + 1
"""
)
#: A waiting request looks again: 0 it runs (first, and a turn free), -2 it is gone, -3 its
#: steer landed, -(1000 + position) a turn took it as a steer, else its position. ARGV as for
#: _ENTER (ARGV[5]: the keys' life, ms; ARGV[6]: the channel).
_TAKE = (
    _PURGE
    + """
local lapsed = purge(ARGV[1])
local rank = redis.call('ZRANK', KEYS[2], ARGV[3])
if not rank then return -2 end
local state = steer_state(ARGV[3])
if state == 'joined' then return -3 end
if state then return -(1001 + rank) end
if rank == 0 and redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZREM', KEYS[2], ARGV[3])
  redis.call('ZREM', KEYS[3], ARGV[3])
  redis.call('HDEL', KEYS[4], ARGV[3])
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  redis.call('PUBLISH', ARGV[6], ARGV[7])
  return 0
end
if lapsed > 0 then redis.call('PUBLISH', ARGV[6], ARGV[7]) end
return rank + 1
"""
)
#: The first waiting request's member and info (none: an empty list; also while a turn holds
#: it as a steer).
_HEAD = (
    _PURGE
    + """
purge(ARGV[1])
local first = redis.call('ZRANGE', KEYS[2], 0, 0)
if #first == 0 or steer_state(first[1]) then return {} end
return {first[1], redis.call('HGET', KEYS[4], first[1]) or ''}
"""
)
#: A request leaves the line (ARGV[1]); the others hear it (channel ARGV[2], session ARGV[3]).
_LEAVE = """
if redis.call('ZREM', KEYS[2], ARGV[1]) == 1 then
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  redis.call('HDEL', KEYS[6], ARGV[1])
  redis.call('PUBLISH', ARGV[2], ARGV[3])
end
return 0
"""
#: A running turn (its hold ARGV[4]) takes the first waiting request (ARGV[2]) as a steer: 1,
#: or 0 when it is not first, or taken already. ARGV[1]: now.
_CLAIM = (
    _PURGE
    + """
purge(ARGV[1])
if redis.call('ZRANK', KEYS[2], ARGV[2]) ~= 0 or steer_state(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[6], ARGV[2], 'taken:' .. ARGV[4])
redis.call('PEXPIRE', KEYS[6], ARGV[3])
return 1
"""
)
#: A taken request's steer landed (ARGV[4] 'joined') or did not (ARGV[4] ''): 1 when it was
#: taken; the others hear it (channel ARGV[2], session ARGV[3]).
_STEER_STATE = """
if string.sub(redis.call('HGET', KEYS[6], ARGV[1]) or '', 1, 6) ~= 'taken:' then return 0 end
if ARGV[4] == '' then
  redis.call('HDEL', KEYS[6], ARGV[1])
else
  redis.call('HSET', KEYS[6], ARGV[1], ARGV[4])
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
"""

#: Seconds between two looks of a waiting request when nothing was published.
POLL = 1.0


def _keys(session_id: str) -> list[str]:
    line = f"chunkbridge:line:{session_id}"
    return [
        f"chunkbridge:turns:{session_id}",
        line,
        line + ":lapse",
        line + ":info",
        line + ":seq",
        line + ":state",
    ]


@contextlib.contextmanager
def _unavailable() -> Iterator[None]:
    """Redis's failures as the stores' :class:`StoreUnavailable`."""
    try:
        yield
    except (RedisError, OSError) as exc:
        raise StoreUnavailable(f"Redis: {exc}"[:200]) from exc


def _answer_key(key: Key) -> str:
    return f"chunkbridge:{key[0]}:{key[1]}:answer"


def _info(waiter: Waiter) -> str:
    return f"{waiter.kind.value}\x00{waiter.message_id}\x00{waiter.chat_id}\x00{waiter.steer}"


class RedisLine:
    """The lines of every instance (see the module), on the resume store's client: a request
    admitted holds a turn the resume store renews and releases like any other."""

    def __init__(self, resume: RedisResumeStore) -> None:
        self.resume = resume
        self.redis: aioredis.Redis = resume.redis
        self.log = resume.log
        self.lease = resume.lease
        self._enter = self.redis.register_script(_ENTER)
        self._take = self.redis.register_script(_TAKE)
        self._head = self.redis.register_script(_HEAD)
        self._leave = self.redis.register_script(_LEAVE)
        self._claim = self.redis.register_script(_CLAIM)
        self._steer_state = self.redis.register_script(_STEER_STATE)
        #: This instance's waiting requests by session (their leases are renewed here).
        self._waiting: dict[str, set[str]] = {}
        self._changed: dict[str, asyncio.Event] = {}
        self._tasks: list[asyncio.Task[None]] = []
        #: Answers being noted (strong references: a task nobody holds may be collected).
        self._notes: set[asyncio.Task[None]] = set()

    @property
    def _life_ms(self) -> int:
        """How long the line's keys outlive their last renewal."""
        return int(self.lease * 2000)

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._listen()),
            asyncio.create_task(self._heartbeat()),
        ]

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- the decisions -------------------------------------------------------------------------

    async def enter(self, session_id: str, waiter: Waiter, limit: int, queue_max: int) -> Entry:
        now = time.time()
        args: list[str | int | float] = [now, now + self.lease, waiter.member, limit]
        args += [queue_max, _info(waiter)]
        with _unavailable():
            args += [self._life_ms, LINE_CHANNEL, session_id]
            result = int(await self._enter(keys=_keys(session_id), args=args))
        if result == 0:
            self.resume.held(session_id, waiter.member)
            return Admitted()
        if result == -1:
            return Refused(full=True)
        self._waiting.setdefault(session_id, set()).add(waiter.member)
        return Waiting(result)

    async def take(self, session_id: str, member: str, limit: int) -> Entry:
        now = time.time()
        args: list[str | int | float] = [now, now + self.lease, member, limit, self._life_ms]
        args += [LINE_CHANNEL, session_id]
        with _unavailable():
            result = int(await self._take(keys=_keys(session_id), args=args))
        if result == -2 or result == 0:
            self._forget(session_id, member)
        if result == 0:
            self.resume.held(session_id, member)
            return Admitted()
        if result == -3:
            return Joined()
        if result <= -1001:
            return Taken(-result - 1000)
        return Gone() if result == -2 else Waiting(result)

    async def leave(self, session_id: str, member: str) -> None:
        self._forget(session_id, member)
        with contextlib.suppress(RedisError, OSError):
            await self._leave(keys=_keys(session_id), args=[member, LINE_CHANNEL, session_id])

    async def claim(self, session_id: str, member: str, owner: str) -> bool:
        with _unavailable():
            args: list[str | float] = [time.time(), member, self._life_ms, owner]
            return int(await self._claim(keys=_keys(session_id), args=args)) == 1

    async def join(self, session_id: str, member: str) -> bool:
        return await self._set_steer_state(session_id, member, "joined")

    async def unclaim(self, session_id: str, member: str) -> bool:
        return await self._set_steer_state(session_id, member, "")

    async def _set_steer_state(self, session_id: str, member: str, state: str) -> bool:
        with _unavailable():
            args = [member, LINE_CHANNEL, session_id, state]
            return int(await self._steer_state(keys=_keys(session_id), args=args)) == 1

    async def head(self, session_id: str) -> Waiter | None:
        with _unavailable():
            found: Any = await self._head(keys=_keys(session_id), args=[time.time()])
        if not found:
            return None
        member, info = (x.decode() if isinstance(x, bytes) else x for x in found)
        kind, message_id, chat_id, *steer = (info or "queue\x00\x00").split("\x00", 3)
        return Waiter(member, WaitKind(kind), message_id, chat_id, steer[0] if steer else "")

    async def changed(self, session_id: str, within: float) -> None:
        event = self._changed.setdefault(session_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(within, POLL)):
                await event.wait()

    def note_answer(self, key: Key, message_id: str, user_id: str, ttl: float) -> None:
        task = asyncio.get_running_loop().create_task(
            self._note(key, f"{message_id}\x00{user_id}", ttl)
        )
        self._notes.add(task)
        task.add_done_callback(self._notes.discard)

    async def _note(self, key: Key, value: str, ttl: float) -> None:
        with contextlib.suppress(RedisError, OSError):
            await self.redis.set(_answer_key(key), value, px=int(ttl * 1000))

    async def answer_of(self, key: Key) -> tuple[str, str] | None:
        if self._notes:  # this instance's own notes first
            await asyncio.gather(*self._notes, return_exceptions=True)
        with _unavailable():
            value: Any = await self.redis.get(_answer_key(key))
        if value is None:
            return None
        message_id, _, user_id = value.decode().partition("\x00")
        return message_id, user_id

    def _forget(self, session_id: str, member: str) -> None:
        members = self._waiting.get(session_id)
        if members is not None:
            members.discard(member)
            if not members:
                del self._waiting[session_id]

    # -- what keeps it current -----------------------------------------------------------------

    def _wake(self, session_id: str) -> None:
        event = self._changed.pop(session_id, None)
        if event is not None:
            event.set()

    async def _listen(self) -> None:
        while True:
            try:
                pubsub = self.redis.pubsub()
                await pubsub.subscribe(LINE_CHANNEL)
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._wake(message["data"].decode())
            except (RedisError, OSError) as exc:
                self.log.warning("line.redis_subscribe_failed", error=str(exc)[:200])
                await asyncio.sleep(1)

    async def _heartbeat(self) -> None:
        """Renew this instance's waiting requests, every third of the lease."""
        while True:
            await asyncio.sleep(self.lease / 3)
            if not self._waiting:
                continue
            end = time.time() + self.lease
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for session_id, members in self._waiting.items():
                        keys = _keys(session_id)
                        for member in members:
                            pipe.zadd(keys[2], {member: end}, xx=True)
                        for key in keys[1:]:
                            pipe.pexpire(key, self._life_ms)
                    await pipe.execute()
            except (RedisError, OSError) as exc:
                self.log.warning("line.redis_heartbeat_failed", error=str(exc)[:200])
