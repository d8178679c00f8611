"""The checkpoints of durable turns in SQL (SQLite and PostgreSQL): a write lands only under a
fence at least the row's, a takeover's claim raises the fence and counts itself, a checkpoint
past the one a takeover started from ends the count in a row, and a turn that ended has no row a
former owner could write again. The checkpoint itself round-trips, its head written once. The
writes go through the gateway's store writer: the checkpoints of turns that write at once share
one transaction, with the transcript's messages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.stores.base import Forget, Put, Save, StoreUnavailable
from chunkbridge.gateway.stores.checkpoint_sql import SqlCheckpointStore
from chunkbridge.gateway.stores.postgres import PostgresDatabase
from chunkbridge.gateway.stores.transcript_sql import SqlTranscriptStore
from chunkbridge.gateway.stores.writer import StoreWriter
from chunkbridge.gateway.turn.checkpointer import first_checkpoint
from chunkbridge.translators.core.checkpoint import Checkpoint, Intent, Stage

KEY = ("s1", "c1")


def first() -> Checkpoint:
    return Checkpoint(
        seq=1,
        stage=Stage.CALLING,
        run_id="run",
        message_id="msg_1",
        target=7,
        log_bytes=12,
        prefix=12,
        loop={},
        request={"id": "c1", "messages": [{"id": "u1", "role": "user", "parts": []}]},
        continued=None,
        denied=("call_0",),
    )


class Stores:
    """The checkpoint store, its writer, and how many transactions the database ran."""

    def __init__(self, transcripts: SqlTranscriptStore) -> None:
        self.transcripts = transcripts
        self.checkpoints = SqlCheckpointStore(transcripts.database)
        self.metrics = Metrics()
        self.writer = StoreWriter(
            transcripts, self.metrics, get_logger("test"), checkpoints=self.checkpoints
        )
        self.transactions = 0
        run = transcripts.database.transaction

        async def counted(work: Any, pipelined: bool = False) -> Any:
            self.transactions += 1
            return await run(work, pipelined)

        transcripts.database.transaction = counted  # type: ignore[method-assign]

    async def save(
        self, fence: int, checkpoint: Checkpoint, head: bytes | None = None, key: Any = KEY
    ) -> bool:
        return await self.writer.record(
            Save(key, fence, checkpoint.seq, checkpoint.to_json(), head)
        )


@pytest.fixture(params=["sqlite", "postgres"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    if request.param == "sqlite":
        from chunkbridge.gateway.stores.sqlite import SqliteDatabase

        database: Any = SqliteDatabase(tmp_path / "chats.db")
    else:
        from chunkbridge.gateway.stores.postgres import PostgresDatabase

        database = PostgresDatabase(request.getfixturevalue("postgres_url"), 5.0)
    transcripts = SqlTranscriptStore(database, lambda *_: None)
    await transcripts.start()  # (opens the database, migrates it)
    yield Stores(transcripts)
    await transcripts.aclose()


async def test_writes_land_only_under_the_turns_fence(stores: Stores) -> None:
    store, one = stores.checkpoints, first()
    assert await stores.save(1, one, one.head_json())
    results = one.next(
        Stage.RESULTS,
        ended={"finish_reason": "tool-calls", "metadata": None},
        intents=(Intent("call_1", "charge", {"n": 2**70}, False, "run:1:call_1"),),
    )
    assert await stores.save(1, results)
    claimed = await store.claim(KEY, 2)
    assert claimed is not None and (claimed.recoveries, claimed.retries) == (1, 1)
    assert Checkpoint.from_json(claimed.body, claimed.head) == results  # (its head kept)
    assert not await stores.save(1, results.next(Stage.CALLING))  # the former owner: fenced
    assert await store.claim(KEY, 2) is None  # a fence as high holds it
    again = await store.claim(KEY, 3)
    assert again is not None and (again.recoveries, again.retries) == (2, 2)
    assert await stores.save(3, results.next(Stage.CALLING))
    past = await store.claim(KEY, 4)  # past the checkpoint it started from: a new count
    assert past is not None and (past.recoveries, past.retries) == (3, 1)
    await stores.writer.record(Forget(KEY, 3))  # a lower fence forgets nothing
    assert KEY in await store.running()
    await stores.writer.record(Forget(KEY, 4))
    assert KEY not in await store.running()
    assert not await stores.save(4, results.next(Stage.CALLING))  # it ended: no row to write
    await stores.writer.drain(1)


async def test_turns_that_write_at_once_share_one_transaction(stores: Stores) -> None:
    """Sixteen turns reach a boundary together, while a transcript message waits to be
    written: a handful of transactions for all of them (the first goes alone; what came
    meanwhile goes in the next), each write's own outcome told apart — one fenced."""
    one = first()
    keys = [(f"s{i}", "c1") for i in range(16)]
    for key in keys:
        assert await stores.save(1, one, one.head_json(), key=key)
    await stores.checkpoints.claim(keys[5], 2)  # another instance took this one over
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    stores.transactions = 0
    put = stores.writer.submit(Put(keys[0], user, "done", 7), "user")
    step = one.next(Stage.RESULTS)
    landed = await asyncio.gather(*(stores.save(1, step, key=key) for key in keys))
    assert await put
    assert landed == [key != keys[5] for key in keys]
    assert stores.transactions <= 2
    for key in keys:
        claimed = await stores.checkpoints.claim(key, 3)
        assert claimed is not None
        assert Checkpoint.from_json(claimed.body, claimed.head).seq == (1 if key == keys[5] else 2)
    assert [m.message["id"] for m in (await stores.transcripts.load(keys[0])).messages] == ["u1"]
    await stores.writer.drain(1)


