"""``store = sqlite``: the transcript in one SQLite file (the embedded default: nothing to set
up). One connection on one worker thread — SQLite writes one transaction at a time anyway — in
WAL mode, so reads by other processes (a second worker of ``serve``) do not block the writer."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from chunkbridge.gateway.stores.base import StoreUnavailable
from chunkbridge.gateway.stores.transcript_sql import Cursor

__all__ = ["SqliteDatabase"]

T = TypeVar("T")
#: Errors about what a statement carried, not about the file being there (see postgres.py).
_REFUSED = (sqlite3.DataError, sqlite3.IntegrityError, sqlite3.ProgrammingError)


class SqliteDatabase:
    """A :class:`~chunkbridge.gateway.stores.transcript_sql.Database` on one SQLite file."""

    json_type = "TEXT"
    body_text = "body"
    schema_lock = ""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="chunkbridge-sqlite")
        self._connection: sqlite3.Connection | None = None

    async def open(self) -> None:
        def connect() -> sqlite3.Connection:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            return connection

        try:
            self._connection = await self._run(connect)
        except (OSError, sqlite3.Error) as exc:
            raise StoreUnavailable(f"cannot open the SQLite store {self.path}: {exc}") from exc

    async def transaction(self, work: Callable[[Cursor], T], pipelined: bool = False) -> T:
        connection = self._connection
        if connection is None:
            raise StoreUnavailable("the SQLite store is not open")

        def run() -> T:
            cursor = connection.cursor()
            cursor.execute("BEGIN IMMEDIATE")
            try:
                result = work(cursor)
            except BaseException:
                cursor.execute("ROLLBACK")
                raise
            cursor.execute("COMMIT")
            return result

        try:
            return await self._run(run)
        except _REFUSED:  # the data, not the database: the caller's to find (the writer does)
            raise
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"SQLite store {self.path}: {exc}") from exc

    async def _run(self, work: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, work)

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await self._run(connection.close)
        self._thread.shutdown(wait=False)
