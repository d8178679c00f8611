"""Resumable streams: the chunk log of each running response, its readers, and stop.

``useChat({resume: true})`` reconnects with ``GET …/chat/{chatId}/stream`` after a reload or a
dropped connection (spec §6). With ``resume`` on, the turn driver writes every body it sends to
the client into the response's :class:`ChunkLog` as well — the encoded bytes, so a reader costs
no re-encoding — and a client that goes away detaches instead of aborting: the upstream turn
runs to its end into the log. A reader gets the log from its first chunk (the original ``start``
with the same ``messageId``: ai 6/7 reset to it, ai 5 on a fresh page builds from it), then
follows live writes until ``[DONE]``; readers never slow the producer (each keeps its own
position in the log) and a reader that leaves affects nobody. A finished response stays
readable for ``resume_ttl`` seconds, then the next resume gets ``204``.

``POST …/chat/{chatId}/stop`` ends the running turn the way a client abort would (the abort
frame upstream, the closing chunks to every reader): with resume on, the client's own Stop is
only a disconnect, so stopping needs its own request.

This module is the ``memory`` backend: one process. ``chunkbridge.gateway.resume_redis`` shares
the logs, stops and the per-session rule between instances through Redis, behind the same methods.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from chunkbridge.gateway.streaming import wait_for_disconnect
from chunkbridge.protocol_specs.ui_message_stream import RESPONSE_HEADERS
from chunkbridge.translators.core.sse_codec import STREAM_OPEN_FRAME

if TYPE_CHECKING:
    from chunkbridge.gateway.streaming import ChatStream

__all__ = ["ChunkLog", "MemoryResumeStore", "ResumeResponse"]

Key = tuple[str, str]
_HEADERS = [(name.encode(), value.encode()) for name, value in RESPONSE_HEADERS.items()]


class ChunkLog:
    """One response's body as written, in order, and whether it has ended."""

    __slots__ = ("parts", "done", "_waiters")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.done = False
        self._waiters: list[asyncio.Future[None]] = []

    def append(self, body: bytes) -> None:
        self.parts.append(body)
        self._wake()

    def close(self) -> None:
        self.done = True
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def follow(self) -> AsyncIterator[bytes]:
        """Everything written so far, then each new write as it comes, until the end. A reader
        that falls behind gets what it missed in one piece."""
        index = 0
        loop = asyncio.get_running_loop()
        while True:
            parts = self.parts
            if index < len(parts):
                batch = parts[index:]
                index = len(parts)
                yield batch[0] if len(batch) == 1 else b"".join(batch)
                continue
            if self.done:
                return
            waiter = loop.create_future()
            self._waiters.append(waiter)
            await waiter


class MemoryResumeStore:
    """Chunk logs and running streams by (session id, chat id), in this process."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._logs: dict[Key, ChunkLog] = {}
        self._running: dict[Key, ChatStream] = {}

    def begin(self, key: Key, stream: ChatStream) -> ChunkLog:
        """A new response for ``key`` (it replaces a finished one's log)."""
        log = ChunkLog()
        self._logs[key] = log
        self._running[key] = stream
        return log

    def finished(self, key: Key, log: ChunkLog) -> None:
        """The response ended: readable for ``ttl`` seconds more, then forgotten."""
        log.close()
        if self._running.get(key) is not None and self._logs.get(key) is log:
            del self._running[key]
        asyncio.get_running_loop().call_later(self.ttl, self._expire, key, log)

    def _expire(self, key: Key, log: ChunkLog) -> None:
        if self._logs.get(key) is log:  # not replaced by a newer response meanwhile
            del self._logs[key]

    # -- the interface the routes use (shared with the redis backend) ----------------------------

    async def reader(self, key: Key) -> AsyncIterator[bytes] | None:
        log = self._logs.get(key)
        return None if log is None else log.follow()

    async def stop(self, key: Key) -> bool:
        stream = self._running.get(key)
        if stream is None or stream.driver.turn.done:
            return False
        stream.stop()
        return True

    async def acquire_turn(self, session_id: str, limit: int) -> str:
        return ""  # one process: the gateway's own count is the rule

    async def release_turn(self, session_id: str, member: str) -> None:
        pass

    async def start(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


class ResumeResponse:
    """The resumed SSE body: the log replayed from its first chunk, then followed live. A reader
    that disconnects stops reading; the producer does not notice."""

    def __init__(self, bodies: AsyncIterator[bytes], request_id: str) -> None:
        self.bodies = bodies
        self.request_id = request_id

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = [*_HEADERS, (b"x-request-id", self.request_id.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": STREAM_OPEN_FRAME, "more_body": True})
        reader = asyncio.create_task(self._replay(send))
        listener = asyncio.create_task(wait_for_disconnect(receive))
        done, _ = await asyncio.wait({reader, listener}, return_when=asyncio.FIRST_COMPLETED)
        for task in (reader, listener):
            if task not in done:
                task.cancel()
        if reader in done and not reader.cancelled() and reader.exception() is None:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _replay(self, send: Any) -> None:
        async for body in self.bodies:
            await send({"type": "http.response.body", "body": body, "more_body": True})
