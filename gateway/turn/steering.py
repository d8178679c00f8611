"""A running agent backend's turn steered through its own command (``busy = steer``, a dialect
whose WebSocket contract has a ``steer_frame``: pi's ``steer``).

The gateway's agent loop steers at its own step boundaries (:func:`~chunkbridge.gateway.turn.
busy.steer_hook`). An agent backend keeps its boundaries to itself, so the new message goes to
the agent, and the agent shows where it took it:

* the waiting request brings its steer (:func:`offer`): the frame its dialect builds from its
  request, its answer's run id and its user message, in its entry of the session's line;
* the running turn's owner watches that line (:class:`Steering`): when the first waiting
  request steers this chat, it sends the frame on the turn's socket and tells the translator
  which message to look for;
* where the agent shows that message (:meth:`~chunkbridge.kit.Translator.steered`) the answer
  ends, its ``finish`` saying ``steeredBy``, and the run goes on as the next answer on the same
  socket and seat (:func:`go_on`), written into the chat's chunk log, which the waiting
  request follows from whichever instance it reached (:func:`follow`).

A steer the agent did not take before its run ended waits as a queued message: its request runs
next, as its own turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from chunkbridge.gateway.stores.base import Key, ResumeStore, StoreUnavailable
from chunkbridge.gateway.stores.line import Waiter, WaitKind
from chunkbridge.gateway.telemetry import NoTrace, TurnTrace
from chunkbridge.gateway.transports.connectors import WebSocketConnector
from chunkbridge.gateway.transports.websocket import WebSocketUpstream
from chunkbridge.kit import RequestRejected, Translator, TurnInput
from chunkbridge.protocol_specs.chat_request import ChatRequest, UIMessage

if TYPE_CHECKING:
    from chunkbridge.gateway.turn.opening import Admission, Gateway
    from chunkbridge.gateway.turn.run import TurnRun

__all__ = ["SteerOffer", "Steering", "follow", "go_on", "offer", "takes_steers", "watch"]

#: Seconds between two looks at the line when nothing woke the watch.
LOOK_AGAIN = 1.0
#: How long a request that was steered into a turn looks for that turn's answer in the log.
FIND_ANSWER = 3.0


@dataclass(frozen=True, slots=True)
class SteerOffer:
    """What a waiting request gives the turn it steers (the JSON of :attr:`Waiter.steer`)."""

    frame: dict[str, Any]
    #: The run id of its answer (its ``start.messageId`` went out already).
    run_id: str
    #: Its user message, as the client sent it (the next answer's request ends with it).
    user: dict[str, Any]
    #: Its request's id (the answer's log line and trace carry it).
    request_id: str = ""

    @classmethod
    def read(cls, payload: str) -> SteerOffer | None:
        try:
            data = orjson.loads(payload)
            found = (dict(data["frame"]), str(data["run_id"]), dict(data["user"]))
            return cls(*found, str(data.get("request_id") or ""))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            return None


def takes_steers(gateway: Gateway) -> bool:
    """The gateway's upstream takes steers itself: a WebSocket upstream whose dialect has a
    steer frame (not the agent loop's provider: that loop steers at its own boundaries)."""
    contract = gateway.dialect.websocket
    return (
        gateway.agent is None
        and contract is not None
        and contract.steer_frame is not None
        and isinstance(gateway.connector, WebSocketConnector)
    )


def offer(
    gateway: Gateway, request: ChatRequest, session_id: str, run_id: str, request_id: str = ""
) -> str:
    """A steering request's offer (see the module); ``""`` when the gateway's upstream takes
    no steers or its dialect cannot carry the message as one (then it waits as queued)."""
    contract = gateway.dialect.websocket
    if not takes_steers(gateway) or contract is None or contract.steer_frame is None:
        return ""
    turn = TurnInput(request, session_id, run_id, gateway.dialect_settings, gateway.history)
    try:
        frame = contract.steer_frame(turn)
    except RequestRejected:
        return ""
    user = request.messages[-1].model_dump(mode="json", exclude_unset=True)
    found = {"frame": frame, "run_id": run_id, "user": user, "request_id": request_id}
    return orjson.dumps(found).decode()


def watch(
    gateway: Gateway,
    run: TurnRun,
    request: ChatRequest,
    forward: dict[str, str],
    new_trace: Callable[[], TurnTrace | NoTrace],
) -> None:
    """A resumable run of a gateway whose upstream takes steers watches its session's line."""
    if run.seat.resume is not None and request.id:
        run.steering = Steering(gateway, run, request, forward, new_trace)
        run.steering.start()


class Steering:
    """The watch a steerable turn keeps on its session's line while it runs (see the module):
    at most one steer per answer — the answer ends where it lands."""

    def __init__(
        self,
        gateway: Gateway,
        run: TurnRun,
        request: ChatRequest,
        forward: dict[str, str],
        new_trace: Callable[[], TurnTrace | NoTrace],
    ) -> None:
        self.gateway = gateway
        self.run = run
        self.request = request
        self.forward = forward
        self.new_trace = new_trace
        #: The waiting request whose steer went upstream, and its offer.
        self.taken: tuple[Waiter, SteerOffer] | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    @property
    def landed(self) -> bool:
        """The agent took the steer: the turn ended there, and its run goes on (:func:`go_on`)."""
        return self.taken is not None and self._landed(self.taken[0])

    def _landed(self, waiter: Waiter) -> bool:
        translator = self.run.driver.turn.translator
        return isinstance(translator, Translator) and translator.steered_by == waiter.message_id

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    def stop(self) -> None:
        """The run ended: the watch ends at its next look (within :data:`LOOK_AGAIN`), never
        inside a claim, whose outcome it must see to let go of what it took."""
        self._stopped = True

    async def _watch(self) -> None:
        driver, line = self.run.driver, self.gateway.line
        session_id, chat_id = self.run.key
        while not driver.done and not self._stopped:
            try:
                head = await line.head(session_id)
            except StoreUnavailable:
                head = None
            if head is not None and head.kind is WaitKind.STEER and head.chat_id == chat_id:
                found = SteerOffer.read(head.steer) if head.steer else None
                if found is not None and await self._send(head, found):
                    return
            await line.changed(session_id, LOOK_AGAIN)

    async def _send(self, waiter: Waiter, found: SteerOffer) -> bool:
        """The steer goes to the agent, its request taken from the line first (``False``: it
        was not, or the turn's socket is not one that takes steers)."""
        upstream, driver = self.run.driver.upstream, self.run.driver
        translator = driver.turn.translator
        if not isinstance(upstream, WebSocketUpstream) or not isinstance(translator, Translator):
            return False
        session_id, line = self.run.key[0], self.gateway.line
        try:
            owner = self.run.seat.member
            if driver.done or not await line.claim(session_id, waiter.member, owner):
                return False
            if driver.done:  # it ended during the claim: its end let go of nothing yet
                await line.unclaim(session_id, waiter.member)
                return False
        except StoreUnavailable:
            return False
        translator.steering = waiter.message_id  # (before it can land; no wait since the claim)
        self.taken = (waiter, found)
        try:
            await upstream.send(found.frame)
        except Exception as exc:  # the socket went away: the message waits again
            self.gateway.log.warning("busy.steer_unsent", error=type(exc).__name__)
            translator.steering = None
            await self.unclaim()
            return True
        self.gateway.log.info("busy.steer_sent", session_id=session_id[:128])
        return True

    async def unclaim(self) -> None:
        """The run ended and the steer it took did not land (pi ended its run first, or refused
        the command): its request waits again, first in line, and runs as queued."""
        taken, self.taken = self.taken, None
        if taken is None or self._landed(taken[0]):
            self.taken = taken
            return
        self.gateway.log.info(
            "busy.steer_as_queue",
            session_id=self.run.key[0][:128],
            reason="the agent did not take it before its run ended",
        )
        with contextlib.suppress(StoreUnavailable):
            await self.gateway.line.unclaim(self.run.key[0], taken[0].member)


async def go_on(steering: Steering, log: Any) -> None:
    """The steered run goes on as the answer to the message that steered it: a new turn on the
    same socket and seat, run detached into the chat's log; its request, told it joined, finds
    that answer there (:func:`follow`). When the next turn cannot be opened, what the run held
    is let go: the seat freed, the agent told to stop, the request out of the line (it is told
    it lost its place)."""
    from chunkbridge.gateway.turn.opening import assemble  # (opening imports this module)

    assert steering.taken is not None
    waiter = steering.taken[0]
    gateway, first = steering.gateway, steering.run
    session_id = first.key[0]
    try:
        admission = _next_admission(steering)
        run = assemble(
            gateway,
            admission,
            first.driver.upstream,
            steering.forward,
            request_id=steering.taken[1].request_id or first.request_id,
            log=log.bind(request_id=steering.taken[1].request_id or first.request_id),
            started=time.monotonic(),
            trace=steering.new_trace(),
        )
    except Exception as exc:  # a bug of ours: nothing may stay held
        log.error("busy.steer_not_continued", exc_info=exc)
        with contextlib.suppress(Exception):
            await gateway.line.leave(session_id, waiter.member)
        try:
            await first.driver.aclose(abort=True)
        finally:
            await first.seat.free()
        return
    gateway.metrics.busy.labels("steered").inc()
    try:
        await gateway.line.join(session_id, waiter.member)
    except StoreUnavailable:  # (it cannot be told it joined: it is told it lost its place)
        await gateway.line.leave(session_id, waiter.member)
    watch(gateway, run, admission.request, steering.forward, steering.new_trace)
    if gateway.draining:  # (begun after the drain's look at the runs)
        run.shutdown()
    run.run_detached()  # nobody reads it here: it runs on into the log


def _next_admission(steering: Steering) -> Admission:
    """The next turn's admission: the run's seat, the conversation with the answer that ended
    and the steered message, the run id the message's request gave its answer."""
    from chunkbridge.gateway.turn.opening import Admission  # (opening imports this module)

    assert steering.taken is not None
    found = steering.taken[1]
    gateway, first = steering.gateway, steering.run
    message = first.driver.turn.assembler.message if first.driver.turn.assembler else None
    messages = list(steering.request.messages)
    if message is not None:
        messages.append(UIMessage.model_validate(dict(message)))
    messages.append(UIMessage.model_validate(found.user))
    update = {"messages": messages, "messageId": None, "trigger": "submit-message"}
    request = steering.request.model_copy(update=update)
    turn_input = TurnInput(
        request, first.key[0], found.run_id, gateway.dialect_settings, gateway.history
    )
    transcripts = gateway.stores.transcripts if request.id else None
    return Admission(
        first.seat, request, turn_input, found.run_id, transcripts, None, True, (), (), None
    )


async def follow(
    resume: ResumeStore | None, key: Key, message_id: str
) -> AsyncIterator[bytes] | None:
    """The answer ``message_id`` of the chat ``key`` from its chunk log, followed to its end;
    ``None`` when it is not found there within :data:`FIND_ANSWER` seconds."""
    if resume is None:
        return None
    needle = f'"messageId":"{message_id}"'.encode()
    deadline = time.monotonic() + FIND_ANSWER
    while time.monotonic() < deadline:
        bodies = await resume.reader(key)
        if bodies is not None:
            first = await _first_content(bodies)
            if first is not None and needle in first:
                return _chain(first, bodies)
            with contextlib.suppress(Exception):
                await bodies.aclose()  # type: ignore[attr-defined]
        await asyncio.sleep(0.05)
    return None


async def _first_content(bodies: AsyncIterator[bytes]) -> bytes | None:
    """The log's first body that is not a comment (its ``start``)."""
    async for body in bodies:
        if body[:1] != b":":
            return body
    return None


async def _chain(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    yield first
    async for body in rest:
        yield body
