"""The store's writes behind the turns — transcripts and durable turns' checkpoints: queued,
run in order by one task, batched, retried, reported.

A turn never waits for the database between an upstream frame and its bytes: it hands a write
to :meth:`StoreWriter.submit` (no await) and goes on. Writes run in the order submitted —
a turn's user message lands before its answer —, and a write waits up to :data:`LINGER` for
others to share its transaction (a group commit: each transaction costs two thread hand-offs
besides the database's own work, and a busy gateway starts hundreds of turns a second).

A batch that fails because the database is down is retried with backoff, then given up and
reported: a ``transcript.write_failed`` log line (its ``writes``: the batch's, checkpoints
included) and the ``chunkbridge_transcript_writes{outcome="failed"}`` metric (messages only: a
checkpoint not written is the turn's to report, ``turn.not_durable``); the client's stream is
never touched. A write the database refuses for what it carries (not because it is down) is not
retried: the batch's writes are tried alone, so only that one fails.

What must be written before the client may send its next message (the answer, with ``history =
stored``) is awaited where the turn ends, bounded by a timeout (:meth:`StoreWriter.settled`),
and that wait ends the linger at once.

A durable turn's checkpoint (:meth:`StoreWriter.record`) is awaited by its turn, so it does not
linger: it goes in the next transaction, with whatever else is queued by then — the checkpoints
of the turns that reached a boundary while the previous transaction ran share one commit and
one hand-off to the database's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.stores.base import (
    CheckpointStore,
    Put,
    StoreUnavailable,
    TranscriptStore,
    TurnWrite,
)
from chunkbridge.gateway.stores.transcript_sql import Cursor

__all__ = ["LINGER", "MAX_BATCH", "RETRY_DELAYS", "StoreWriter"]

#: Seconds before each retry of a failed write (then it is given up).
RETRY_DELAYS = (0.05, 0.5, 2.0)
#: Most writes in one transaction.
MAX_BATCH = 500
#: Seconds a write waits for others to join its transaction (unless someone awaits it).
LINGER = 0.025

#: A write, what it is (for the logs), and its outcome: for a message whether it was written;
#: for a turn's write whether it landed (``False``: fenced), ``None`` when it was not written.
_Queued = tuple[Put | TurnWrite, str, "asyncio.Future[Any]"]


class StoreWriter:
    """The queue of one gateway's store writes (see the module); ``checkpoints``: the durable
    turns' store, over the same database."""

    def __init__(
        self,
        store: TranscriptStore,
        metrics: Metrics,
        log: Any,
        delays: tuple[float, ...] = RETRY_DELAYS,
        linger: float = LINGER,
        checkpoints: CheckpointStore | None = None,
    ) -> None:
        self._store = store
        self._checkpoints = checkpoints
        self._linger = linger
        #: Set while someone waits for a write: the batch goes now.
        self._hurry = asyncio.Event()
        self._metrics = metrics
        self._log = log
        self._delays = delays
        self._queue: asyncio.Queue[_Queued] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        #: Drained: what comes later is not written (the database is being closed).
        self._closed = False

    def submit(self, put: Put, what: str) -> asyncio.Future[bool]:
        """Queue ``put``; the future says whether it was written (never raises)."""
        return self._queued(put, what)

    async def record(self, write: TurnWrite) -> bool:
        """A durable turn's write, in the next transaction: whether it landed (``False``: a
        higher fence holds the turn, or it ended); :class:`StoreUnavailable` when the database
        did not take it."""
        self._hurry.set()
        landed: bool | None = await self._queued(write, "checkpoint")
        if landed is None:
            raise StoreUnavailable("the turn's checkpoint could not be written")
        return landed

    def _queued(self, write: Put | TurnWrite, what: str) -> asyncio.Future[Any]:
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._closed:
            self._log.warning("transcript.write_after_close", what=what)
            _answer(write, done, None)
            return done
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="chunkbridge-store-writer")
        self._queue.put_nowait((write, what, done))
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
        batch: list[_Queued] = []
        try:
            await self._batches(batch)
        finally:  # stopped (drained, or a bug): nobody waits forever for a write not done
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            for write, _, done in batch:
                _answer(write, done, None)
                self._queue.task_done()

    async def _batches(self, batch: list[_Queued]) -> None:
        """Write what is queued, a batch at a time (``batch``: the one being written)."""
        queue = self._queue
        while True:
            batch.clear()
            batch.append(await queue.get())
            if not self._hurry.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._linger):
                        await self._hurry.wait()
            self._hurry.clear()
            while len(batch) < MAX_BATCH and not queue.empty():
                batch.append(queue.get_nowait())
            results = await self._attempt(batch)
            if results is None:  # not the database: our own bug; find the write, save the rest
                results = [(await self._attempt([one]) or [None])[0] for one in batch]
            for (write, _, done), landed in zip(batch, results, strict=True):
                _answer(write, done, landed)
                queue.task_done()
            batch.clear()

    async def _attempt(self, batch: list[_Queued]) -> list[bool | None] | None:
        """Write ``batch`` in one transaction, retrying while the database is down: each
        write's outcome; ``None`` when a batch of several fails otherwise (each is then tried
        alone)."""
        what = ", ".join(sorted({w for _, w, _ in batch}))
        count = sum(isinstance(write, Put) for write, _, _ in batch)  # (the metric's writes)
        for attempt, delay in enumerate((*self._delays, None)):
            try:
                landed = await self._transaction([write for write, _, _ in batch])
            except StoreUnavailable as exc:
                if delay is None:
                    self._metrics.transcript_writes.labels("failed").inc(count)
                    self._log.error(
                        "transcript.write_failed", what=what, writes=len(batch), error=str(exc)
                    )
                    return [None] * len(batch)
                self._metrics.transcript_writes.labels("retried").inc(count)
                self._log.warning(
                    "transcript.write_retry", what=what, attempt=attempt + 1, error=str(exc)
                )
                await asyncio.sleep(delay)
            except Exception as exc:
                if len(batch) > 1:
                    return None
                self._metrics.transcript_writes.labels("failed").inc(count)
                self._metrics.internal_errors.inc()
                self._log.error("transcript.write_failed", what=what, exc_info=exc)
                return [None]
            else:
                self._metrics.transcript_writes.labels("written").inc(count)
                return landed
        return [None] * len(batch)  # pragma: no cover - the loop returns

    async def _transaction(self, writes: list[Put | TurnWrite]) -> list[bool | None]:
        """One transaction: the messages in order, then the turns' writes (other rows: the
        order between the two kinds does not matter). Nothing is read back but the turns'
        row counts, so PostgreSQL gets a batch of messages alone pipelined."""
        puts = [write for write in writes if isinstance(write, Put)]
        turns = [write for write in writes if not isinstance(write, Put)]
        checkpoints = self._checkpoints

        def work(cur: Cursor) -> list[bool]:
            if puts:
                self._store.put_rows(cur, puts)
            return checkpoints.apply(cur, turns) if checkpoints is not None and turns else []

        landed = iter(await self._store.database.transaction(work, pipelined=not turns))
        return [True if isinstance(write, Put) else next(landed) for write in writes]

    async def drain(self, grace: float) -> None:
        """Finish the queued writes (up to ``grace`` seconds), then stop: a write not done
        by then, or asked for later, is answered as not written."""
        self._closed = True
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


def _answer(write: Put | TurnWrite, done: asyncio.Future[Any], landed: bool | None) -> None:
    """Tell a write's waiter its outcome (a message not written: ``False``)."""
    if not done.done():
        done.set_result(landed is True if isinstance(write, Put) else landed)
