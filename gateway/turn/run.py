"""One turn from its opening to its end, whatever carries it: the one owner of what it holds.

A :class:`TurnRun` is made by :meth:`chunkbridge.gateway.service.Gateway.open_turn` once the
upstream answered, and delivered by an entrance — the SSE response of the HTTP POST
(:mod:`chunkbridge.gateway.http.sse`) or a request of the WebSocket transport
(:mod:`chunkbridge.gateway.http.chat_socket`) — with the same three calls: :meth:`TurnRun.deliver`
(the driver writes through the entrance's writer until the turn is over or the client is gone),
the entrance's own ending (``[DONE]``, an ``end`` frame), then :meth:`TurnRun.end`. Everything
else happens here: the chunk log of resumable streams (a tee on the writer), stops, detaching,
freeing the session's turn, the upstream's close and the one log line per turn.

The session's turn is freed the moment the turn is over for the client — before its last bytes
go out — so a continuation sent the instant the stream ends (an app's
``sendAutomaticallyWhen``) is never refused with 409; closing the upstream goes on after that
and cannot touch the next turn: no abort frame goes to an upstream whose turn completed. A turn
the gateway abandons (a stop, a timeout, a client gone) frees it only once its abort frame is
written, so that frame cannot reach a next turn's agent first.

A client that goes away with resume on detaches the turn: the upstream runs to its end into the
log, nobody reading. Otherwise ``on_disconnect`` says: ``abort`` (the abort frame goes upstream)
or ``detach``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.stores.base import (
    ApprovalLedger,
    Key,
    ResumeLog,
    ResumeStore,
    Stoppable,
)
from chunkbridge.gateway.stores.local_line import LocalLines
from chunkbridge.gateway.telemetry import NO_TRACE, NoTrace, TurnTrace, trace_comment
from chunkbridge.gateway.turn.answers import issued_question
from chunkbridge.gateway.turn.driver import TurnDriver, TurnOutcome, Write
from chunkbridge.gateway.turn.transcript import TurnTranscript
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.sse_codec import DONE_FRAME

if TYPE_CHECKING:
    from chunkbridge.gateway.turn.steering import Steering

__all__ = ["OpenTurns", "RunServices", "Seat", "TurnRun", "until_first"]

_SHUTDOWN = CloseRequest(CloseReason.SHUTDOWN)
_ABORTED = CloseRequest(CloseReason.ABORTED)


async def until_first(work: Coroutine[Any, Any, None], gone: Awaitable[Any]) -> bool:
    """Run ``work`` until it ends (``True``; its exception is raised) or ``gone`` completes first
    (``False``: ``work`` is cancelled and waited for). The disconnect race of every streamed
    response: under uvicorn, waiting for ``http.disconnect`` is the only way to notice a client
    that went away."""
    task = asyncio.create_task(work)
    listener = asyncio.ensure_future(gone)
    done, _ = await asyncio.wait({task, listener}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        listener.cancel()
        task.result()
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    return False


class OpenTurns:
    """The turns an app runs: a count per session (the limit a new turn checks; with ``resume =
    memory`` also the requests waiting for a turn: :class:`LocalLines`) and the runs themselves
    (what a drain ends)."""

    def __init__(self) -> None:
        self.lines = LocalLines()
        self.runs: set[TurnRun] = set()
        self._ended = asyncio.Event()

    @property
    def sessions(self) -> dict[str, int]:
        return self.lines.sessions

    def hold(self, session_id: str, limit: int) -> None:
        """Raises :class:`~chunkbridge.gateway.errors.TurnInProgress` when none is free."""
        self.lines.hold(session_id, limit)

    def free(self, session_id: str) -> None:
        self.lines.free(session_id)

    def ended(self, run: TurnRun) -> None:
        self.runs.discard(run)
        self._ended.set()

    async def drain(self, grace: float) -> None:
        """End every open turn with a valid ending; wait up to ``grace`` seconds for them."""
        for run in list(self.runs):
            run.shutdown()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                while self.runs:
                    self._ended.clear()
                    await self._ended.wait()


@dataclass(frozen=True, slots=True)
class Seat:
    """The session's turn a run holds — in this process, and across instances with resume on
    (``member`` is its hold there) — from its admission until it is freed, once."""

    key: Key
    turns: OpenTurns
    #: The resume store, when the turn is resumable (resume on and a chat id).
    resume: ResumeStore | None = None
    member: str = ""

    async def free(self) -> None:
        self.turns.free(self.key[0])
        if self.resume is not None:
            await self.resume.release_turn(self.key[0], self.member)


@dataclass(frozen=True, slots=True)
class RunServices:
    """What the runs of one gateway share."""

    approvals: ApprovalLedger
    metrics: Metrics
    #: ``abort`` or ``detach``: what a client going away does (resume on: ``detach``).
    on_disconnect: str


class TurnRun:
    """One opened turn (see the module): its driver, the session's turn it holds, and what it
    writes besides the client's stream (the chunk log, the transcript, the trace)."""

    def __init__(
        self,
        driver: TurnDriver,
        seat: Seat,
        services: RunServices,
        *,
        request_id: str,
        log: Any,
        started: float,
        transcript: TurnTranscript | None = None,
        trace: TurnTrace | NoTrace = NO_TRACE,
        resume_prefix: bytes = b"",
        open_log: Callable[[Stoppable], ResumeLog] | None = None,
    ) -> None:
        """``open_log``: the chunk log this run writes on (a durable turn taken over from
        another instance) instead of a new one."""
        self.driver = driver
        self.seat = seat
        self.key = seat.key
        self.request_id = request_id
        resume = seat.resume
        # with resume on, a client that goes away detaches: the turn runs on into its log
        self.on_disconnect = "detach" if resume is not None else services.on_disconnect
        self.client_disconnected = False
        #: The chunk log refused this run's writes: the turn goes on on another instance.
        self.elsewhere = False
        #: The background task of a detached turn (a strong reference keeps it alive).
        self.detached_task: asyncio.Task[None] | None = None
        self._approvals = services.approvals
        self._metrics = services.metrics
        self._log = log
        self._started = started
        self._held = True
        #: The turn's spans (``telemetry`` on), ended with the turn.
        self.trace = trace
        #: With a store: the turn's record.
        self.transcript = transcript
        #: ``busy = steer`` on an upstream that takes steers: the watch on the session's line;
        #: once a steer landed, the upstream and the seat go on with the next answer.
        self.steering: Steering | None = None
        #: With resume on: every body written also goes here, for readers that (re)join.
        self.chunk_log: ResumeLog | None = (
            open_log(self)
            if open_log is not None
            else resume.begin(self.key, self)
            if resume is not None
            else None
        )
        if self.chunk_log is not None and trace.traceparent:  # what a resume read links to
            self.chunk_log.append(trace_comment(trace))
        if self.chunk_log is not None and resume_prefix:
            self.chunk_log.append(resume_prefix)  # for readers only: the client has it
        seat.turns.runs.add(self)

    # -- delivering ----------------------------------------------------------------------------

    async def deliver(self, write: Write, gone: Awaitable[Any]) -> bool:
        """Run the turn through ``write`` until it is over for the client (``True``: the session
        is free unless the upstream must hear the abort frame first) or ``gone`` completes
        first (``False``: the client went away)."""
        if not await until_first(self.driver.run(self._tee(write)), gone):
            self.client_disconnected = True
            return False
        if self.driver.outcome().elsewhere or not await self._settled():  # it goes on elsewhere
            await self._free()
            return True
        if self.chunk_log is not None:
            self.chunk_log.append(DONE_FRAME)
        if self.transcript is not None:  # before the session is free and the stream ends
            self.transcript.end(self.driver.outcome().close_reason)
            await self.transcript.settled()
        if not self.driver.outcome().must_abort:
            await self._free()
        return True

    def count_done_frame(self) -> None:
        """The entrance wrote the ``[DONE]`` line itself (it is in the turn's byte count)."""
        self.driver.wrote_outside(DONE_FRAME)

    def shutdown(self) -> None:
        """End the turn now (a drain): the client gets a valid ending, the upstream the abort
        frame — unless it goes on on another instance (a durable turn, handed over at its next
        checkpoint)."""
        if not self.driver.hand_over():
            self.driver.stop(_SHUTDOWN)

    def stop(self) -> bool:
        """End the turn as a client abort would (a stop request, the socket's ``abort``
        frame); ``False`` when it had already ended."""
        if self.driver.done:
            return False
        self.trace.event("chunkbridge.stop")
        self.driver.stop(_ABORTED)
        return True

    def interrupt(self, by: str) -> bool:
        """End the turn as :meth:`stop` does, for the new user message ``by`` (``busy =
        interrupt``: its ``finish`` says ``interruptedBy``); ``False`` when it had already
        ended or is being stopped."""
        driver = self.driver
        if driver.done or driver.stop_request is not None:
            return False
        self.trace.event("chunkbridge.interrupt")
        metadata = {"interruptedBy": by}
        driver.stop(CloseRequest(CloseReason.ABORTED, message_metadata=metadata))
        return True

    async def _settled(self) -> bool:
        """The chunk log holds what this run wrote — ``False`` when it refused it: another
        instance holds the turn (a durable turn taken over while this one was paused) and
        records its end."""
        if self.chunk_log is not None and not await self.chunk_log.settled():
            self.elsewhere = True
        return not self.elsewhere

    def lost(self) -> None:
        """Another instance took the turn over: it ends here, unheard."""
        self.driver.lose()

    def _tee(self, write: Write) -> Write:
        """``write`` that also puts what it writes into the chunk log, if there is one (a list
        append: nothing is parsed here)."""
        if self.chunk_log is None:
            return write
        log = self.chunk_log.append

        def logged(body: bytes) -> Awaitable[None]:
            if body[:1] != b":":  # keep-alive comments are not content
                log(body)
            return write(body)

        return logged

    # -- ending --------------------------------------------------------------------------------

    async def end(self) -> None:
        """After the delivery: detach (the client is gone and the turn goes on), or close the
        upstream; then free the session and write the log line."""
        driver = self.driver
        gone = self.client_disconnected and not driver.done
        if gone and self.on_disconnect == "detach":
            self.detached_task = asyncio.create_task(self._run_detached())
            return
        if gone:
            driver.abandon(_ABORTED)
        if await self._went_on():
            return
        try:
            await driver.aclose(abort=driver.outcome().must_abort)
        finally:
            await self._free()
            self._ended()

    async def _went_on(self) -> bool:
        """A steer landed (:mod:`~chunkbridge.gateway.turn.steering`): this answer ended, and
        its upstream and seat go on with the next one (``True``)."""
        steering = self.steering
        if steering is None or not steering.landed:
            return False
        from chunkbridge.gateway.turn.steering import go_on  # (steering imports this module)

        await self._free()
        self._ended()
        await go_on(steering, self._log)
        return True

    def run_detached(self) -> None:
        """Run the turn with nobody reading it here, into its chunk log (a steered answer: its
        request follows the log, from whichever instance it reached)."""
        self.detached_task = asyncio.create_task(self._run_detached())

    async def _run_detached(self) -> None:
        driver = self.driver
        try:
            await driver.run(self._tee(_discard))  # nobody reads: into the log only
            if self.chunk_log is not None and not driver.outcome().elsewhere:
                if await self._settled():
                    self.chunk_log.append(DONE_FRAME)
            if self.transcript is not None and not (driver.outcome().elsewhere or self.elsewhere):
                # before the session is free: a request waiting for it reads the answer
                self.transcript.end(driver.outcome().close_reason)
                await self.transcript.settled()
        finally:
            if not await self._went_on():
                await driver.aclose(abort=driver.outcome().abandoned)
                await self._free()
                self._ended()

    async def _free(self) -> None:
        """Free the session's turn (once); the questions the agent waits on become answerable
        first (once each)."""
        if not self._held:
            return
        self._held = False
        if self.steering is not None and self.steering.landed:
            return  # the seat goes on with the next answer, which frees it
        outcome = self.driver.outcome()
        if not outcome.abandoned and outcome.close_reason is CloseReason.COMPLETED:
            for question_id in outcome.open_questions:
                self._approvals.issue(self.key[0], issued_question(question_id))
        with contextlib.suppress(Exception):  # (a failed write is logged by the ledger)
            await self._approvals.written()  # answerable anywhere once the client hears the end
        await self.seat.free()
        if self.steering is not None:  # (after the seat: the message it took runs next)
            await self.steering.unclaim()

    def _ended(self) -> None:
        if self.steering is not None:
            self.steering.stop()
        outcome = self.driver.outcome()
        if outcome.elsewhere or self.elsewhere:  # its end is the other instance's to record
            if self.chunk_log is not None:
                self.chunk_log.leave()
        else:
            if self.transcript is not None:  # an abort, a detached turn's end (once)
                self.transcript.end(outcome.close_reason)
            if self.chunk_log is not None:
                self.chunk_log.finish()
        self.seat.turns.ended(self)
        self._log_end(outcome)

    def _log_end(self, outcome: TurnOutcome) -> None:
        """The turn's metrics and its one ``stream.end`` line."""
        metrics, report = self._metrics, outcome.report
        duration = time.monotonic() - self._started
        metrics.active_streams.dec()
        metrics.stream_duration.observe(duration)
        metrics.stream_outcomes.labels(report["close_reason"]).inc()
        metrics.unknown_events.inc(report["unknown_events"])
        error = None
        if outcome.upstream_error is not None:
            metrics.upstream_errors.labels(type(outcome.upstream_error).__name__).inc()
            error = str(outcome.upstream_error)
        if outcome.internal_error is not None:
            metrics.internal_errors.inc()
            error = f"{type(outcome.internal_error).__name__}: {outcome.internal_error}"[:500]
            self._log.error("turn.internal_error", exc_info=outcome.internal_error)
        if outcome.first_write_at is not None:
            metrics.time_to_first_chunk.observe(outcome.first_write_at - self._started)
        self._end_trace(outcome, error)
        self._log.info(
            "stream.end",
            status=200,
            close_reason=report["close_reason"],
            finish_reason=report["finish_reason"],
            timeout=outcome.timeout.value if outcome.timeout is not None else None,
            duration_ms=round(duration * 1000, 1),
            upstream_events=report["upstream_events"],
            chunks=outcome.chunks,
            bytes=outcome.bytes,
            unknown_events=report["unknown_events"],
            malformed_events=report["malformed_events"],
            guard_repairs=report["guard_repairs"],
            conversions=report["conversions"],
            approvals_requested=report["approvals_requested"],
            client_disconnected=self.client_disconnected,
            error=error,
        )

    def _end_trace(self, outcome: TurnOutcome, error: str | None) -> None:
        trace, started = self.trace, self._started
        if trace is NO_TRACE:
            return
        if outcome.model_end is not None:  # the last model call ended with the turn
            trace.upstream_ended(
                outcome.model_end.message_metadata, outcome.report["finish_reason"]
            )
        first_event, first_write = outcome.first_event_at, outcome.first_write_at
        trace.end(
            {
                **outcome.report,
                "chunks": outcome.chunks,
                "client_disconnected": self.client_disconnected,
            },
            None if first_event is None else first_event - started,
            None if first_write is None else first_write - started,
            error,
        )


async def _discard(body: bytes) -> None:
    pass
