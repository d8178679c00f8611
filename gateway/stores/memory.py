"""The ``memory`` backends: one process's chunk logs, stops and approval ledger.

A response's :class:`ChunkLog` holds the encoded bodies as the client got them (a reader costs
no re-encoding). A reader gets the log from its first body (the original ``start`` with the
same ``messageId``: ai 6/7 reset to it, ai 5 on a fresh page builds from it), then follows live
writes until the end; readers never slow the producer (each keeps its own position) and a reader
that leaves affects nobody. A finished response stays readable for ``resume_ttl`` seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence

from chunkbridge.gateway.stores.base import ANSWERED, Claim, Interruptible, Key, Stoppable
from chunkbridge.translators.core.approvals import IssuedApproval

__all__ = ["ChunkLog", "MemoryApprovalLedger", "MemoryResumeStore"]


class ChunkLog:
    """One response's body as written, in order, and whether it has ended."""

    __slots__ = ("parts", "done", "_waiters", "_store", "_key")

    def __init__(self, store: MemoryResumeStore, key: Key) -> None:
        self.parts: list[bytes] = []
        self.done = False
        self._waiters: list[asyncio.Future[None]] = []
        self._store = store
        self._key = key

    def append(self, body: bytes) -> None:
        self.parts.append(body)
        self._wake()

    def finish(self) -> None:
        self.done = True
        self._wake()
        self._store.finished(self._key, self)

    def leave(self) -> None:  # (one process: nobody goes on with it)
        self.finish()

    async def settled(self) -> bool:
        return True

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
    """Chunk logs and running turns by (session id, chat id), in this process. The per-session
    turn rule is the gateway's own count here (one process)."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._logs: dict[Key, ChunkLog] = {}
        self._running: dict[Key, Stoppable] = {}

    def begin(self, key: Key, turn: Stoppable) -> ChunkLog:
        log = ChunkLog(self, key)
        self._logs[key] = log
        self._running[key] = turn
        return log

    def finished(self, key: Key, log: ChunkLog) -> None:
        """``log`` ended: readable for ``ttl`` seconds more, then forgotten."""
        if self._logs.get(key) is log:
            self._running.pop(key, None)
        asyncio.get_running_loop().call_later(self.ttl, self._expire, key, log)

    def _expire(self, key: Key, log: ChunkLog) -> None:
        if self._logs.get(key) is log:  # not replaced by a newer response meanwhile
            del self._logs[key]

    async def reader(self, key: Key) -> AsyncIterator[bytes] | None:
        log = self._logs.get(key)
        return None if log is None else log.follow()

    async def stop(self, key: Key) -> bool:
        turn = self._running.get(key)
        return turn is not None and turn.stop()

    async def interrupt(self, session_id: str, by: str) -> None:
        for key, turn in list(self._running.items()):
            if key[0] == session_id and isinstance(turn, Interruptible):
                turn.interrupt(by)

    async def acquire_turn(self, session_id: str, limit: int) -> str:
        return ""

    async def release_turn(self, session_id: str, member: str) -> None:
        pass

    async def start(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


class MemoryApprovalLedger:
    """One process's ledger: session → approval id → (expiry, tool call id or answered)."""

    #: Above this many sessions, issuing sweeps expired entries out of every session.
    SWEEP_ABOVE = 10_000

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._sessions: dict[str, dict[str, tuple[float, str]]] = {}

    def issue(self, session_id: str, approval: IssuedApproval) -> None:
        if len(self._sessions) > self.SWEEP_ABOVE:
            self._sweep()
        entries = self._sessions.setdefault(session_id, {})
        entries[approval.approval_id] = (time.monotonic() + self.ttl, approval.tool_call_id)

    async def written(self) -> None:
        pass  # (stored as issued)

    async def lookup(self, session_id: str, approval_ids: Sequence[str]) -> list[str | None]:
        now = time.monotonic()
        entries = self._sessions.get(session_id, {})
        out: list[str | None] = []
        for approval_id in approval_ids:
            entry = entries.get(approval_id)
            out.append(entry[1] if entry is not None and entry[0] > now else None)
        return out

    async def claim(self, session_id: str, answers: Sequence[Claim]) -> bool:
        # atomic: no await inside
        entries = self._sessions.get(session_id, {})
        if any(entries.get(a.approval_id, (0, ANSWERED))[1] == ANSWERED for a in answers):
            return False
        for a in answers:
            entries[a.approval_id] = (entries[a.approval_id][0], ANSWERED)
        return True

    async def release(self, session_id: str, answers: Sequence[Claim]) -> None:
        entries = self._sessions.get(session_id, {})
        for a in answers:
            if a.approval_id in entries:
                entries[a.approval_id] = (entries[a.approval_id][0], a.tool_call_id)

    async def aclose(self) -> None:
        pass

    def _sweep(self) -> None:
        now = time.monotonic()
        for session_id in list(self._sessions):
            live = {k: v for k, v in self._sessions[session_id].items() if v[0] > now}
            if live:
                self._sessions[session_id] = live
            else:
                del self._sessions[session_id]
