"""The sessions' lines of one process: the per-session turn count every gateway keeps, and,
with ``resume = memory``, the requests waiting for a turn (``busy``).

The count and the line are one :class:`~chunkbridge.gateway.stores.line.SessionLine` per
session, so a turn freed is seen by whoever waits at once (an event per session, set on every
change). With ``resume = redis`` the line is Redis's
(:mod:`~chunkbridge.gateway.stores.redis_line`) and only the count is kept here.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from chunkbridge.gateway.errors import TurnInProgress
from chunkbridge.gateway.stores.base import Key
from chunkbridge.gateway.stores.line import Admitted, Entry, SessionLine, Waiter

__all__ = ["LocalLines"]

#: Above this many chats' answers noted, noting one sweeps out those no longer kept.
SWEEP_ABOVE = 10_000


class LocalLines:
    """Per session: its line, and an event set whenever the line changes (a waiter sees a turn
    freed, or those before it leave)."""

    def __init__(self) -> None:
        self._lines: dict[str, SessionLine] = {}
        self._changed: dict[str, asyncio.Event] = {}
        #: Each chat's newest answer: (until when it is kept, its id, the user message's id).
        self._answers: dict[Key, tuple[float, str, str]] = {}

    @property
    def sessions(self) -> dict[str, int]:
        """The turns held, by session (those holding any)."""
        return {s: line.held for s, line in self._lines.items() if line.held > 0}

    def hold(self, session_id: str, limit: int) -> None:
        """One of the session's ``limit`` turns, whoever waits (what never waits: a
        continuation, a regenerate, ``busy = reject``); :class:`TurnInProgress` when none is
        free."""
        line = self._lines.setdefault(session_id, SessionLine())
        if not line.seize(limit):
            raise TurnInProgress(detail=f"{line.held} active")

    def free(self, session_id: str) -> None:
        line = self._lines.get(session_id)
        if line is None:
            return
        line.release()
        self._settle(session_id, line)

    # -- the line (resume = memory) ------------------------------------------------------------

    async def enter(self, session_id: str, waiter: Waiter, limit: int, queue_max: int) -> Entry:
        line = self._lines.setdefault(session_id, SessionLine())
        entry = line.enter(waiter, limit, queue_max)
        if not isinstance(entry, Admitted):
            self._settle(session_id, line)  # (a refusal leaves nothing behind)
        return entry

    async def take(self, session_id: str, member: str, limit: int) -> Entry:
        line = self._lines.setdefault(session_id, SessionLine())
        entry = line.take(member, limit)
        if isinstance(entry, Admitted):
            self._wake(session_id)  # those behind it move up
        else:
            self._settle(session_id, line)
        return entry

    async def leave(self, session_id: str, member: str) -> None:
        line = self._lines.get(session_id)
        if line is not None and line.leave(member):
            self._settle(session_id, line)

    async def claim(self, session_id: str, member: str, owner: str) -> bool:
        """(``owner`` is this process's own turn: it cannot die apart from the line.)"""
        line = self._lines.get(session_id)
        return line is not None and line.claim(member)

    async def join(self, session_id: str, member: str) -> bool:
        return self._change(session_id, lambda line: line.join(member))

    async def unclaim(self, session_id: str, member: str) -> bool:
        return self._change(session_id, lambda line: line.unclaim(member))

    def _change(self, session_id: str, change: Callable[[SessionLine], bool]) -> bool:
        line = self._lines.get(session_id)
        if line is None or not change(line):
            return False
        self._wake(session_id)
        return True

    async def head(self, session_id: str) -> Waiter | None:
        line = self._lines.get(session_id)
        return None if line is None else line.head()

    async def changed(self, session_id: str, within: float) -> None:
        event = self._changed.setdefault(session_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await event.wait()

    def note_answer(self, key: Key, message_id: str, user_id: str, ttl: float) -> None:
        now = time.monotonic()
        if len(self._answers) > SWEEP_ABOVE:
            self._answers = {k: v for k, v in self._answers.items() if v[0] > now}
        self._answers[key] = (now + ttl, message_id, user_id)

    async def answer_of(self, key: Key) -> tuple[str, str] | None:
        noted = self._answers.get(key)
        if noted is None or noted[0] <= time.monotonic():
            return None
        return noted[1], noted[2]

    def _settle(self, session_id: str, line: SessionLine) -> None:
        """The line changed: wake whoever waits on it; forget it once it is idle."""
        self._wake(session_id)
        if line.idle:
            del self._lines[session_id]

    def _wake(self, session_id: str) -> None:
        event = self._changed.pop(session_id, None)
        if event is not None:
            event.set()  # (a new event for the next change)
