"""``store = postgres``: the transcript in PostgreSQL, shared by every instance on
``store_url``. psycopg 3 (its blocking API) and its connection pool, on worker threads — one
per pooled connection — never on the event loop. Instances starting at once migrate one after
the other (an advisory lock)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool

from chunkbridge.gateway.stores.base import StoreUnavailable
from chunkbridge.gateway.stores.transcript_sql import Cursor

__all__ = ["PostgresDatabase"]

#: Errors about what a statement carried (a value the database will not take, a broken
#: statement), not about the database being there: not retried as if it were down.
_REFUSED = (psycopg.DataError, psycopg.IntegrityError, psycopg.ProgrammingError)

T = TypeVar("T")
#: Connections (and threads) per instance.
POOL_SIZE = 4
#: The advisory lock migrations take (any constant: "cbstore" in ASCII).
_MIGRATION_LOCK = 0x6362_7374_6F72_65


class _QmarkCursor:
    """psycopg's cursor with the ``?`` placeholders the shared statements use."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        self._cursor.execute(sql.replace("?", "%s"), params)
        return self._cursor

    def executemany(self, sql: str, params: list[tuple[Any, ...]]) -> Any:
        self._cursor.executemany(sql.replace("?", "%s"), params)
        return self._cursor

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        rows: list[Any] = self._cursor.fetchall()
        return rows


class PostgresDatabase:
    """A :class:`~chunkbridge.gateway.stores.transcript_sql.Database` on PostgreSQL."""

    json_type = "JSONB"
    body_text = "body::text"
    schema_lock = f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})"

    def __init__(self, url: str, connect_timeout: float = 5.0) -> None:
        self.url = url
        self.connect_timeout = connect_timeout
        self._threads = ThreadPoolExecutor(POOL_SIZE, thread_name_prefix="chunkbridge-pg")
        self._pool: ConnectionPool | None = None

    async def open(self) -> None:
        pool = ConnectionPool(
            self.url,
            min_size=1,
            max_size=POOL_SIZE,
            open=False,
            timeout=self.connect_timeout,
            kwargs={
                "connect_timeout": max(1, round(self.connect_timeout)),
                "client_encoding": "utf8",
            },
            name="chunkbridge-store",
        )

        def connect() -> None:
            pool.open(wait=True, timeout=self.connect_timeout)

        try:
            await self._run(connect)
        except psycopg.Error as exc:
            await self._run(pool.close)
            raise StoreUnavailable(f"cannot reach the PostgreSQL store: {exc}") from exc
        self._pool = pool

    async def transaction(self, work: Callable[[Cursor], T], pipelined: bool = False) -> T:
        pool = self._pool
        if pool is None:
            raise StoreUnavailable("the PostgreSQL store is not open")

        def run() -> T:
            with pool.connection() as connection:  # the block commits, or rolls back
                pipeline = connection.pipeline() if pipelined else contextlib.nullcontext()
                with pipeline, connection.cursor() as cursor:
                    return work(_QmarkCursor(cursor))

        try:
            return await self._run(run)
        except _REFUSED:  # the data, not the database: the caller's to find (the writer does)
            raise
        except psycopg.Error as exc:  # the pool's timeout is one too
            raise StoreUnavailable(f"PostgreSQL store: {exc}") from exc

    async def _run(self, work: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._threads, work)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await self._run(pool.close)
        self._threads.shutdown(wait=False)
