"""The ``redis`` resume store: several gateway instances share the chunk logs.

Per response, under ``chunkbridge:<session>:<chat>:``:

* ``log`` — a Redis Stream, one entry per body the producer wrote (``d``: the SSE bytes), ended
  by an entry ``e`` (the end marker readers re-check: never a single pub/sub message);
* ``owner`` — the producing instance's id, with a lease of ``owner_lease`` seconds that it
  renews every third of that while the turn runs — where it still holds it: a durable turn
  whose lease lapsed may have been taken over (see ``redis_takeover``), and then its former
  owner hears it lost the turn (:meth:`~chunkbridge.gateway.stores.base.Stoppable.lost`),
  and nothing it writes to the log lands (every write checks the owner key, in the script).

Readers on any instance follow the log (:mod:`~chunkbridge.gateway.stores.redis_follow`): an
owner that died without warning (SIGKILL) leaves no reader hanging. Stop requests
reach the owner over the ``chunkbridge:stop`` channel (a stop is an instruction, not state).
The one-turn-per-session rule holds across instances through ``chunkbridge:turns:<session>``,
a sorted set of running turns scored by lease expiry (a dead owner's entry lapses).

The producer never waits for Redis: writes are buffered and flushed by a task, so the client of
the producing instance gets its stream even if Redis goes away mid-turn (the failure is logged;
readers elsewhere then see the owner's lease lapse).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from chunkbridge.gateway.errors import TurnInProgress
from chunkbridge.gateway.stores.base import Interruptible, Key, Stoppable, StoreUnavailable
from chunkbridge.gateway.stores.redis_follow import DURABLE, follow, member

__all__ = ["RedisChunkLog", "RedisResumeStore"]
_PREFIX = "chunkbridge"
_STOP_CHANNEL = f"{_PREFIX}:stop"

#: One command for a whole flush: an XADD per log (the first half of KEYS) of its buffered
#: bodies (ARGV[i]), where the log's owner key (the second half of KEYS) holds its producer's
#: token (ARGV[n + i]) — or nothing, for a turn that is not durable (ARGV[2n + i] = '0'):
#: never where another instance took the turn over or a newer response began, nor, for a
#: durable turn, after it lapsed. The indexes of the logs refused.
_XADD_MANY = """
local n = #KEYS / 2
local refused = {}
for i = 1, n do
  local owner = redis.call('GET', KEYS[n + i])
  if owner == ARGV[n + i] or ((not owner) and ARGV[2 * n + i] == '0') then
    redis.call('XADD', KEYS[i], '*', 'd', ARGV[i])
  else
    table.insert(refused, i)
  end
end
return refused
"""
#: The heartbeat: each owner key (KEYS but the last) renewed where it still holds its
#: producer's token (ARGV[1 + 2i]) — or nothing, for a turn that is not durable — for ARGV[1]
#: ms; a durable turn's entry in the set of durable turns (the last KEY) too (ARGV[2 + 2i]: its
#: member, or ''), scored ARGV[2] (its lease's end). The indexes of the turns this instance
#: lost (another took them over, or may: a durable turn whose lease lapsed).
_RENEW = """
local n = #KEYS - 1
local lost = {}
for i = 1, n do
  local owner = redis.call('GET', KEYS[i])
  local token, durable = ARGV[1 + 2 * i], ARGV[2 + 2 * i]
  if owner == token or ((not owner) and durable == '') then
    redis.call('SET', KEYS[i], token, 'PX', ARGV[1])
    if durable ~= '' then redis.call('ZADD', KEYS[n + 1], ARGV[2], durable) end
  else
    table.insert(lost, i)
  end
