"""Transcript writes behind the turn: queued, run in order by one task, batched, retried,
reported.

A turn never waits for the database between an upstream frame and its bytes: it hands a write
to :meth:`TranscriptWriter.submit` (no await) and goes on. Writes run in the order submitted —
a turn's user message lands before its answer —, and a write waits up to :data:`LINGER` for
others to share its transaction (a group commit: each transaction costs two thread hand-offs
besides the database's own work, and a busy gateway starts hundreds of turns a second).

A batch that fails because the database is down is retried with backoff, then given up and
reported: a ``transcript.write_failed`` log line and the
``chunkbridge_transcript_writes{outcome="failed"}`` metric (both counted per write); the
client's stream is never touched. What must be written before the client may send its next
message (the answer, with ``history = stored``) is awaited where the turn ends, bounded by a
timeout (:meth:`TranscriptWriter.settled`), and that wait ends the linger at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.stores.base import Put, StoreUnavailable, TranscriptStore

__all__ = ["LINGER", "MAX_BATCH", "RETRY_DELAYS", "TranscriptWriter"]

#: Seconds before each retry of a failed write (then it is given up).
RETRY_DELAYS = (0.05, 0.5, 2.0)
#: Most writes in one transaction.
MAX_BATCH = 500
#: Seconds a write waits for others to join its transaction (unless someone awaits it).
LINGER = 0.025

_Queued = tuple[Put, str, "asyncio.Future[bool]"]


class TranscriptWriter:
    """The queue of one gateway's transcript writes (see the module)."""

    def __init__(
        self,
        store: TranscriptStore,
        metrics: Metrics,
        log: Any,
        delays: tuple[float, ...] = RETRY_DELAYS,
        linger: float = LINGER,
    ) -> None:
        self._store = store
        self._linger = linger
        #: Set while someone waits for a write: the batch goes now.
        self._hurry = asyncio.Event()
        self._metrics = metrics
        self._log = log
        self._delays = delays
        self._queue: asyncio.Queue[_Queued] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def submit(self, put: Put, what: str) -> asyncio.Future[bool]:
        """Queue ``put``; the future says whether it was written (never raises)."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="chunkbridge-transcript-writer")
        self._queue.put_nowait((put, what, done))
        return done

    async def settled(self, written: asyncio.Future[bool], seconds: float) -> bool:
        """Wait (up to ``seconds``) for a submitted write; ``False`` if it failed or is late."""
        self._hurry.set()
        try:
            async with asyncio.timeout(seconds):
                return await asyncio.shield(written)
        except TimeoutError:
            self._log.warning("transcript.write_late", seconds=seconds)
            return False

    async def _run(self) -> None:
        queue = self._queue
        while True:
            batch = [await queue.get()]
            if not self._hurry.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._linger):
                        await self._hurry.wait()
            self._hurry.clear()
            while len(batch) < MAX_BATCH and not queue.empty():
                batch.append(queue.get_nowait())
            ok = await self._attempt(batch)
            if ok is None:  # not the database: our own bug; find the write, save the rest
                results = [await self._attempt([one]) is True for one in batch]
            else:
                results = [ok] * len(batch)
            for (_, _, done), written in zip(batch, results, strict=True):
                if not done.done():
                    done.set_result(written)
                queue.task_done()

    async def _attempt(self, batch: list[_Queued]) -> bool | None:
        """Write ``batch`` in one transaction, retrying while the database is down; ``None``
        when a batch of several fails otherwise (each is then tried alone)."""
        what = ", ".join(sorted({w for _, w, _ in batch}))
        count = len(batch)
        for attempt, delay in enumerate((*self._delays, None)):
            try:
                await self._store.put_many([put for put, _, _ in batch])
            except StoreUnavailable as exc:
                if delay is None:
                    self._metrics.transcript_writes.labels("failed").inc(count)
                    self._log.error(
                        "transcript.write_failed", what=what, writes=count, error=str(exc)
                    )
                    return False
                self._metrics.transcript_writes.labels("retried").inc(count)
                self._log.warning(
                    "transcript.write_retry", what=what, attempt=attempt + 1, error=str(exc)
                )
                await asyncio.sleep(delay)
            except Exception as exc:
                if count > 1:
                    return None
                self._metrics.transcript_writes.labels("failed").inc()
                self._metrics.internal_errors.inc()
                self._log.error("transcript.write_failed", what=what, exc_info=exc)
                return False
            else:
                self._metrics.transcript_writes.labels("written").inc(count)
                return True
        return False  # pragma: no cover - the loop returns

    async def drain(self, grace: float) -> None:
        """Finish the queued writes (up to ``grace`` seconds), then stop."""
        if self._task is None:
            return
        self._hurry.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await self._queue.join()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
