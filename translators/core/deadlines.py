"""When a turn must send a keep-alive, or give up on a silent upstream (sans-I/O: no clock).

Four limits per turn: silence before the first upstream event (``first_event``), silence between
events (``idle``), the whole turn (``total``), and silence towards the client after which a
keep-alive comment goes out (``keepalive``); and, while the agent's ask may be the end of its turn
(:class:`~chunkbridge.translators.core.closing.DeferredClose`), the short silence after which it is
taken to wait for the answer (``settle``, :meth:`Deadlines.settle`). The driver reports what happens
(:meth:`Deadlines.event`, :meth:`Deadlines.wrote`) with its own clock's time, asks
:meth:`Deadlines.next_check` when to look again, and at that time asks :meth:`Deadlines.due` what is
due. One timer per stream, re-armed lazily, instead of a timeout around every receive: on a sparse
stream a timeout per receive costs more than translating the event.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Deadlines", "Due"]


class Due(Enum):
    """What is due; a timeout's value names it in logs."""

    KEEPALIVE = "keepalive"
    FIRST_EVENT_TIMEOUT = "first-event"
    IDLE_TIMEOUT = "idle"
    TOTAL_TIMEOUT = "total"
    #: The settle window after an ask passed in silence (not a timeout: the agent waits).
    SETTLE = "settle"

    @property
    def is_timeout(self) -> bool:
        return self is not Due.KEEPALIVE and self is not Due.SETTLE


class Deadlines:
    """The limits of one turn. All times are seconds on the caller's monotonic clock."""

    __slots__ = (
        "_idle",
        "_keepalive",
        "_settle",
        "_silence",
        "ends_at",
        "first_event_at",
        "got_event",
        "last_event",
        "last_write",
    )

    def __init__(
        self,
        now: float,
        *,
        first_event: float,
        idle: float,
        total: float,
        keepalive: float,
        started: float | None = None,
    ) -> None:
        self._idle = idle
        self._keepalive = keepalive
        #: The silence allowed now: ``first_event`` until an event arrived, then ``idle``.
        self._silence = first_event
        #: Silence after which a pending ask ends the turn (infinite while none is pending).
        self._settle = float("inf")
        #: When the turn must be over (``total`` after it started: the request may be older).
        self.ends_at = (now if started is None else started) + total
        self.got_event = False
        #: When the first upstream event arrived (``None``: none yet).
        self.first_event_at: float | None = None
        self.last_event = now
        self.last_write = now

    def event(self, now: float) -> None:
        """An upstream event arrived."""
        self.last_event = now
        if not self.got_event:
            self.got_event = True
            self.first_event_at = now
            self._silence = self._idle

    def wrote(self, now: float) -> None:
        """Bytes went to the client."""
        self.last_write = now

    def settle(self, seconds: float | None) -> None:
        """Watch for ``seconds`` of upstream silence (counted from the last event) while an ask
        may end the turn; ``None`` stops watching."""
        self._settle = float("inf") if seconds is None else seconds

    def next_check(self) -> float:
        """The earliest time something may be due."""
        return min(
            self.last_write + self._keepalive,
            self.last_event + min(self._silence, self._settle),
            self.ends_at,
        )

    def due(self, now: float) -> Due | None:
        """What is due at ``now`` (a timeout, then the settle window, then a keep-alive), or
        ``None``."""
        if now >= self.ends_at:
            return Due.TOTAL_TIMEOUT
        if now >= self.last_event + self._silence:
            return Due.IDLE_TIMEOUT if self.got_event else Due.FIRST_EVENT_TIMEOUT
        if now >= self.last_event + self._settle:
            return Due.SETTLE
        if now >= self.last_write + self._keepalive:
            return Due.KEEPALIVE
        return None
