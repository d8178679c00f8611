"""A new user message sent to a session whose turn runs (``busy``): the shell that carries out
the line's decisions (:mod:`~chunkbridge.gateway.stores.line`).

* :func:`check_stale` — ``expectedTurnId`` in the body (the ``start.messageId`` of the newest
  answer the client shows) must be the chat's newest answer, running or ended (kept
  ``resume_ttl``); else 409 before anything waits, so a message never lands in a turn the user
  did not see.
* :func:`line_up` — a new user message (not a continuation, a regenerate or an edit: those keep
  the 409) under ``queue``, ``interrupt`` or ``steer``: it runs at once when the session is
  free and nobody waits; otherwise it joins the line (409 beyond ``queue_max``) and the
  :class:`Queued` request waits for its turn, saying its position; ``interrupt`` stops the
  running turn first (its ``finish`` says ``interruptedBy``).
* :func:`steer_hook` — what a loop turn asks at each step boundary under ``steer``: whether the
  first waiting message steers it (then the turn ends there, ``finish`` saying ``steeredBy``,
  and the waiting message goes on with the loop as the next answer).
* :func:`with_previous_answer` — a message that waited is answered after the answer it waited
  for: the client's copy of that answer (cut where it was when the user sent) is replaced by
  the server's, rebuilt from its chunk log (with ``history = stored`` the store has it).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.errors import QueueFull, ServiceUnavailable, StaleTurn, TurnInProgress
from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.stores import Stores, StoreUnavailable
from chunkbridge.gateway.stores.base import Key, Line
from chunkbridge.gateway.stores.line import (
    Admitted,
    Gone,
    Joined,
    Refused,
    Taken,
    Waiter,
    Waiting,
    WaitKind,
    wait_kind,
)
from chunkbridge.gateway.turn.history import with_answer_copy
from chunkbridge.gateway.turn.run import OpenTurns, Seat
from chunkbridge.protocol_specs.chat_request import ChatRequest, UIMessage
from chunkbridge.translators.core.message_assembly import MessageAssembler

__all__ = [
    "LostPlace",
    "Queued",
    "answer_id",
    "check_stale",
    "eligible",
    "line_up",
    "steer_hook",
    "with_previous_answer",
]

#: Seconds between two interrupts a waiting ``interrupt`` request sends: the turn it waits
#: for may not have been running yet (still connecting) when the first went out.
INTERRUPT_AGAIN = 0.25
#: Seconds between two looks of a waiting request at its line when nothing woke it: what no
#: message says (an instance that died, its turn's lease lapsed; a gateway that drains).
LOOK_AGAIN = 1.0
#: Longest look at the line a step boundary waits for (a steer check).
STEER_CHECK = 0.5
#: Longest read of the previous answer's chunk log.
ANSWER_READ = 2.0
_DONE = b"data: [DONE]"


class BusyGateway(Protocol):
    """What the busy shell reads of its gateway."""

    config: GatewayConfig
    stores: Stores
    turns: OpenTurns
    line: Line
    log: Any
    #: ``history = stored``: the conversation comes from the store.
    stored_history: bool
    #: The instance stops (SIGTERM): nothing more is let in.
    draining: bool
    metrics: Metrics

    @property
    def steerable(self) -> bool: ...

    def steer_offer(
        self, request: ChatRequest, session_id: str, run_id: str, request_id: str
    ) -> str:
        """What a steering request gives a running turn whose upstream takes steers itself
        (:func:`~chunkbridge.gateway.turn.steering.offer`); ``""`` otherwise."""


class LostPlace(StoreUnavailable):
    """A waiting request's entry lapsed (its instance could not renew it)."""


def answer_id(run_id: str) -> str:
    """The id of a new answer (``start.messageId``) of the turn ``run_id``."""
    return f"msg_{run_id[:24]}"


def eligible(request: ChatRequest) -> bool:
    """A new user message — what the policy applies to (not a continuation, a regenerate or an
    edit of a sent message: those keep today's 409)."""
    if request.trigger != "submit-message" or request.messageId is not None:
        return False
    return bool(request.messages) and request.messages[-1].role == "user"


async def check_stale(gateway: BusyGateway, request: ChatRequest, session_id: str) -> None:
    """:class:`StaleTurn` when the body's ``expectedTurnId`` is not the chat's newest answer."""
    expected = request.extra_body.get("expectedTurnId")
    if not isinstance(expected, str) or not expected or not request.id:
        return
    try:
        noted = await gateway.line.answer_of((session_id, request.id))
    except StoreUnavailable as exc:
        gateway.log.warning("busy.answer_unknown", error=str(exc)[:200])
        return
    if noted is not None and noted[0] != expected:
        gateway.metrics.busy.labels("stale").inc()
        raise StaleTurn(detail=f"expected {expected[:64]}, newest {noted[0][:64]}")


