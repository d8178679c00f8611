"""A session's line, sans-I/O: the turns it runs and the messages waiting for one (``busy``).

A new user message that reaches a session whose turns are all taken is refused (``busy =
reject``, today's 409) or joins the session's line (``queue``, ``interrupt``, ``steer``): it
waits, in the order the line admitted it, until it is first and a turn is free. Nobody jumps
the line: a message that arrives while others wait queues behind them even at the moment a
turn is free. :class:`SessionLine` is that decision, as data — the ``memory`` backend runs it
in its process (:mod:`~chunkbridge.gateway.stores.local_line`) and the ``redis`` one runs the
same rules in a script, atomically across instances
(:mod:`~chunkbridge.gateway.stores.redis_line`); a waiting request's entry lapses when its
instance stops renewing it (it died), as a running turn's hold does.

:func:`wait_kind` is the policy: how a message waits, if it may.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "Admitted",
    "Entry",
    "Gone",
    "JOINED",
    "Joined",
    "Refused",
    "SessionLine",
    "TAKEN",
    "Taken",
    "WaitKind",
    "Waiter",
    "Waiting",
    "wait_kind",
]


class WaitKind(StrEnum):
    """How a message waits in the line (what the turn it waits for is told)."""

    #: Until the running turn ends on its own.
    QUEUE = "queue"
    #: The running turn is stopped when the message joins; it runs next.
    INTERRUPT = "interrupt"
    #: The running loop turn ends at its next step boundary and the message goes on with it.
    STEER = "steer"


def wait_kind(busy: str, steerable: bool) -> WaitKind | None:
    """How a new user message to a busy session waits under the policy ``busy``: ``None``, it
    is refused (``reject``). A ``steer`` where nothing can be steered (no loop turn) waits as a
    queued message."""
    if busy == "reject":
        return None
    if busy == "steer" and not steerable:
        return WaitKind.QUEUE
    return WaitKind(busy)


@dataclass(frozen=True, slots=True)
class Waiter:
    """One waiting request: its entry (``member``), how it waits, the user message it brings
    and its chat; a steer a WebSocket upstream takes itself also carries what the running
    turn's owner needs to give it (``steer``: JSON, :mod:`~chunkbridge.gateway.turn.steering`)."""

    member: str
    kind: WaitKind
    message_id: str
    chat_id: str
    steer: str = ""


@dataclass(frozen=True, slots=True)
class Admitted:
    """The request holds one of the session's turns (it runs now)."""


@dataclass(frozen=True, slots=True)
class Waiting:
    """The request waits; ``position`` 1 runs next."""

    position: int


@dataclass(frozen=True, slots=True)
class Refused:
    """The session is busy and the request may not wait (``full``: the line is full)."""

    full: bool = False


@dataclass(frozen=True, slots=True)
class Gone:
    """The request is no longer in the line (it left, or its entry lapsed)."""


@dataclass(frozen=True, slots=True)
class Taken:
    """A running turn took the request's message as a steer (:meth:`SessionLine.claim`): it
    goes with that turn, so it is neither let in on its own nor timed out, until the steer
    lands (:class:`Joined`) or the turn ends without it (then it waits again:
    :meth:`SessionLine.unclaim`)."""

    position: int


@dataclass(frozen=True, slots=True)
class Joined:
    """The steer landed: the request's answer runs on the turn that took it; the request
    leaves the line once it follows that answer."""


Entry = Admitted | Waiting | Refused | Gone | Taken | Joined

#: What a running turn did with a waiting request: took it as a steer, and the steer landed.
TAKEN, JOINED = "taken", "joined"


