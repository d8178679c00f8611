"""Durable turns' checkpoints in the transcript's SQL database (``cb_turns``): one row per
running turn — its newest checkpoint, its sequence number and the fence it was written under
(:class:`~chunkbridge.gateway.stores.base.CheckpointStore`). A turn's writes go in the store
writer's transactions (:class:`~chunkbridge.gateway.stores.writer.StoreWriter`): the checkpoints
of turns that write at once share one commit.

The fence is the whole of the safety: a write carries its writer's fence and lands only where
the row's is not higher (one conditional statement, whose row count says whether it did), and a
takeover raises the row's fence before it reads the checkpoint. A turn's first checkpoint makes
its row; every later one must find it — a turn that ended (on another instance) has none. So
once another instance has claimed a turn, nothing its former owner writes — it was paused past
its lease, say — lands, before or after the turn's end.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from chunkbridge.gateway.stores.base import Claimed, Forget, Key, Save, TurnWrite
from chunkbridge.gateway.stores.transcript_sql import Cursor, Database

__all__ = ["SqlCheckpointStore"]

_KEY = "session_id = ? AND chat_id = ?"


class SqlCheckpointStore:
    """:class:`~chunkbridge.gateway.stores.base.CheckpointStore` over the transcript's
    :class:`~chunkbridge.gateway.stores.transcript_sql.Database` (opened and migrated by the
    transcript store)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        json_param = "?" if database.json_type == "TEXT" else "CAST(? AS JSONB)"
        self._upsert = (
            "INSERT INTO cb_turns (session_id, chat_id, fence, seq, head, body, updated_at)"
            f" VALUES (?, ?, ?, ?, {json_param}, {json_param}, ?) ON CONFLICT (session_id,"
            " chat_id) DO UPDATE SET fence = excluded.fence, seq = excluded.seq,"
            " head = excluded.head, body = excluded.body,"
            " recoveries = 0, retries = 0, updated_at = excluded.updated_at"
            " WHERE cb_turns.fence <= excluded.fence"
        )
        # (a checkpoint past the one a takeover started from: its takeovers in a row are over)
        self._update = (
            f"UPDATE cb_turns SET retries = CASE WHEN seq = ? THEN retries ELSE 0 END,"
            f" seq = ?, body = {json_param}, updated_at = ? WHERE {_KEY} AND fence <= ?"
        )

    def apply(self, cur: Cursor, writes: Sequence[TurnWrite]) -> list[bool]:
        now = time.time()
        return [
            self._save(cur, write, now) if isinstance(write, Save) else self._forget(cur, write)
            for write in writes
        ]

    def _save(self, cur: Cursor, save: Save, now: float) -> bool:
        key, fence, seq = save.key, save.fence, save.seq
        if seq == 1:  # a new turn (the row of an ended one is gone): its head too
            head = (save.head or b"{}").decode()
            row = (*key, fence, seq, head, save.body.decode(), now)
            return bool(cur.execute(self._upsert, row).rowcount)
        # a turn going on: its row must be there (gone: it ended, on another instance)
        params = (seq, seq, save.body.decode(), now, *key, fence)
        return bool(cur.execute(self._update, params).rowcount)

    @staticmethod
    def _forget(cur: Cursor, forget: Forget) -> bool:
        cur.execute(
            f"DELETE FROM cb_turns WHERE {_KEY} AND fence <= ?", (*forget.key, forget.fence)
        )
        return True

    async def claim(self, key: Key, fence: int) -> Claimed | None:
        body_text = self.database.body_text

        def work(cur: Cursor) -> Claimed | None:
            raised = cur.execute(
                "UPDATE cb_turns SET fence = ?, recoveries = recoveries + 1,"
                f" retries = retries + 1 WHERE {_KEY} AND fence < ?",
                (fence, *key, fence),
            )
            if not raised.rowcount:
                return None
            head_text = body_text.replace("body", "head")
            row = cur.execute(
                f"SELECT {head_text}, {body_text}, recoveries, retries FROM cb_turns WHERE {_KEY}",
                key,
            ).fetchone()
            if row is None:
                return None
            return Claimed(str(row[1]).encode(), row[2], row[3], str(row[0]).encode())

        return await self.database.transaction(work)

    async def forget(self, key: Key, fence: int) -> None:
        await self.database.transaction(lambda cur: self._forget(cur, Forget(key, fence)))

    async def running(self) -> list[Key]:
        def work(cur: Cursor) -> list[Key]:
            return [(r[0], r[1]) for r in cur.execute("SELECT session_id, chat_id FROM cb_turns")]

        return await self.database.transaction(work)