@dataclass(slots=True)
class Queued:
    """A request waiting in its session's line, until it holds a turn (:meth:`wait`)."""

    gateway: BusyGateway
    key: Key
    waiter: Waiter
    position: int
    run_id: str

    @property
    def message_id(self) -> str:
        """The answer's id: its ``start`` goes out at once, the turn's own repeats it."""
        return answer_id(self.run_id)

    async def wait(
        self, say: Callable[[int], Awaitable[None]], keepalive: Callable[[], Awaitable[None]]
    ) -> Seat | Joined | None:
        """Until the request holds a turn (its seat), or the steer a running turn took from it
        landed (:class:`Joined`: its answer is that turn's next), saying each new position and a
        keep-alive after each ``keepalive_interval``; ``None`` after ``queue_timeout`` (not
        while a turn holds it as a steer).
        Raises :class:`LostPlace` when its entry lapsed, :class:`ServiceUnavailable` when the
        instance drains. The caller leaves the line on any other way out (:meth:`leave`)."""
        config, line, session_id = self.gateway.config, self.gateway.line, self.key[0]
        member, limit = self.waiter.member, config.max_turns_per_session
        loop = asyncio.get_running_loop()
        now = loop.time()
        deadline, beat = now + config.queue_timeout, now + config.keepalive_interval
        interrupts = self.waiter.kind is WaitKind.INTERRUPT
        nudge = now + INTERRUPT_AGAIN if interrupts else math.inf
        await say(self.position)
        taken = False  # a turn took the message as a steer: it goes with that turn
        while True:
            if self.gateway.draining and not taken:  # the instance stops: it ends, validly
                await self.leave()
                raise ServiceUnavailable(0, detail="draining")  # (mid-stream: no header)
            entry = await line.take(session_id, member, limit)
            if isinstance(entry, Admitted):
                self.gateway.metrics.busy.labels("ran").inc()
                return seat_of(self.gateway, self.key, member)
            if isinstance(entry, Joined):
                return entry
            if isinstance(entry, Gone | Refused):
                raise LostPlace("the request's place in the line lapsed")
            taken = isinstance(entry, Taken)
            if entry.position != self.position:
                self.position = entry.position
                await say(entry.position)
            now = loop.time()
            if now >= deadline and not taken:
                self.gateway.metrics.busy.labels("timeout").inc()
                await self.leave()
                return None
            if now >= nudge:  # (the turn it waits for may have begun since)
                await self.interrupt_running()
                nudge = now + INTERRUPT_AGAIN
            if now >= beat:
                await keepalive()
                beat = now + config.keepalive_interval
            wake = min(deadline, beat, nudge, now + LOOK_AGAIN)
            await line.changed(session_id, max(0.0, wake - now))

    async def leave(self) -> None:
        """Out of the line (its client went away, it timed out, it ran: then a no-op)."""
        with contextlib.suppress(StoreUnavailable):
            await self.gateway.line.leave(self.key[0], self.waiter.member)

    async def interrupt_running(self) -> None:
        """``interrupt``: the session's running turns are stopped, on any instance."""
        resume = self.gateway.stores.resume
        if resume is not None:
            with contextlib.suppress(Exception):  # (Redis away: the turn ends on its own)
                await resume.interrupt(self.key[0], self.waiter.message_id)


def seat_of(gateway: BusyGateway, key: Key, member: str) -> Seat:
    """The seat of a request the line admitted: with the ``redis`` line the process's count
    follows (the line decided); the process's own line counted it already."""
    resume = gateway.stores.resume
    if gateway.stores.line is None:
        return Seat(key, gateway.turns, resume, "")
    gateway.turns.hold(key[0], sys.maxsize)
    return Seat(key, gateway.turns, resume, member)


