"""Reading a response's chunk log in Redis as it is written, from any instance
(:class:`~chunkbridge.gateway.stores.redis_resume.RedisResumeStore.reader`).

A reader replays the log from its first entry and then blocks on it; when a read times out it
looks at the owner's lease. An owner that died without warning (SIGKILL) leaves no reader
hanging: after the lease the reader ends with ``error`` + ``finish`` — unless the turn is a
durable one (``durable = true``), which another instance takes over and writes on in the same
log: its reader waits for that, up to ``lease`` + :data:`TAKEOVER_GRACE` seconds past the
lapsed lease, and never sees an error for it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
import redis.asyncio as aioredis

from chunkbridge.translators.core.sse_codec import DONE_FRAME

__all__ = [
    "DURABLE",
    "TAKEOVER_GRACE",
    "error_ending",
    "follow",
    "member",
    "owner_died_ending",
]

#: How long a reader blocks on the stream before it checks the owner's lease, ms.
_BLOCK_MS = 500
#: Seconds past a durable turn's lapsed lease (and one more lease) its readers wait for an
#: instance to take it over before they end it as an owner's death.
TAKEOVER_GRACE = 5.0
#: The set of durable turns, scored by the end of their owner's lease.
DURABLE = "chunkbridge:durable"


def member(key: tuple[str, str]) -> str:
    """A turn's member in the set of durable turns."""
    return f"{key[0]}\x00{key[1]}"


def error_ending(text: str) -> bytes:
    """The end of a response its producer could not end itself: ``error`` + ``finish``."""
    error = {"type": "error", "errorText": text}
    return (
        b"data: " + orjson.dumps(error) + b"\n\n"
        b'data: {"type":"finish","finishReason":"error"}\n\n' + DONE_FRAME
    )


def owner_died_ending() -> bytes:
    return error_ending("The answer was interrupted: its server stopped.")


async def follow(
    redis: aioredis.Redis, base: str, member: str, lease: float
) -> AsyncIterator[bytes] | None:
    """The response under ``base`` from its first entry, following it; ``None`` when there is
    none. ``member``: its entry among the durable turns, if it is one."""
    if not await redis.exists(base + ":log") and not await redis.exists(base + ":owner"):
        return None
    return _follow(redis, base, member, lease)


async def _follow(
    redis: aioredis.Redis, base: str, member: str, lease: float
) -> AsyncIterator[bytes]:
    stream, last = base + ":log", "0-0"
    while True:
        entries: Any = await redis.xread({stream: last}, block=_BLOCK_MS, count=512)
        if not entries:
            if await redis.exists(base + ":owner"):
                continue
            # No writes for a while and no owner: it finished meanwhile (then the end marker
            # is there to read), it is being taken over, or it died without warning.
            if await redis.xrange(stream, min=f"({last}", count=1):
                continue
            lapsed = await redis.zscore(DURABLE, member)
            if lapsed is not None and time.time() < lapsed + lease + TAKEOVER_GRACE:
                continue
            yield owner_died_ending()
            return
        for entry_id, fields in entries[0][1]:
            last = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
            if b"e" in fields:
                return
            body: bytes = fields[b"d"]
            yield body