async def test_a_database_that_fails_is_told_to_the_turn(stores: Stores) -> None:
    """The writer retries a database that is down, then tells the turn its checkpoint was not
    written (it goes on without checkpoints)."""
    fast = StoreWriter(
        stores.transcripts, Metrics(), get_logger("test"), (0.01,), checkpoints=stores.checkpoints
    )
    await stores.transcripts.database.close()
    with pytest.raises(StoreUnavailable):
        await fast.record(Save(KEY, 1, 1, first().to_json(), first().head_json()))
    await fast.drain(1)


def test_a_checkpoint_says_whom_its_stream_is_written_for() -> None:
    """``reset_step`` travels with ``target`` (a taker writes for the same client); one written
    before it existed is for a client without it."""
    one = first_checkpoint({}, "run", "msg_1", 7, None, 0, None, reset_step=True)
    assert (one.target, one.reset_step) == (7, True)
    assert Checkpoint.from_json(one.to_json(), one.head_json()) == one
    older = orjson.loads(one.to_json())
    del older["reset_step"]
    assert Checkpoint.from_json(orjson.dumps(older), one.head_json()).reset_step is False


async def test_a_message_the_database_refuses_fails_alone(stores: Stores) -> None:
    """A message PostgreSQL will not take (a NUL in JSONB) shares a batch with turns'
    checkpoints: it is not retried as if the database were down — the checkpoints land at
    once, and only that message fails (SQLite takes it)."""
    one = first()
    keys = [(f"n{i}", "c1") for i in range(4)]
    nul = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "a\u0000b"}]}
    put = stores.writer.submit(Put(keys[0], nul, "done", 7), "user")
    landed = await asyncio.gather(*(stores.save(1, one, one.head_json(), key=k) for k in keys))
    assert landed == [True] * 4
    assert 'outcome="retried"' not in stores.metrics.render().decode()  # (not an outage)
    refused = isinstance(stores.transcripts.database, PostgresDatabase)
    assert await put is not refused
    await stores.writer.drain(1)


async def test_a_drained_writer_answers_every_write(stores: Stores) -> None:
    """The writer drained while a transaction runs and a checkpoint waits behind it: the
    waiting turn hears its checkpoint was not written (it does not wait forever), and so does
    one that asks after the drain."""
    database = stores.transcripts.database
    run = database.transaction

    async def slow(work: Any, pipelined: bool = False) -> Any:
        await asyncio.sleep(1.0)
        return await run(work, pipelined)

    database.transaction = slow  # type: ignore[method-assign]
    one = first()
    writing = asyncio.ensure_future(stores.save(1, one, one.head_json()))
    await asyncio.sleep(0.05)
    waiting = asyncio.ensure_future(stores.save(1, one, one.head_json(), key=("s2", "c1")))
    await asyncio.sleep(0.05)
    await stores.writer.drain(0.1)
    for write in (writing, waiting):
        with pytest.raises(StoreUnavailable):
            await asyncio.wait_for(write, 1.0)
    with pytest.raises(StoreUnavailable):
        await asyncio.wait_for(stores.save(1, one, one.head_json(), key=("s3", "c1")), 1.0)