async def line_up(
    gateway: BusyGateway,
    request: ChatRequest,
    session_id: str,
    *,
    steerable: bool | None = None,
    may_wait: bool = True,
    request_id: str = "",
) -> Seat | Queued | None:
    """Under ``queue``, ``interrupt`` or ``steer``, a new user message's place: a seat (it runs
    now), or :class:`Queued`; ``None`` where the policy does not apply (``reject``, not a new
    user message, no chat id, resume off): today's path. :class:`QueueFull` when the line is
    full. ``steerable``: whether the message may steer (``None``: as the gateway's turns can);
    ``may_wait=False``: it runs now or not at all (:class:`TurnInProgress`; it never joins the
    line, so nothing is interrupted)."""
    config, resume = gateway.config, gateway.stores.resume
    if config.busy == "reject" or resume is None or not request.id or not eligible(request):
        return None
    kind = wait_kind(config.busy, gateway.steerable if steerable is None else steerable)
    assert kind is not None
    user, run_id = request.messages[-1].id, uuid.uuid4().hex
    member = f"{getattr(resume, 'instance', 'local')}:{uuid.uuid4().hex[:12]}"
    steer = ""
    if kind is WaitKind.STEER:
        steer = gateway.steer_offer(request, session_id, run_id, request_id)
    waiter = Waiter(member, kind, user, request.id, steer)
    limit, key = config.max_turns_per_session, (session_id, request.id)
    try:
        queue_max = config.queue_max if may_wait else 0
        entry = await gateway.line.enter(session_id, waiter, limit, queue_max)
    except StoreUnavailable as exc:  # the local rule still holds (today's path)
        gateway.log.warning("busy.line_unavailable", error=str(exc)[:200])
        return None
    if isinstance(entry, Admitted):
        return seat_of(gateway, key, member)
    if not isinstance(entry, Waiting):
        if not may_wait:
            raise TurnInProgress(detail="it may not wait")
        gateway.metrics.busy.labels("full").inc()
        raise QueueFull(detail=f"{config.queue_max} waiting")
    gateway.metrics.busy.labels("queued").inc()
    if config.busy == "steer" and kind is WaitKind.QUEUE:
        gateway.log.info("busy.steer_as_queue", session_id=session_id[:128], reason="no loop")
    queued = Queued(gateway, key, waiter, entry.position, run_id)
    if kind is WaitKind.INTERRUPT:
        await queued.interrupt_running()
    return queued


def steer_hook(gateway: BusyGateway, key: Key) -> Callable[[], Awaitable[str | None]] | None:
    """``busy = steer``: what a loop turn of ``key`` asks at a step boundary — the id of the
    first waiting message when it steers (a steer into the same chat), else ``None``."""
    if gateway.config.busy != "steer":
        return None
    line = gateway.line

    async def steered() -> str | None:
        try:
            async with asyncio.timeout(STEER_CHECK):
                head = await line.head(key[0])
        except (TimeoutError, StoreUnavailable):
            return None
        if head is None or head.kind is not WaitKind.STEER or head.chat_id != key[1]:
            return None
        gateway.metrics.busy.labels("steered").inc()
        return head.message_id

    return steered


async def with_previous_answer(
    gateway: BusyGateway, request: ChatRequest, queued: Queued
) -> ChatRequest:
    """The request of a message that waited, with the server's copy of the chat's answer it
    waited for in place of the client's (see the module); as it was when that answer cannot
    be read whole (``history = stored``: the store holds it already)."""
    if gateway.stored_history:
        return request
    try:
        noted = await gateway.line.answer_of(queued.key)
    except StoreUnavailable:
        noted = None
    answer = await previous_answer(gateway, queued.key)
    if queued.waiter.kind is WaitKind.STEER:
        metadata = (answer or {}).get("metadata") or {}
        if metadata.get("steeredBy") != queued.waiter.message_id:
            gateway.log.info(
                "busy.steer_as_queue",
                session_id=queued.key[0][:128],
                reason="the turn ended before a step boundary",
            )
    if answer is None:
        return request
    user_id = noted[1] if noted is not None and noted[0] == answer.get("id") else ""
    client = [m.model_dump(mode="json", exclude_unset=True) for m in request.messages]
    messages = with_answer_copy(client, answer, user_id)
    return request.model_copy(update={"messages": [UIMessage.model_validate(m) for m in messages]})


async def previous_answer(gateway: BusyGateway, key: Key) -> dict[str, Any] | None:
    """The chat's last answer as its client built it, rebuilt from its chunk log up to its
    ``[DONE]``; ``None`` when there is none, or it cannot be read whole in time."""
    resume = gateway.stores.resume
    if resume is None:
        return None
    assembler = MessageAssembler(gateway.config.target)
    started = time.monotonic()
    try:
        async with asyncio.timeout(ANSWER_READ):
            bodies = await resume.reader(key)
            if bodies is None:
                return None
            async with contextlib.aclosing(bodies):  # type: ignore[type-var]
                async for body in bodies:
                    assembler.feed_sse([body])
                    if _DONE in body:
                        break
                else:
                    return None
    except Exception as exc:  # (a store away, a log not ended in time): the client's copy
        gateway.log.warning(
            "busy.previous_answer_unread",
            error=type(exc).__name__,
            seconds=round(time.monotonic() - started, 3),
        )
        return None
    message = assembler.message
    return None if message is None else dict(message)
