"""The transcript store over a SQL database: schema, migrations, statements and row rules,
written once for both backends (:mod:`~chunkbridge.gateway.stores.sqlite`,
:mod:`~chunkbridge.gateway.stores.postgres`), which only say how to run a transaction.

Every statement runs in a transaction on a worker thread (the drivers are the standard
blocking ones: ``sqlite3``, psycopg 3 with its pool), never on the event loop; the turn code
never waits for a write between an upstream frame and its bytes
(:mod:`~chunkbridge.gateway.stores.writer` queues them).

A message is a row keyed by session, chat and message id, with its position in the chat, its
status, the AI SDK major it was produced for and the format of its body (the ``UIMessage`` as
JSON; JSONB on PostgreSQL). A row that no longer loads — not JSON, not a ``UIMessage``, or a
format newer than this version reads — is skipped and reported, never the chat's failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import orjson
from pydantic import ValidationError

from chunkbridge.gateway.stores.base import (
    ChatPage,
    ChatSummary,
    Key,
    Put,
    StoredMessage,
    Transcript,
)
from chunkbridge.protocol_specs.chat_request import UIMessage

__all__ = ["FORMAT", "MIGRATIONS", "Database", "SqlTranscriptStore", "title_of"]

T = TypeVar("T")

#: The body format this version writes (and the newest it reads).
FORMAT = 1
#: The schema, as migrations: (version, statements). ``{json}`` is the body's column type.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            "CREATE TABLE cb_chats (session_id TEXT NOT NULL, chat_id TEXT NOT NULL,"
            " title TEXT NOT NULL DEFAULT '', created_at DOUBLE PRECISION NOT NULL,"
            " updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (session_id, chat_id))",
            "CREATE INDEX cb_chats_by_update ON cb_chats (session_id, updated_at, chat_id)",
            "CREATE TABLE cb_messages (session_id TEXT NOT NULL, chat_id TEXT NOT NULL,"
            " message_id TEXT NOT NULL, position INTEGER NOT NULL, role TEXT NOT NULL,"
            " status TEXT NOT NULL, major INTEGER NOT NULL, format INTEGER NOT NULL,"
            " body {json} NOT NULL, updated_at DOUBLE PRECISION NOT NULL,"
            " PRIMARY KEY (session_id, chat_id, message_id))",
            "CREATE INDEX cb_messages_in_order ON cb_messages (session_id, chat_id, position)",
        ),
    ),
    (
        2,
        (  # durable turns' checkpoints (:mod:`~chunkbridge.gateway.stores.checkpoint_sql`)
            "CREATE TABLE cb_turns (session_id TEXT NOT NULL, chat_id TEXT NOT NULL,"
            " fence BIGINT NOT NULL, seq INTEGER NOT NULL, head {json} NOT NULL,"
            " body {json} NOT NULL,"
            " recoveries INTEGER NOT NULL DEFAULT 0, retries INTEGER NOT NULL DEFAULT 0,"
            " updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (session_id, chat_id))",
        ),
    ),
)
_TITLE_LENGTH = 80
_KEY = "session_id = ? AND chat_id = ?"


class Cursor(Protocol):
    """The DB-API cursor both drivers give (``?`` placeholders: the backend converts)."""

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any: ...

    def executemany(self, sql: str, params: list[tuple[Any, ...]]) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Database(Protocol):
    """One backend: runs ``work`` in a transaction on a worker thread."""

    #: The SQL type of a message body (``TEXT`` or ``JSONB``) and how a body is read as text.
    json_type: str
    body_text: str
    #: A statement that makes concurrent migrations (instances starting at once) wait their
    #: turn, or ``""``.
    schema_lock: str

    async def open(self) -> None:
        """Connect; :class:`StoreUnavailable` with the reason when that fails."""

    async def transaction(self, work: Callable[[Cursor], T], pipelined: bool = False) -> T:
        """``work``'s result; ``pipelined``: it reads nothing back, so a backend with a
        network between may send its statements without waiting for each one."""

    async def close(self) -> None: ...


def title_of(message: dict[str, Any]) -> str:
    """A chat's title: the start of its first user message's text."""
    text = " ".join(
        str(p.get("text", "")) for p in message.get("parts", []) if p.get("type") == "text"
    )
    text = " ".join(text.split())
    return text if len(text) <= _TITLE_LENGTH else text[: _TITLE_LENGTH - 1] + "…"


class SqlTranscriptStore:
    """:class:`~chunkbridge.gateway.stores.base.TranscriptStore` over a :class:`Database`;
    ``on_skipped(key, message_id, reason)`` hears of every row that did not load."""

    def __init__(self, database: Database, on_skipped: Callable[[Key, str, str], None]) -> None:
        self.database = database
        self._on_skipped = on_skipped
        json_param = "?" if database.json_type == "TEXT" else "CAST(? AS JSONB)"
        self._upsert = (
            "INSERT INTO cb_messages (session_id, chat_id, message_id, position, role, status,"
            " major, format, body, updated_at) VALUES (?, ?, ?, (SELECT COALESCE(MAX(position),"
            f" -1) + 1 FROM cb_messages WHERE {_KEY}), ?, ?, ?, ?, {json_param}, ?)"
            " ON CONFLICT (session_id, chat_id, message_id) DO UPDATE SET role = excluded.role,"
            " status = excluded.status, major = excluded.major, format = excluded.format,"
            " body = excluded.body, updated_at = excluded.updated_at"
        )
        self._truncate = (
            f"DELETE FROM cb_messages WHERE {_KEY} AND position > (SELECT position"
            f" FROM cb_messages WHERE {_KEY} AND message_id = ?)"
        )

    async def start(self) -> None:
        await self.database.open()
        await self.database.transaction(self._migrate)

    def _migrate(self, cur: Cursor) -> None:
        if self.database.schema_lock:
            cur.execute(self.database.schema_lock)
        cur.execute("CREATE TABLE IF NOT EXISTS cb_schema (version INTEGER NOT NULL)")
        row = cur.execute("SELECT MAX(version) FROM cb_schema").fetchone()
        current = row[0] or 0
        for version, statements in MIGRATIONS:
            if version > current:
                for statement in statements:
                    cur.execute(statement.format(json=self.database.json_type))
                cur.execute("INSERT INTO cb_schema (version) VALUES (?)", (version,))

    async def aclose(self) -> None:
        await self.database.close()

    # -- reading -------------------------------------------------------------------------------

    async def load(self, key: Key) -> Transcript:
        sql = (
            f"SELECT message_id, status, major, format, {self.database.body_text}"
            f" FROM cb_messages WHERE {_KEY} ORDER BY position"
        )
        rows = await self.database.transaction(lambda cur: cur.execute(sql, key).fetchall())
        messages: list[StoredMessage] = []
        skipped = 0
        for message_id, status, major, body_format, body in rows:
            problem = None
            if body_format > FORMAT:
                problem = f"format {body_format} is newer than this version reads ({FORMAT})"
            else:
                try:
                    message = orjson.loads(body)
                    UIMessage.model_validate(message)
                except (orjson.JSONDecodeError, ValidationError) as exc:
                    problem = f"{type(exc).__name__}: {str(exc)[:200]}"
            if problem is not None:
                skipped += 1
                self._on_skipped(key, message_id, problem)
                continue
            messages.append(StoredMessage(message, status, major))
        return Transcript(messages, skipped)

    async def chats(self, session_id: str, limit: int, cursor: str | None) -> ChatPage:
        where = "c.session_id = ?"
        params: list[Any] = [session_id]
        if cursor is not None:
            updated, _, chat_id = cursor.partition("|")
            where += " AND (c.updated_at < ? OR (c.updated_at = ? AND c.chat_id < ?))"
            params += [float(updated), float(updated), chat_id]
        sql = (
            "SELECT c.chat_id, c.title, c.created_at, c.updated_at,"
            " (SELECT COUNT(*) FROM cb_messages m"
            "  WHERE m.session_id = c.session_id AND m.chat_id = c.chat_id)"
            f" FROM cb_chats c WHERE {where}"
            " ORDER BY c.updated_at DESC, c.chat_id DESC LIMIT ?"
        )
        params.append(limit + 1)
        rows = await self.database.transaction(
            lambda cur: cur.execute(sql, tuple(params)).fetchall()
        )
        chats = [ChatSummary(r[0], r[1], r[2], r[3], int(r[4])) for r in rows[:limit]]
        last = chats[-1] if len(rows) > limit else None
        return ChatPage(chats, f"{last.updated_at!r}|{last.chat_id}" if last else None)

    # -- writing -------------------------------------------------------------------------------

    async def put_many(self, puts: Sequence[Put]) -> None:
        # nothing is read back, so PostgreSQL gets the statements pipelined
        await self.database.transaction(lambda cur: self.put_rows(cur, puts), pipelined=True)

    def put_rows(self, cur: Cursor, puts: Sequence[Put]) -> None:
        """:meth:`put_many` in the caller's transaction (the writer's, on the worker thread:
        the JSON too). The upserts go together (executemany) up to an edit, whose delete goes
        alone."""
        now = time.time()
        titles: dict[Key, str] = {}
        rows: list[tuple[Any, ...]] = []  # upserts not yet sent, in order
        for put in puts:
            key, message = put.key, put.message
            message_id = str(message.get("id", ""))
            if put.truncate_after:  # a message sent again: what followed it goes
                if rows:
                    cur.executemany(self._upsert, rows)
                    rows = []
                cur.execute(self._truncate, (*key, *key, message_id))
            body = orjson.dumps(message).decode()
            role = str(message.get("role", ""))
            rows.append((*key, message_id, *key, role, put.status, put.major, FORMAT, body, now))
            if not titles.get(key):
                titles[key] = put.title
        if rows:
            cur.executemany(self._upsert, rows)
        cur.executemany(  # one touch per chat
            "INSERT INTO cb_chats (session_id, chat_id, title, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id, chat_id) DO UPDATE SET"
            " updated_at = excluded.updated_at, title = CASE WHEN cb_chats.title = ''"
            " THEN excluded.title ELSE cb_chats.title END",
            [(*key, title, now, now) for key, title in titles.items()],
        )

    async def delete(self, key: Key) -> bool:
        def work(cur: Cursor) -> bool:
            cur.execute(f"DELETE FROM cb_messages WHERE {_KEY}", key)
            gone = cur.execute(f"DELETE FROM cb_chats WHERE {_KEY}", key)
            return bool(gone.rowcount)

        return await self.database.transaction(work)

    async def purge(self, older_than: float) -> int:
        def work(cur: Cursor) -> int:
            cur.execute(
                "DELETE FROM cb_messages WHERE EXISTS (SELECT 1 FROM cb_chats c"
                " WHERE c.session_id = cb_messages.session_id"
                " AND c.chat_id = cb_messages.chat_id AND c.updated_at < ?)",
                (older_than,),
            )
            gone = int(
                cur.execute("DELETE FROM cb_chats WHERE updated_at < ?", (older_than,)).rowcount
            )
            # durable turns' checkpoints left by a failure to forget them (a running turn's
            # is written at every step)
            cur.execute("DELETE FROM cb_turns WHERE updated_at < ?", (older_than,))
            return gone

        return await self.database.transaction(work)
