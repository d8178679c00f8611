"""The ``redis`` relay: a request to the one instance that holds a key, and its replies back —
how an answer taken by one instance reaches a call parked on another
(:mod:`chunkbridge.gateway.tools.relayed`).

* ``chunkbridge:held:<key>`` — the id of the instance holding ``key``, expiring with the hold;
* ``chunkbridge:relay:<instance>`` — the channel each instance takes requests on;
* ``chunkbridge:reply:<id>`` — a list of one request's replies, which its asker pops (a list, not
  a channel: a reply waits there until it is read), expiring a minute after the last one.

A request published to an instance that no longer listens (it is gone) reaches nobody, which
``PUBLISH`` says: the asker hears at once that nobody holds the key, not after its limit. An
instance that dies with a request in hand leaves its asker waiting to its limit.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from functools import partial
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError

__all__ = ["RedisRelay"]

_PREFIX = "chunkbridge"
#: Seconds a reply list outlives its last write (an asker that went away leaves it behind).
_REPLY_TTL_MS = 60_000
#: Seconds one pop blocks (under the client's socket timeout), between checks of the limit.
_POP_SECONDS = 1.0

Handler = Callable[[dict[str, Any], Callable[[dict[str, Any]], None]], Awaitable[dict[str, Any]]]


def _more(replies: asyncio.Queue[dict[str, Any] | None], item: dict[str, Any]) -> None:
    replies.put_nowait({"more": item})


def _held(key: str) -> str:
    return f"{_PREFIX}:held:{key}"


class RedisRelay:
    """Requests by key between the instances of one deployment (see the module)."""

    def __init__(self, client: aioredis.Redis, instance: str, log: Any) -> None:
        self.redis = client
        #: This instance's id (the resume store's: one id per instance).
        self.instance = instance
        self.log = log
        self._handler: Handler | None = None
        self._listening: asyncio.Task[None] | None = None
        #: Writes and requests under way (strong references: a task nobody holds may go).
        self._tasks: set[asyncio.Task[Any]] = set()

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def hold(self, key: str, seconds: float) -> None:
        await self._write(self.redis.set(_held(key), self.instance, px=int(seconds * 1000)))

    def drop(self, key: str) -> None:
        self._spawn(self._write(self.redis.delete(_held(key))))

    async def _write(self, command: Awaitable[Any]) -> None:
        try:
            await command
        except (RedisError, OSError) as exc:  # an answer elsewhere then finds no holder
            self.log.warning("relay.write_failed", error=str(exc)[:200])

    def serve(self, handler: Handler) -> None:
        self._handler = handler

    async def ask(
        self, key: str, request: dict[str, Any], limit: float
    ) -> AsyncIterator[dict[str, Any]] | None:
        holder = await self.redis.get(_held(key))
        if holder is None:
            return None
        reply = uuid.uuid4().hex
        owner = holder.decode() if isinstance(holder, bytes) else holder
        channel = f"{_PREFIX}:relay:{owner}"
        message = orjson.dumps({"reply": reply, "request": request})
        if not await self.redis.publish(channel, message):
            return None  # its instance is gone
        return self._replies(f"{_PREFIX}:reply:{reply}", time.monotonic() + limit)

    async def _replies(self, key: str, deadline: float) -> AsyncIterator[dict[str, Any]]:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from the instance holding the key")
            popped = await self.redis.blpop([key], timeout=min(_POP_SECONDS, left))
            if popped is None:
                continue
            item = orjson.loads(popped[1])
            if "failed" in item:
                raise RuntimeError(f"the instance holding the key failed: {item['failed']}")
            if "last" in item:
                yield item["last"]
                return
            yield item["more"]

    # -- the holder's side ---------------------------------------------------------------------

    async def start(self) -> None:
        self._listening = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        channel = f"{_PREFIX}:relay:{self.instance}"
        while True:
            pubsub = self.redis.pubsub()
            try:
                await pubsub.subscribe(channel)
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._spawn(self._answer(orjson.loads(message["data"])))
            except (RedisError, OSError) as exc:
                self.log.warning("relay.subscribe_failed", error=str(exc)[:200])
                await asyncio.sleep(1)
            finally:  # (on close too: a request sent then must reach nobody, and be told so)
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _answer(self, message: dict[str, Any]) -> None:
        """One request: its handler's replies pushed in order as they come, the last one
        marked."""
        replies: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        pushing = asyncio.get_running_loop().create_task(
            self._push(f"{_PREFIX}:reply:{message['reply']}", replies)
        )
        try:
            if self._handler is None:
                raise RuntimeError("this instance takes no requests yet")
            last = await self._handler(message["request"], partial(_more, replies))
            replies.put_nowait({"last": last})
        except Exception as exc:  # the asker is told, not left waiting to its limit
            self.log.error("relay.request_failed", error=repr(exc)[:300])
            replies.put_nowait({"failed": repr(exc)[:300]})
        replies.put_nowait(None)
        await pushing

    async def _push(self, key: str, replies: asyncio.Queue[dict[str, Any] | None]) -> None:
        while (item := await replies.get()) is not None:
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    pipe.rpush(key, orjson.dumps(item))
                    pipe.pexpire(key, _REPLY_TTL_MS)
                    await pipe.execute()
            except (RedisError, OSError) as exc:
                self.log.warning("relay.write_failed", error=str(exc)[:200])

    async def aclose(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
            await asyncio.wait([self._listening], timeout=1.0)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=1.0)
