"""The checkpoints of durable turns in SQL (SQLite and PostgreSQL): a write lands only under a
fence at least the row's, a takeover's claim raises the fence and counts itself, a checkpoint
past the one a takeover started from ends the count in a row, and a turn that ended has no row a
former owner could write again. The checkpoint itself round-trips, its head written once."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbridge.gateway.stores.checkpoint_sql import SqlCheckpointStore
from chunkbridge.gateway.stores.transcript_sql import SqlTranscriptStore
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


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> SqlCheckpointStore:
    if request.param == "sqlite":
        from chunkbridge.gateway.stores.sqlite import SqliteDatabase

        database = SqliteDatabase(tmp_path / "chats.db")
    else:
        from chunkbridge.gateway.stores.postgres import PostgresDatabase

        database = PostgresDatabase(request.getfixturevalue("postgres_url"), 5.0)
    transcripts = SqlTranscriptStore(database, lambda *_: None)
    await transcripts.start()  # (opens the database, migrates it)
    yield SqlCheckpointStore(database)
    await transcripts.aclose()


async def test_writes_land_only_under_the_turns_fence(store: SqlCheckpointStore) -> None:
    one = first()
    assert await store.save(KEY, 1, 1, one.to_json(), one.head_json())
    results = one.next(
        Stage.RESULTS,
        ended={"finish_reason": "tool-calls", "metadata": None},
        intents=(Intent("call_1", "charge", {"n": 2**70}, False, "run:1:call_1"),),
    )
    assert await store.save(KEY, 1, results.seq, results.to_json())
    claimed = await store.claim(KEY, 2)
    assert claimed is not None and (claimed.recoveries, claimed.retries) == (1, 1)
    assert Checkpoint.from_json(claimed.body, claimed.head) == results  # (its head kept)
    assert not await store.save(KEY, 1, 3, results.to_json())  # the former owner: fenced
    assert await store.claim(KEY, 2) is None  # a fence as high holds it
    again = await store.claim(KEY, 3)
    assert again is not None and (again.recoveries, again.retries) == (2, 2)
    assert await store.save(KEY, 3, 3, results.next(Stage.CALLING).to_json())
    past = await store.claim(KEY, 4)  # past the checkpoint it started from: a new count
    assert past is not None and (past.recoveries, past.retries) == (3, 1)
    await store.forget(KEY, 3)  # a lower fence forgets nothing
    assert KEY in await store.running()
    await store.forget(KEY, 4)
    assert KEY not in await store.running()
    assert not await store.save(KEY, 4, 4, results.to_json())  # it ended: no row to write