end
return lost
"""
#: A log's end (KEYS[1]: the log, KEYS[2]: its owner, KEYS[3]: the durable turns), written only
#: by its producer (its token ARGV[1] in the owner key; or no token, unless the turn is
#: durable: ARGV[4] = '1') — never into a newer response's log; kept ARGV[2] ms; the turn
#: leaves the durable ones (ARGV[3]).
_END = """
local owner = redis.call('GET', KEYS[2])
if owner ~= ARGV[1] and (owner or ARGV[4] == '1') then return 0 end
redis.call('XADD', KEYS[1], '*', 'e', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[3])
return 1
"""

#: Seconds between flushes of buffered writes: the producer never waits for Redis; readers on
#: other instances see writes this much later at most.
FLUSH_INTERVAL = 0.01
#: Longest wait for Redis when a turn frees its session (the client's ``[DONE]`` waits for it).
RELEASE_TIMEOUT = 1.0

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
"""


#: A new log (KEYS[1]) owned by its producer (token ARGV[1], in KEYS[2]) for ARGV[2] ms — for a
#: durable turn (ARGV[3] = '1') only where the owner key still holds its token. 1 when it is.
_NEW_LOG = """
if ARGV[3] == '1' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1
"""


def _base(key: Key) -> str:
    return f"{_PREFIX}:{key[0]}:{key[1]}"


class RedisChunkLog:
    """The producer's side of one response's log: appends are buffered in memory and written by
    the store's flusher, several logs in one Redis command (see :meth:`RedisResumeStore.flush`)."""

    def __init__(self, store: RedisResumeStore, key: Key) -> None:
        self.store = store
        self.key = key
        self.stream = _base(key) + ":log"
        self.pending: list[bytes] = []
        #: The claim (a new log, the owner lease) that every write waits for.
        self.claimed: asyncio.Task[None] | None = None
        self.done = False
        self.failed = False
        #: Bytes appended so far (where a durable turn's checkpoint says it is in the log).
        self.written = 0
        #: A durable turn's log: written only while this instance holds the turn (one that
        #: is not durable is written on after a lapse of its lease too: nobody takes it).
        self.strict = key in store.durable
        #: What the owner key holds while this log's producer owns it: a durable turn's hold
        #: (instance and fence), else this log's own token — so a late end of an earlier
        #: response never touches a newer one's.
        self.owner = store.durable.get(key) or f"{store.instance}:{uuid.uuid4().hex[:12]}"
        #: Redis refused a write: another instance holds the turn.
        self.refused = False

    def append(self, body: bytes) -> None:
        self.pending.append(body)
        self.written += len(body)
        self.store.schedule(self)

    async def settled(self) -> bool:
        if not self.strict:  # (nobody else writes a turn that is not durable)
            return True
        try:
            return await self.flushed()
        except StoreUnavailable:
            return True  # (Redis away: nobody can have taken it over either)

    async def flushed(self) -> bool:
        """Everything appended so far is in Redis (a durable turn's checkpoint waits for it);
        ``False`` when Redis refused it: another instance holds the turn."""
        if self.claimed is not None:
            await self.claimed
        await self.store.flush()
        if self.failed:
            raise StoreUnavailable("the chunk log could not be written to Redis")
        return not self.refused

    def finish(self) -> None:
        self.store.finished(self)

    def leave(self) -> None:
        self.done = True
        self.pending.clear()  # (written before a hand-over; refused after a takeover)
        self.store.left(self)

    async def close(self) -> None:
        """Everything written, then the end marker; the log expires ``ttl`` after the end."""
        self.done = True
        if self.claimed is not None:
            with contextlib.suppress(Exception):
                await self.claimed
        await self.store.flush()
        if self.failed:
            return
        store, ttl = self.store, int(self.store.ttl * 1000)
        try:
            keys = [self.stream, _base(self.key) + ":owner", DURABLE]
            durable = "1" if self.strict else "0"
            await store.end_log(keys=keys, args=[self.owner, ttl, member(self.key), durable])
        except (RedisError, OSError) as exc:
            self.store.log.warning("resume.redis_write_failed", error=str(exc)[:200])