class SessionLine:
    """One session's turns held and its waiting requests in admission order, each with the
    time its entry lapses (``math.inf``: never, in one process). Every method is a decision
    over this state only; times are given, never read."""

    __slots__ = ("held", "states", "waiters")

    def __init__(self) -> None:
        self.held = 0
        #: (waiter, when its entry lapses), first in line first.
        self.waiters: list[tuple[Waiter, float]] = []
        #: The waiters a running turn took as steers: :data:`TAKEN`, then :data:`JOINED`.
        self.states: dict[str, str] = {}

    @property
    def idle(self) -> bool:
        """Nothing held, nobody waiting (the line can be forgotten)."""
        return self.held <= 0 and not self.waiters

    def seize(self, limit: int) -> bool:
        """Today's rule, for what never waits (a continuation, a regenerate, ``reject``): a
        turn if one of ``limit`` is free, whoever waits."""
        if self.held >= limit:
            return False
        self.held += 1
        return True

    def release(self) -> None:
        self.held = max(0, self.held - 1)

    def enter(
        self,
        waiter: Waiter | None,
        limit: int,
        queue_max: int,
        now: float = 0.0,
        lapses: float = math.inf,
    ) -> Entry:
        """A new request: it runs when a turn is free and nobody waits; else it joins the line
        (``waiter``; ``None``: it may not wait) unless ``queue_max`` wait already."""
        self.expire(now)
        if self.held < limit and not self.waiters:
            self.held += 1
            return Admitted()
        if waiter is None:
            return Refused()
        if len(self.waiters) >= queue_max:
            return Refused(full=True)
        self.waiters.append((waiter, lapses))
        return Waiting(len(self.waiters))

    def take(self, member: str, limit: int, now: float = 0.0) -> Entry:
        """A waiting request looks again: it runs when it is first and a turn is free."""
        self.expire(now)
        position = self.position(member)
        if position is None:
            return Gone()
        state = self.states.get(member)
        if state == JOINED:
            return Joined()
        if state == TAKEN:
            return Taken(position)
        if position == 1 and self.held < limit:
            del self.waiters[0]
            self.held += 1
            return Admitted()
        return Waiting(position)

    def leave(self, member: str) -> bool:
        """The request stops waiting (its client went away, it timed out); whether it was in
        the line."""
        for index, (waiter, _) in enumerate(self.waiters):
            if waiter.member == member:
                del self.waiters[index]
                self.states.pop(member, None)
                return True
        return False

    def claim(self, member: str) -> bool:
        """A running turn takes the first waiting request as a steer (it sends it to its
        agent); ``False`` when that request is no longer first and free to take."""
        if not self.waiters or self.waiters[0][0].member != member or member in self.states:
            return False
        self.states[member] = TAKEN
        return True

    def join(self, member: str) -> bool:
        """The steer the turn took landed (``False``: the request left meanwhile)."""
        if self.states.get(member) != TAKEN:
            return False
        self.states[member] = JOINED
        return True

    def unclaim(self, member: str) -> bool:
        """The turn ended without the steer landing: the request waits again, first."""
        return self.states.pop(member, None) == TAKEN

    def renew(self, member: str, lapses: float) -> None:
        for index, (waiter, _) in enumerate(self.waiters):
            if waiter.member == member:
                self.waiters[index] = (waiter, lapses)

    def head(self, now: float = 0.0) -> Waiter | None:
        """The first waiting request (what a loop turn checks at a step boundary); ``None``
        also while a turn holds it as a steer (nothing else may be steered before it)."""
        self.expire(now)
        if not self.waiters or self.waiters[0][0].member in self.states:
            return None
        return self.waiters[0][0]

    def position(self, member: str) -> int | None:
        for index, (waiter, _) in enumerate(self.waiters):
            if waiter.member == member:
                return index + 1
        return None

    def expire(self, now: float) -> None:
        """Drop the entries that lapsed (their instance stopped renewing them)."""
        if any(lapses <= now for _, lapses in self.waiters):
            self.waiters = [(w, lapses) for w, lapses in self.waiters if lapses > now]
            kept = {w.member for w, _ in self.waiters}
            self.states = {m: state for m, state in self.states.items() if m in kept}
