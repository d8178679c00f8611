"""The agent loop's shell: a turn driver that runs the gateway's tools between model calls.

:class:`AgentDriver` is a :class:`~chunkbridge.gateway.turn.driver.TurnDriver` whose turn is
step-wise (``TurnOptions.gateway_tools``). The decisions are the sans-I/O
:class:`~chunkbridge.translators.core.agent_loop.AgentLoop`'s; this class only carries them out:

* a tool call the model completed is dispatched before the bytes that announce it are written
  (a task per call, at most ``tool_concurrency`` running at once), so a tool starts while the
  model is still streaming the rest of its step;
* when the model's step ended, each result is written as it arrives (``tool-output-available``
  or ``tool-output-error`` on the call's part; keep-alives while tools run), then the loop says
  whether the model is called again — with the message so far (the turn's assembler, fed each
  chunk as it was made), as the continuation of the conversation the dialect builds its
  request from — or how the turn ends;
* where the turn is (:class:`~chunkbridge.translators.core.agent_loop.LoopPhase`) is the
  loop's: a run cut short (its client gone, the turn going on detached) is run again and picks
  up in its phase — a call started is not started again, a step's ending not decided twice;
* a running call's progress (MCP ``notifications/progress``) is shown as a preliminary output
  of its part (``tool-output-available`` with ``preliminary: true``, the output the report
  ``{progress, total?, message?}``), which its result replaces: the newest report of each call,
  at most every ``PROGRESS_INTERVAL`` seconds while tools run, or with the model's next bytes;
* a call whose server asks the user (an MCP elicitation; ``protocol_specs/elicitation.py``)
  becomes a question: a preliminary output on its part and an ``ask_user`` call signed with
  ``question_secret``; the turn ends after the step for the app to answer;
* a continuation that released gateway calls — approved them, or answered their questions —
  runs them first (again, with the answer), then calls the model;
* Stop (or a timeout, or the client going away) cancels the running calls: the MCP client sends
  the server ``notifications/cancelled``, and the guard settles their parts as interrupted;
* each call carries an idempotency key, ``<run>:<step>:<call id>``, the same when another
  instance runs it again (a durable turn: :mod:`~chunkbridge.gateway.turn.durable`, whose
  driver records the loop at its boundaries through this one's hooks).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from chunkbridge.gateway.errors import GatewayError
from chunkbridge.gateway.telemetry import NO_TRACE, NoTrace, TurnTrace
from chunkbridge.gateway.tools import Progress, SampleReport, ToolAnswer
from chunkbridge.gateway.transports.base import Upstream, UpstreamEnded
from chunkbridge.gateway.turn.driver import DriverSettings, Totals, TurnDriver, Write
from chunkbridge.kit import RequestRejected
from chunkbridge.translators.core.agent_loop import AgentLoop, LoopPhase, preliminary, sum_usage
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.event_translator import Chunk, EventTranslator
from chunkbridge.translators.core.sse_codec import KEEPALIVE_FRAME, encode_chunks
from chunkbridge.translators.core.steps import ReadyCall
from chunkbridge.translators.core.turn import Turn

__all__ = ["PROGRESS_INTERVAL", "AgentDriver", "LoopParts", "NotOpened", "ToolRunner"]

#: Seconds between two writes of progress reports while tools run (a server may report often;
#: only each call's newest report is shown).
PROGRESS_INTERVAL = 0.1


class ToolRunner(Protocol):
    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        answer: ToolAnswer | None = None,
        sampled: SampleReport | None = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """A :class:`~chunkbridge.gateway.tools.ToolOutcome`; never raises (but cancellation).
        The call's progress reports go to ``progress``, what its server sampled for it to
        ``sampled``; ``answer``: the user's answer to the question the call asked before;
        ``idempotency_key``: the same on every run of the call (a server may deduplicate)."""


@dataclass(frozen=True, slots=True)
class LoopParts:
    """What one loop turn needs besides its first upstream."""

    loop: AgentLoop
    tools: ToolRunner
    #: ``open_step(message)``: the next model call, given the assistant message so far.
    open_step: Callable[[dict[str, Any]], Awaitable[Upstream]]
    #: A fresh translator for the next model call's stream.
    translator: Callable[[], EventTranslator]
    #: A continuation that answered approvals of gateway tools or their questions: the calls
    #: approved or answered (released), which run before the first model call (the denied ones are
    #: reported first); ``None``: no answers.
    released: Sequence[ReadyCall] | None = None
    concurrency: int = 8
    #: The turn's trace: a span per model call and per tool call.
    trace: TurnTrace | NoTrace = NO_TRACE
    #: Whether a call of a tool may run again after a takeover (its replay policy).
    replays: Callable[[str], bool] = lambda name: False
    #: The turn's run id (the first part of each call's idempotency key).
    run_id: str = ""
    #: ``busy = steer``: at a step boundary, the id of the user message that steers the turn
    #: (it ends there and the loop goes on in the answer to it), or ``None``.
    steer: Callable[[], Awaitable[str | None]] | None = None


class NotOpened:
    """The upstream of a turn that runs released calls before its first model call."""

    async def recv(self) -> str | bytes | None:
        raise UpstreamEnded

    def buffered(self) -> bool:
        return True

    def wake(self) -> None:
        pass

    async def gather(self, seconds: float) -> None:
        pass

    async def aclose(self, *, abort: bool = False) -> None:
        pass


class AgentDriver(TurnDriver):
    """Drives a step-wise turn through the agent loop (see the module)."""

    def __init__(
        self,
        upstream: Upstream,
        turn: Turn,
        settings: DriverSettings,
        parts: LoopParts,
        *,
        started: float | None = None,
        counters: Totals | None = None,
    ) -> None:
        super().__init__(upstream, turn, settings, started=started, counters=counters)
        assert turn.step_join is not None, "an agent turn is step-wise"
        self.join = turn.step_join
        self.parts = parts
        self.loop = parts.loop
        self._limit = asyncio.Semaphore(parts.concurrency)
        #: Running calls by tool call id (each task's result: the call and its outcome).
        self._running: dict[str, asyncio.Task[tuple[ReadyCall, Any]]] = {}
        self._stopped = asyncio.Event()
        #: Each running call's newest progress report not written yet, and when to write next.
        self._progress: dict[str, dict[str, Any]] = {}
        self._progressed = asyncio.Event()
        self._progress_due = 0.0
        #: A continuation's released calls, until they are started (then ``None``).
        self._released = None if parts.released is None else list(parts.released)

    def stop(self, request: CloseRequest) -> None:
        super().stop(request)
        self._stopped.set()

    def _unrecorded_model_end(self) -> CloseRequest | None:
        return None  # each model call's end is recorded as its step ends

    async def aclose(self, *, abort: bool = False) -> None:
        self._cancel_calls()  # the client went away: the servers stop their work too
        await super().aclose(abort=abort)

    async def run(self, write: Write) -> None:
        try:
            phase = self.loop.phase
            if phase is LoopPhase.RELEASED:
                await self._run_released(write)
            elif phase is LoopPhase.RESULTS:
                await self._next_step(write)
            elif phase is LoopPhase.CALLING:
                await self._open_model(write)
            if not self.turn.done:
                await super().run(write)  # the step streams: LoopPhase.STREAMING
        finally:
            if self.turn.done:
                self.loop.turn_ended()
                self._cancel_calls()
        await self._after_run()

    # -- dispatch: a completed call starts before its bytes are written ------------------------

    async def _write(self, write: Write, body: bytes) -> None:
        if self.join.ready and self.dispatch_early:
            body += encode_chunks(self.turn.emit(self._dispatch(self.join.take_ready())))
        if self._progress and not self.turn.done:
            body += encode_chunks(self.turn.emit(self._reported()))
        await super()._write(write, body)

    def _dispatch(self, calls: list[ReadyCall]) -> list[Chunk]:
        run, out = self.loop.dispatch(calls)
        for call in run:
            self._start(call)
        return out

    # -- what a durable turn does at the loop's boundaries (:mod:`.durable`) ------------------

    #: A completed call starts before its bytes are written (else: when its step ended).
    dispatch_early = True

    async def _before_results(self, write: Write) -> bool:
        """The model's step ended: before its calls' results are waited for; ``False``: the
        turn ends here."""
        return True

    async def _before_model(self) -> bool:
        """Before the next model call; ``False``: the turn ends here."""
        return True

    async def _after_run(self) -> None:
        """The run is over (the turn ended, or its client went away)."""

    def _open_step(self, message: dict[str, Any]) -> Awaitable[Upstream]:
        """The next model call, given the assistant message so far."""
        return self.parts.open_step(message)

    def _step_translator(self) -> EventTranslator:
        """What reads the next model call's stream."""
        return self.parts.translator()

    def _key(self, call_id: str) -> str:
        """A call's idempotency key: the same on every run of it, on any instance."""
        return f"{self.parts.run_id}:{self.loop.step}:{call_id}"

    def _start(self, call: ReadyCall) -> None:
        self._running[call.call_id] = asyncio.create_task(self._call(call))

    async def _call(self, call: ReadyCall) -> tuple[ReadyCall, Any]:
        call_id = call.call_id

        def progress(report: dict[str, Any]) -> None:
            if call_id in self._running:  # not once its result is in
                self._progress[call_id] = report
                self._progressed.set()

        async with self._limit:
            with self.parts.trace.tool(call.name, call_id) as span:

                def sampled(answer: Any, seconds: float) -> None:
                    """The model answered the call's server (sampling): the turn's usage."""
                    sum_usage(self.loop.usage, answer.usage)
                    self.parts.trace.sampled(span, answer.model, answer.usage, seconds)

                outcome = await self.parts.tools.call(
                    call.name,
                    _arguments(call),
                    progress,
                    call.answer,
                    sampled,
                    idempotency_key=self._key(call_id),
                )
                if span is not None and outcome.error is not None:
                    span.set_attribute("error.type", "tool_error")
        return call, outcome

    def _reported(self) -> list[Chunk]:
        """The progress reports not written yet, as preliminary outputs."""
        reports, self._progress = self._progress, {}
        self._progress_due = self.clock() + PROGRESS_INTERVAL
        return [preliminary(call_id, report) for call_id, report in reports.items()]

    # -- between model calls -------------------------------------------------------------------

    async def _next_step(self, write: Write) -> None:
        self.loop.model_finished()
        if not await self._before_results(write):
            return
        if not await self._results(write):
            return  # stopped: the run loop writes the ending
        ended = self.join.ended
        assert ended is not None
        self.parts.trace.upstream_ended(ended.message_metadata, ended.finish_reason)
        ending = self.loop.step_ended(ended)
        if ending is None and self.parts.steer is not None:
            by = await self.parts.steer()
            if by is not None:  # the model is called again, with the new message after these
                ending = self.loop.steered(by, ended)
        if ending is not None:
            await self._write(write, encode_chunks(self.turn.close(ending)))
            return
        await self._write(write, encode_chunks(self.turn.emit([{"type": "finish-step"}])))
        if await self._before_model():
            await self._open_model(write)

    async def _run_released(self, write: Write) -> None:
        """A continuation's answered approvals: the denials and the approved calls' results (in
        the step the model's answer goes on in), then the first model call."""
        if self._released is not None:  # started once, before their step is written
            calls, self._released = self._released, None
            for call in calls:
                self._start(call)
            await self._write(write, encode_chunks(self.turn.emit([{"type": "start-step"}])))
        if not await self._before_results(write):
            return
        if not await self._results(write):
            return  # stopped: the run loop writes the ending
        ending = self.loop.released_ran()
        if ending is not None:
            await self._write(write, encode_chunks(self.turn.close(ending)))  # asked again
            return
        if await self._before_model():
            await self._open_model(write)

    async def _open_model(self, write: Write) -> None:
        """Call the model with the message so far; its stream is the next step."""
        previous = self.upstream
        message = self._message()
        try:
            upstream = await self._unless_stopped(self._open_step(message))
            if upstream is None:
                return  # stopped while the model was called: the run loop writes the ending
        except GatewayError as exc:
            await self._write(write, self._failed(exc))
            return
        except RequestRejected as exc:
            request = CloseRequest(CloseReason.UPSTREAM_ERROR, exc.client_message)
            await self._write(write, encode_chunks(self.turn.close(request)))
            return
        await previous.aclose()
        self.upstream = upstream
        self.join.next_step(self._step_translator())
        self.loop.model_called()
        self.deadlines.event(self.clock())  # the tools' time is not the model's silence

    async def _unless_stopped(self, opening: Awaitable[Upstream]) -> Upstream | None:
        """``opening``'s upstream, or ``None`` when the turn is stopped first (a Stop, a new
        message that interrupts it): a model slow to answer does not hold the turn's end."""
        opened = asyncio.ensure_future(opening)
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({opened, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if self._stopped.is_set() or not opened.done():
            opened.cancel()
            await asyncio.wait({opened})
            if not opened.cancelled() and opened.exception() is None:
                await opened.result().aclose(abort=True)  # (it opened just then: let it go)
            return None
        return opened.result()

    async def _results(self, write: Write) -> bool:
        """Write each running call's result as it arrives, and their progress; ``False`` when
        stopped first."""
        keepalive = self.settings.keepalive_interval
        while self._running:
            if self.stop_request is not None:
                return False
            self._progressed.clear()
            waits = [asyncio.ensure_future(self._stopped.wait())]
            timeout = keepalive
            if self._progress:  # a report waits for its interval
                timeout = min(timeout, max(0.0, self._progress_due - self.clock()))
            else:
                waits.append(asyncio.ensure_future(self._progressed.wait()))
            try:
                done, _ = await asyncio.wait(
                    [*self._running.values(), *waits],
                    timeout=None if timeout == float("inf") else timeout,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                for wait in waits:
                    wait.cancel()
            chunks: list[Chunk] = []
            asking: list[str] = []
            for call_id, task in list(self._running.items()):
                if task in done:
                    del self._running[call_id]
                    self._progress.pop(call_id, None)
                    call, outcome = task.result()
                    chunks.append(self.loop.result(call, outcome))
                    if outcome.asks is not None:
                        asking.append(call_id)
            if self._progress and self.clock() >= self._progress_due:
                chunks += self._reported()
            if chunks:
                out = self.turn.emit(chunks)
                for call_id in asking:
                    self.turn.waits_on_app(call_id)
                await self._write(write, encode_chunks(out))
            elif not done and not self._progress:
                await write(KEEPALIVE_FRAME)
                self.deadlines.wrote(self.clock())
        if self.stop_request is not None:
            return False
        questions = self.loop.questions()
        if questions:
            await self._write(write, encode_chunks(self.turn.emit(questions)))
        return True

    def _message(self) -> dict[str, Any]:
        assembler = self.turn.assembler
        assert assembler is not None, "an agent turn assembles its message"
        message = assembler.message
        return message if message is not None else {"role": "assistant", "parts": []}

    def _cancel_calls(self) -> None:
        for task in self._running.values():
            task.cancel()
        self._running.clear()
        self._progress.clear()


def _arguments(call: ReadyCall) -> dict[str, Any]:
    return call.input if isinstance(call.input, dict) else {}