class RedisResumeStore:
    """Chunk logs, stops and the per-session turn rule in Redis (see the module). It closes its
    ``client`` (:func:`chunkbridge.gateway.stores.redis.open_redis_stores` made it) at the end."""

    def __init__(self, client: aioredis.Redis, ttl: float, lease: float, log: Any) -> None:
        self.redis = client
        self.ttl = ttl
        self.lease = lease
        self.log = log
        self.instance = uuid.uuid4().hex[:12]
        self._running: dict[Key, tuple[Stoppable, RedisChunkLog]] = {}
        self._turns: dict[str, list[str]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        #: Logs being ended (strong references: a task nobody holds may be collected).
        self._closing: set[asyncio.Task[None]] = set()
        #: Logs with buffered writes (insertion-ordered), and the flush under way, if any.
        self._dirty: dict[RedisChunkLog, None] = {}
        self._flushing: asyncio.Task[None] | None = None
        #: Held by the flush under way (one at a time).
        self._flush_lock = asyncio.Lock()
        self._xadd_many = self.redis.register_script(_XADD_MANY)
        self._renew = self.redis.register_script(_RENEW)
        self.end_log = self.redis.register_script(_END)
        self._new_log = self.redis.register_script(_NEW_LOG)
        #: The durable turns this instance holds, and the token of its hold on each (their
        #: leases renew their entry among the durable turns).
        self.durable: dict[Key, str] = {}
        #: ``busy`` other than ``reject``: a turn freed is told on ``line_channel``
        #: (:mod:`~chunkbridge.gateway.stores.redis_line`, which sets them).
        self.announce_releases = False
        self.line_channel = ""

    async def start(self) -> None:
        await self.redis.ping()
        self._tasks = [
            asyncio.create_task(self._heartbeat()),
            asyncio.create_task(self._listen_for_stops()),
        ]

    async def aclose(self) -> None:
        if self._closing:  # the ends of the last logs, bounded: Redis may be gone
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2 * RELEASE_TIMEOUT):
                    await asyncio.gather(*self._closing, return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await self.redis.aclose()

    # -- the per-session turn rule -------------------------------------------------------------

    async def acquire_turn(self, session_id: str, limit: int) -> str:
        member = f"{self.instance}:{uuid.uuid4().hex[:12]}"
        now = time.time()
        try:
            ok = await self.redis.eval(
                _ACQUIRE,
                1,
                f"{_PREFIX}:turns:{session_id}",
                now,
                now + self.lease,
                member,
                limit,
                int(self.lease * 2000),
            )
        except (RedisError, OSError) as exc:
            self.log.warning("resume.redis_unavailable", error=str(exc)[:200])
            return member  # the local rule still holds; Redis being down must not stop turns
        if not ok:
            raise TurnInProgress(detail="running on another instance")
        self._turns.setdefault(session_id, []).append(member)
        return member

    def held(self, session_id: str, member: str) -> None:
        """A turn of the session the line admitted (``redis_line``): renewed and released like
        one :meth:`acquire_turn` held."""
        self._turns.setdefault(session_id, []).append(member)

    async def release_turn(self, session_id: str, member: str) -> None:
        members = self._turns.get(session_id, [])
        if member in members:
            members.remove(member)
        if not members:
            self._turns.pop(session_id, None)
        # Bounded: the client's last bytes wait for this; a member left behind expires with
        # its lease.
        with contextlib.suppress(RedisError, OSError, TimeoutError):
            async with asyncio.timeout(RELEASE_TIMEOUT):
                await self.redis.zrem(f"{_PREFIX}:turns:{session_id}", member)
                if self.announce_releases:  # the requests waiting for a turn look again
                    await self.redis.publish(self.line_channel, session_id)

    # -- producing -----------------------------------------------------------------------------

    def schedule(self, log: RedisChunkLog) -> None:
        self._dirty[log] = None
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.get_running_loop().create_task(self._flush_soon())

    async def _flush_soon(self) -> None:
        await asyncio.sleep(FLUSH_INTERVAL)  # let the writes of every stream gather
        await self._flush_in_turn()

    async def flush(self) -> None:
        """Write everything buffered now (a log's close, a durable turn's checkpoint wait for
        its bodies this way): a flush still gathering writes is done at once. Flushes run one
        at a time, so when this returns, every body appended before it is in Redis — not only
        those this call took (a log's end marker never overtakes its last bodies)."""
        flushing = self._flushing
        if flushing is not None and not flushing.done() and not self._flush_lock.locked():
            flushing.cancel()  # (still gathering: it has taken nothing yet)
            self._flushing = None
        # shielded: a caller cancelled (its client gone) must not cancel the bodies of every
        # log this flush took
        await asyncio.shield(self._flush_in_turn())

    async def _flush_in_turn(self) -> None:
        async with self._flush_lock:
            await self._flush_once()

    async def _flush_once(self) -> None:
        """One Redis command for every log's buffered bodies (each log's joined into one entry:
        readers only ever concatenate them). Logs not yet claimed wait for the next flush."""
        logs: list[RedisChunkLog] = []
        keys: list[str] = []
        owners: list[str] = []
        strict: list[bytes] = []
        bodies: list[bytes] = []
        waiting: list[RedisChunkLog] = []
        dirty, self._dirty = self._dirty, {}
        for log in dirty:
            if log.failed or not log.pending:
                continue
            if log.claimed is not None and not log.claimed.done():
                waiting.append(log)
                continue
            logs.append(log)
            keys.append(log.stream)
            owners.append(_base(log.key) + ":owner")
            strict.append(b"1" if log.strict else b"0")
            bodies.append(b"".join(log.pending))
            log.pending.clear()
        for log in waiting:
            self.schedule(log)
        if not keys:
            return
        try:
            args = [*bodies, *(log.owner.encode() for log in logs), *strict]
            refused: list[int] = await self._xadd_many(keys=keys + owners, args=args)
            for index in refused:
                logs[index - 1].refused = True
        except (RedisError, OSError) as exc:
            for log in dirty:
                log.failed = True  # the producers' own clients are not affected
            self.log.warning("resume.redis_write_failed", error=str(exc)[:200])

    def begin(self, key: Key, turn: Stoppable) -> RedisChunkLog:
        log = RedisChunkLog(self, key)
        self._running[key] = (turn, log)
        log.claimed = asyncio.get_running_loop().create_task(self._claim(key))
        return log

    def rejoin(self, key: Key, turn: Stoppable) -> RedisChunkLog:
        """The log of a turn this instance took over (it holds its owner key): written on."""
        log = RedisChunkLog(self, key)
        self._running[key] = (turn, log)
        return log

    async def entries(self, key: Key) -> list[bytes] | None:
        """Every body of ``key``'s log so far; ``None`` when the log has ended."""
        bodies: list[bytes] = []
        entries: Any = await self.redis.xrange(_base(key) + ":log")
        for _, fields in entries:
            if b"e" in fields:
                return None
            bodies.append(fields[b"d"])
        return bodies

    async def _claim(self, key: Key) -> None:
        """A new response replaces a finished one's log, and this instance owns it — a
        durable turn's only while it still holds it (it may have been taken over while its
        first model call was being made)."""
        base, log = _base(key), self._running.get(key, (None, None))[1]
        strict = "1" if log is not None and log.strict else "0"
        try:
            owned = await self._new_log(
                keys=[base + ":log", base + ":owner"],
                args=[log.owner if log is not None else "", int(self.lease * 1000), strict],
            )
        except (RedisError, OSError):
            return
        entry = self._running.get(key)
        if not owned and entry is not None:
            entry[1].refused = True
            entry[0].lost()

    def finished(self, log: RedisChunkLog) -> None:
        """``log`` ended: its end goes to Redis in the background (a task held until done)."""
        if self._running.get(log.key, (None, None))[1] is log:
            del self._running[log.key]
        if self.durable.get(log.key) == log.owner:
            del self.durable[log.key]
        task = asyncio.get_running_loop().create_task(log.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def left(self, log: RedisChunkLog) -> None:
        if self._running.get(log.key, (None, None))[1] is log:
            del self._running[log.key]
        if self.durable.get(log.key) == log.owner:
            del self.durable[log.key]

    def running(self, key: Key) -> Stoppable | None:
        entry = self._running.get(key)
        return entry[0] if entry is not None else None

    async def _heartbeat(self) -> None:
        """Renew the leases of what this instance runs, every third of the lease."""
        while True:
            await asyncio.sleep(self.lease / 3)
            now = time.time()
            # (a durable turn is held from its admission: its first model call may be slow)
            running = list(dict.fromkeys([*self._running, *self.durable]))
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for session_id, members in self._turns.items():
                        for held in members:
                            pipe.zadd(f"{_PREFIX}:turns:{session_id}", {held: now + self.lease})
                    await pipe.execute()
                lost = await self._renew_owners(running, now) if running else []
            except (RedisError, OSError) as exc:
                self.log.warning("resume.redis_heartbeat_failed", error=str(exc)[:200])
                continue
            for index in lost:  # another instance took the turn over: it ends here, unheard
                entry = self._running.get(running[index - 1])
                if entry is not None:
                    self.log.warning("resume.turn_taken_over", session_id=running[index - 1][0])
                    entry[0].lost()

    async def _renew_owners(self, running: list[Key], now: float) -> list[int]:
        keys = [_base(key) + ":owner" for key in running] + [DURABLE]
        args: list[str | int | float] = [int(self.lease * 1000), now + self.lease]
        for key in running:
            entry = self._running.get(key)
            token = entry[1].owner if entry is not None else self.durable.get(key, "")
            args += [token, member(key) if key in self.durable else ""]
        lost: list[int] = await self._renew(keys=keys, args=args)
        return lost

    # -- stopping ------------------------------------------------------------------------------

    async def stop(self, key: Key) -> bool:
        """Stop the turn of ``key`` wherever it runs; whether one was running."""
        local = self.running(key)
        if local is not None:
            local.stop()
            return True
        base = _base(key)
        if not await self.redis.exists(base + ":owner"):
            return False
        await self.redis.publish(_STOP_CHANNEL, f"{key[0]}\x00{key[1]}")
        return True

    async def interrupt(self, session_id: str, by: str) -> None:
        """Interrupt the session's turns wherever they run (a new user message, ``by``)."""
        self._interrupt_here(session_id, by)
        await self.redis.publish(_STOP_CHANNEL, f"{session_id}\x00\x00{by}")

    def _interrupt_here(self, session_id: str, by: str) -> None:
        for key, (turn, _) in list(self._running.items()):
            if key[0] == session_id and isinstance(turn, Interruptible):
                turn.interrupt(by)

    async def _listen_for_stops(self) -> None:
        """Stops (``session\0chat``) and interrupts (``session\0\0by``: every turn of the
        session) for the turns this instance runs."""
        while True:
            try:
                pubsub = self.redis.pubsub()
                await pubsub.subscribe(_STOP_CHANNEL)
                async for message in pubsub.listen():
                    if message.get("type") != "message":
                        continue
                    session, chat, *by = message["data"].decode().split("\x00")
                    if not chat and by:
                        self._interrupt_here(session, by[0])
                        continue
                    turn = self.running((session, chat))
                    if turn is not None:
                        turn.stop()
            except (RedisError, OSError) as exc:
                self.log.warning("resume.redis_subscribe_failed", error=str(exc)[:200])
                await asyncio.sleep(1)

    # -- reading -------------------------------------------------------------------------------

    async def reader(self, key: Key) -> AsyncIterator[bytes] | None:
        """The response of ``key`` from its first entry, following it; ``None`` when there is
        none (:mod:`~chunkbridge.gateway.stores.redis_follow`)."""
        return await follow(self.redis, _base(key), member(key), self.lease)
