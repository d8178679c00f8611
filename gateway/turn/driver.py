"""The turn driver: the one loop that moves a turn from its upstream to its output.

``chunkbridge serve`` (through :class:`chunkbridge.gateway.turn.run.TurnRun`), ``replay``,
the golden files, ``record`` and the tests all run turns with :meth:`TurnDriver.run`: receive
a frame, run it — and every further frame the upstream transport already holds — through the
turn's fused hot path
(:meth:`chunkbridge.translators.core.turn.Turn.encode_frame`), write the result in one ``write``.

Bursts are written at most once per ``flush_interval`` (1 ms by default): a frame that arrives
sooner after a write, alone, waits for the rest of the interval while the upstream is not read
(``Upstream.gather``), then everything that arrived is read, translated and written at once. A
model streaming tokens tens of milliseconds apart never waits; an upstream sending as fast as it
can costs one read and one write per interval instead of a wake-up per TCP segment; and when
frames are already waiting (the upstream is ahead), they are taken at once, up to
:data:`MAX_BATCH` per write, without waiting.

Backpressure needs no buffer of ours: the loop receives the next frame only after ``await write``
returned, which under uvicorn means the transport can take more. Meanwhile frames pile up in the
upstream transport, which stops reading above its high-water mark: the upstream is slowed down
instead of the gateway buffering the turn.

Silence is watched by one timer per turn over a sans-I/O
:class:`~chunkbridge.translators.core.deadlines. Deadlines`: armed when the loop starts waiting, it
wakes the waiting ``recv`` (which then returns ``None``) when a keep-alive or a timeout is due.
Every way a turn can end — the upstream's own ending, the connection lost, a timeout,
:meth:`TurnDriver.stop` — produces the turn's closing chunks; nothing escapes as an exception but
cancellation.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from chunkbridge.gateway.errors import GatewayError, UpstreamTimeout
from chunkbridge.gateway.transports.base import Upstream, UpstreamEnded
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.deadlines import Deadlines, Due
from chunkbridge.translators.core.sse_codec import KEEPALIVE_FRAME, encode_chunks
from chunkbridge.translators.core.turn import Turn

__all__ = ["Counters", "DriverSettings", "Totals", "TurnDriver", "TurnOutcome", "Write"]

#: Frames coalesced into one write at most (bounds one write's size and latency).
MAX_BATCH = 128
#: Timers may fire this much early (the event loop's clock resolution).
_SLACK = 0.001

Write = Callable[[bytes], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class DriverSettings:
    first_event_timeout: float
    idle_timeout: float
    total_timeout: float
    keepalive_interval: float
    #: Seconds between two writes of upstream data at least (see the module docstring).
    flush_interval: float
    #: Silence after the agent asked the user (a deferred close) that ends the turn: the agent
    #: waits for the answer. Any content before it means the agent went on.
    question_settle: float = 0.5


#: Settings for recorded sessions: nothing is held back, nothing times out.
REPLAY_SETTINGS = DriverSettings(
    first_event_timeout=float("inf"),
    idle_timeout=float("inf"),
    total_timeout=float("inf"),
    keepalive_interval=float("inf"),
    flush_interval=0,
    # a recording has no clock: an ask that ends the turn is followed by the end of the file
    question_settle=float("inf"),
)


class Totals(Protocol):
    """Running totals a driver adds to as it goes (the gateway's metrics are one)."""

    upstream_events: int
    chunks_out: int


@dataclass(slots=True)
class Counters:
    """:class:`Totals` of one driver on its own (replay, record, tests)."""

    upstream_events: int = 0
    chunks_out: int = 0


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn went, as its owner reads it (the session's release, the log line, metrics,
    the trace): one object, whichever driver ran the turn."""

    close_reason: CloseReason | None
    #: The turn's counts for the log line (:meth:`Turn.report`).
    report: dict[str, Any]
    #: The driver ended the turn itself (a stop, a timeout, the client gone).
    abandoned: bool
    timeout: Due | None
    upstream_error: GatewayError | None
    internal_error: Exception | None
    #: The questions the turn asked and left for the app to answer.
    open_questions: list[str]
    first_event_at: float | None
    first_write_at: float | None
    chunks: int
    bytes: int
    #: The end of the model call whose end no one recorded yet (the trace's last span).
    model_end: CloseRequest | None
    #: Another instance took the turn over, or will (it was handed over): its end is not this
    #: run's to record.
    elsewhere: bool = False

    @property
    def must_abort(self) -> bool:
        """The upstream must hear the abort frame: the gateway ended the turn itself, or our
        own bug did."""
        return self.abandoned or self.internal_error is not None


class TurnDriver:
    """Drives one :class:`Turn` from one :class:`Upstream`. See the module docstring."""

    def __init__(
        self,
        upstream: Upstream,
        turn: Turn,
        settings: DriverSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        started: float | None = None,
        counters: Totals | None = None,
    ) -> None:
        self.upstream = upstream
        self.turn = turn
        self.settings = settings
        self.clock = clock
        self.counters: Totals = counters if counters is not None else Counters()
        self.deadlines = Deadlines(
            clock(),
            first_event=settings.first_event_timeout,
            idle=settings.idle_timeout,
            total=settings.total_timeout,
            keepalive=settings.keepalive_interval,
            started=started,
        )
        #: Set by :meth:`stop`: the loop ends the turn with it at once.
        self.stop_request: CloseRequest | None = None
        #: The driver ended the turn itself (a stop or a timeout): the upstream may still be
        #: working on it.
        self.abandoned = False
        #: Which timeout ended the turn, if one did.
        self.timeout: Due | None = None
        #: The upstream ended after a completed model step that did not end the turn.
        self.step_over = False
        #: The upstream failure that ended the turn, if one did (for the log and metrics).
        self.upstream_error: GatewayError | None = None
        self.bytes_out = 0
        self.events_out = 0
        self.first_write_at: float | None = None
        self._flushed_at = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        #: The deadlines watch the settle window of the turn's pending ask.
        self._settling = False
        #: The loop is waiting in ``upstream.recv()`` (the only wait the timer may interrupt).
        self._waiting = False
        #: Another instance took the turn over (a durable turn): nothing more is written.
        self.lost = False
        #: A durable turn ended here to go on elsewhere (its instance stops): not its end.
        self.handed_over = False

    @property
    def done(self) -> bool:
        return self.turn.done

    def outcome(self) -> TurnOutcome:
        turn = self.turn
        return TurnOutcome(
            close_reason=turn.close_reason,
            report=turn.report(),
            abandoned=self.abandoned,
            timeout=self.timeout,
            upstream_error=self.upstream_error,
            internal_error=turn.internal_error,
            open_questions=turn.open_questions if turn.done else [],
            first_event_at=self.deadlines.first_event_at,
            first_write_at=self.first_write_at,
            chunks=self.events_out,
            bytes=self.bytes_out,
            model_end=self._unrecorded_model_end(),
            elsewhere=self.lost or self.handed_over,
        )

    def _unrecorded_model_end(self) -> CloseRequest | None:
        """A plain turn's one model call ends with the turn (a step-wise driver records each)."""
        return self.turn.closed_by

    def stop(self, request: CloseRequest) -> None:
        """End the turn from outside (a shutdown): the loop writes the closing chunks now."""
        self.stop_request = request
        self.upstream.wake()

    def hand_over(self) -> bool:
        """The instance stops: leave the turn to another instance, if it can go on elsewhere
        (a durable turn, at its next checkpoint); ``False``: it cannot (then it is stopped)."""
        return False

    def lose(self) -> None:
        """Another instance took the turn over: it ends now, and writes nothing more — its
        closing chunks included (they would be the other instance's stream)."""
        self.lost = True
        self.stop(CloseRequest(CloseReason.ABORTED))

    def abandon(self, request: CloseRequest) -> None:
        """The turn ends with nobody to write to (its client went away): closed as ``request``
        says, without writing, and the upstream must hear the abort."""
        self.turn.close(request)
        self.abandoned = True

    def wrote_outside(self, body: bytes) -> None:
        """The entrance wrote ``body`` itself (the ``[DONE]`` line): counted as the turn's."""
        self.bytes_out += len(body)
        self.counters.chunks_out += body.count(b"\n\n")

    async def aclose(self, *, abort: bool = False) -> None:
        """Release what the turn holds upstream (with ``abort``: tell it to stop first)."""
        await self.upstream.aclose(abort=abort)

    async def run(self, write: Write) -> None:
        """Until the turn is done. May be called again after a cancellation (a detached turn
        goes on with another writer)."""
        turn, upstream = self.turn, self.upstream
        encode_frame = turn.encode_frame
        try:
            while not turn.done:
                if self.step_over:  # a step-wise turn's model finished a step: what now
                    self.step_over = False  # (checked first: a run cut short resumes here)
                    await self._next_step(write)
                    upstream = self.upstream
                    continue
                if self.stop_request is not None:
                    self.abandoned = True
                    await self._write(write, encode_chunks(turn.close(self.stop_request)))
                    break
                # Receiving and translating are inline, not in a helper coroutine: this loop
                # turns once per upstream event of every open stream.
                try:
                    if upstream.buffered():
                        frame = await upstream.recv()
                    else:
                        if turn.deferred_close is not None and not self._settling:
                            self._watch_settle()
                        if self._timer is None:
                            self._arm()
                        self._waiting = True
                        try:
                            frame = await upstream.recv()
                        finally:
                            self._waiting = False
                except UpstreamEnded:
                    body = encode_chunks(turn.upstream_ended())
                    self.step_over = not turn.done
                except GatewayError as exc:
                    body = self._failed(exc)
                else:
                    if frame is None:
                        body = await self._on_wake(write)
                    else:
                        now = self.clock()
                        self.deadlines.event(now)
                        body = encode_frame(frame)
                        if not turn.done and (
                            upstream.buffered()
                            or now < self._flushed_at + self.settings.flush_interval
                        ):
                            body = await self._rest_of_burst(body, now)
                        else:
                            self.counters.upstream_events += 1
                await self._write(write, body)
        finally:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    async def _rest_of_burst(self, first: bytes, now: float) -> bytes:
        """The frames that follow ``first`` (already translated) in one burst, translated."""
        upstream, turn = self.upstream, self.turn
        parts = [first]
        frames = 1
        try:
            hold = self._flushed_at + self.settings.flush_interval - now
            if hold > 0 and not upstream.buffered():
                # A burst: the previous write was moments ago; let the rest of it arrive and
                # write it together. Not when frames are already waiting: then the upstream is
                # ahead of us (a backlog), and holding would cap the stream at MAX_BATCH frames
                # per interval.
                await upstream.gather(hold)
            while frames < MAX_BATCH and not turn.done and upstream.buffered():
                frame = await upstream.recv()
                if frame is None:
                    break
                parts.append(turn.encode_frame(frame))
                frames += 1
        except UpstreamEnded:
            parts.append(encode_chunks(turn.upstream_ended()))
            self.step_over = not turn.done
        except GatewayError as exc:
            parts.append(self._failed(exc))
        self.counters.upstream_events += frames
        return b"".join(parts)

    async def _next_step(self, write: Write) -> None:
        """The upstream ended after a completed step of a step-wise turn (the agent loop,
        :class:`chunkbridge.gateway.turn.agent.AgentDriver`). A plain turn has one step."""
        ending = self.turn.close(CloseRequest(CloseReason.COMPLETED))
        await self._write(write, encode_chunks(ending))

    def _failed(self, exc: GatewayError) -> bytes:
        self.upstream_error = exc
        if isinstance(exc, UpstreamTimeout):
            self.timeout = Due.IDLE_TIMEOUT
            return encode_chunks(
                self.turn.close(CloseRequest(CloseReason.TIMEOUT, exc.client_message))
            )
        return encode_chunks(self.turn.upstream_ended(exc.client_message))

    async def _on_wake(self, write: Write) -> bytes:
        """The timer (or :meth:`stop`) woke the wait: a keep-alive, a timeout, or nothing."""
        if self.stop_request is not None:
            return b""  # the loop ends the turn next
        now = self.clock()
        due = self.deadlines.due(now + _SLACK)
        if due is None:
            return b""
        if due is Due.KEEPALIVE:
            await write(KEEPALIVE_FRAME)
            self.deadlines.wrote(self.clock())
            return b""
        if due is Due.SETTLE:  # the agent asked and fell silent: it waits (no abort frame)
            self.deadlines.settle(None)
            self._settling = False
            return encode_chunks(self.turn.settle())
        self.timeout = due
        self.abandoned = True
        return encode_chunks(self.turn.close(CloseRequest(CloseReason.TIMEOUT)))

    async def _write(self, write: Write, body: bytes) -> None:
        if not body or self.lost or self.handed_over:
            return
        events = body.count(b"\n\n")
        self.events_out += events
        self.bytes_out += len(body)
        self.counters.chunks_out += events
        await write(body)
        self._flushed_at = now = self.clock()
        self.deadlines.wrote(now)
        if self.first_write_at is None:
            self.first_write_at = now

    # -- silence: one timer per turn -----------------------------------------------------------

    def _watch_settle(self) -> None:
        """The turn has a pending ask: watch its settle window (re-arming the timer, which may
        be set for a later keep-alive)."""
        self._settling = True
        self.deadlines.settle(self.settings.question_settle)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        delay = self.deadlines.next_check() - self.clock()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(max(delay, 0.0), self._tick)

    def _tick(self) -> None:
        """Timer callback: wake a waiting ``recv`` when something is due, else re-arm. While the
        loop is busy (writing), it re-arms when it next waits."""
        self._timer = None
        if not self._waiting:
            return
        if self.deadlines.due(self.clock() + _SLACK) is not None:
            self.upstream.wake()
        else:  # events arrived since it was armed
            self._arm()
