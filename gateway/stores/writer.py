"""Transcript writes behind the turn: queued, run in order by one task, retried, reported.

A turn never waits for the database between an upstream frame and its bytes: it hands a write
to :meth:`TranscriptWriter.submit` (no await) and goes on. Writes run one after the other in the
order submitted — a turn's user message lands before its answer — and a failed one (the
database down) is retried with backoff, then given up and reported: a ``transcript.write_failed``
log line and the ``chunkbridge_transcript_writes{outcome="failed"}`` metric; the client's
stream is never touched. What must be written before the client may send its next message (the
answer, with ``history = stored``) is awaited where the turn ends, bounded by a timeout
(:meth:`TranscriptWriter.settled`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.stores.base import StoreUnavailable

__all__ = ["RETRY_DELAYS", "TranscriptWriter", "Write"]

#: Seconds before each retry of a failed write (then it is given up).
RETRY_DELAYS = (0.05, 0.5, 2.0)

Write = Callable[[], Awaitable[None]]


class TranscriptWriter:
    """The queue of one gateway's transcript writes (see the module)."""

    def __init__(self, metrics: Metrics, log: Any, delays: tuple[float, ...] = RETRY_DELAYS):
        self._metrics = metrics
        self._log = log
        self._delays = delays
        self._queue: asyncio.Queue[tuple[Write, str, asyncio.Future[bool]]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def submit(self, write: Write, what: str) -> asyncio.Future[bool]:
        """Queue ``write``; the future says whether it was written (never raises)."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="chunkbridge-transcript-writer")
        self._queue.put_nowait((write, what, done))
        return done

    async def settled(self, written: asyncio.Future[bool], seconds: float) -> bool:
        """Wait (up to ``seconds``) for a submitted write; ``False`` if it failed or is late."""
        try:
            async with asyncio.timeout(seconds):
                return await asyncio.shield(written)
        except TimeoutError:
            self._log.warning("transcript.write_late", seconds=seconds)
            return False

    async def _run(self) -> None:
        while True:
            write, what, done = await self._queue.get()
            ok = await self._attempt(write, what)
            if not done.done():
                done.set_result(ok)
            self._queue.task_done()

    async def _attempt(self, write: Write, what: str) -> bool:
        for attempt, delay in enumerate((*self._delays, None)):
            try:
                await write()
            except StoreUnavailable as exc:
                if delay is None:
                    self._metrics.transcript_writes.labels("failed").inc()
                    self._log.error("transcript.write_failed", what=what, error=str(exc))
                    return False
                self._metrics.transcript_writes.labels("retried").inc()
                self._log.warning(
                    "transcript.write_retry", what=what, attempt=attempt + 1, error=str(exc)
                )
                await asyncio.sleep(delay)
            except Exception as exc:  # a bug of ours: reported once, not retried
                self._metrics.transcript_writes.labels("failed").inc()
                self._metrics.internal_errors.inc()
                self._log.error("transcript.write_failed", what=what, exc_info=exc)
                return False
            else:
                self._metrics.transcript_writes.labels("written").inc()
                return True
        return False  # pragma: no cover - the loop returns

    async def drain(self, grace: float) -> None:
        """Finish the queued writes (up to ``grace`` seconds), then stop."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await self._queue.join()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
