"""Durable loop turns, the owner's side (``durable = true``): the agent loop of a turn that
records itself at the loop's boundaries (:mod:`~chunkbridge.gateway.turn.checkpointer`) and that
another instance can take over (:mod:`~chunkbridge.gateway.turn.takeover`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from chunkbridge.gateway.transports.base import Upstream
from chunkbridge.gateway.turn.agent import AgentDriver, LoopParts
from chunkbridge.gateway.turn.checkpointer import Checkpointer, Fenced
from chunkbridge.gateway.turn.driver import DriverSettings, Totals, Write
from chunkbridge.translators.core.agent_loop import LoopPhase
from chunkbridge.translators.core.checkpoint import Intent, Stage
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.event_translator import Chunk, EventTranslator
from chunkbridge.translators.core.redo import StepRedo, withdrawable
from chunkbridge.translators.core.sse_codec import encode_chunks
from chunkbridge.translators.core.steps import ReadyCall
from chunkbridge.translators.core.turn import Turn

__all__ = ["DurableDriver"]


class DurableDriver(AgentDriver):
    """The agent loop of a durable turn: it records itself at the loop's boundaries (see the
    module). Its calls are sent when their step ended and is recorded (one record per step,
    not per call); a takeover starts it where the checkpoint says
    (:mod:`~chunkbridge.gateway.turn.takeover`)."""

    dispatch_early = False

    def __init__(
        self,
        upstream: Upstream,
        turn: Turn,
        settings: DriverSettings,
        parts: LoopParts,
        checkpoints: Checkpointer,
        *,
        started: float | None = None,
        counters: Totals | None = None,
    ) -> None:
        super().__init__(upstream, turn, settings, parts, started=started, counters=counters)
        self.checkpoints = checkpoints
        #: The step's calls to send, from its end until they are started, and whether they
        #: are recorded yet.
        self._step_calls: list[ReadyCall] | None = None
        self._recorded = False
        #: A takeover: results of the calls that will not run again, written first.
        self._interrupted: list[Chunk] = []
        #: The instance stops: the turn is left to another at its next checkpoint.
        self._leaving = False
        #: A takeover's first model call, and what readers saw of its step.
        self._redo: tuple[Callable[[], Awaitable[Upstream]], list[Chunk]] | None = None
        #: Where the model call being opened writes (a redone step's withdrawal).
        self._writes: Write | None = None

    def hand_over(self) -> bool:
        self._leaving = True
        return True

    async def leave_now(self) -> None:
        """The instance stops now (its drain is over): the turn is left to another instance
        from its last checkpoint, whatever it was doing."""
        if not self.turn.done and not self.handed_over and not self.lost:
            await self._leave()

    def redo_step(self, opening: Callable[[], Awaitable[Upstream]], shown: list[Chunk]) -> None:
        """A takeover before a model call: ``opening`` makes it (with the checkpoint's message),
        and its step continues what readers saw of it (``shown``: the log's chunks;
        :class:`~chunkbridge.translators.core.redo.StepRedo`)."""
        self._redo = (opening, shown)

    async def _open_model(self, write: Write) -> None:
        self._writes = write  # (a redone step's withdrawal is written once its call opened)
        await super()._open_model(write)

    def _open_step(self, message: dict[str, Any]) -> Awaitable[Upstream]:
        if self._redo is not None:
            return self._open_redo(*self._redo)
        return super()._open_step(message)

    async def _open_redo(
        self, opening: Callable[[], Awaitable[Upstream]], shown: list[Chunk]
    ) -> Upstream:
        """The redone model call; then, for a client that takes ``reset-step``, what it saw of
        the step is withdrawn, and the redone step is shown as the model streams it now (a
        call that fails leaves what was shown as it was)."""
        upstream = await opening()
        if self.turn.guard.reset_step and withdrawable(shown) and self._writes is not None:
            withdrawn = self.turn.emit([{"type": "reset-step"}])
            await self._write(self._writes, encode_chunks(withdrawn))
            self._redo = (opening, [*shown, *withdrawn])
        return upstream

    def _step_translator(self) -> EventTranslator:
        redo, self._redo = self._redo, None
        translator = self.parts.translator()
        return translator if redo is None else StepRedo(translator, redo[1])

    def resume_calls(
        self, again: list[ReadyCall], interrupted: list[ReadyCall], record: bool
    ) -> None:
        """A takeover while the step's calls ran (or were about to): ``again`` run again —
        the same idempotency keys — and ``interrupted`` end with an error result saying so.
        ``record``: the calls were never sent (their instance handed the turn over first), so
        they are recorded as sent before they are (a takeover after this one must not send
        them once more)."""
        self._interrupted = [self.loop.result(c, _Interrupted()) for c in interrupted]
        self._step_calls = again
        self._recorded = not record

    async def _before_results(self, write: Write) -> bool:
        if self._interrupted:
            chunks, self._interrupted = self._interrupted, []
            if not self.turn.guard.in_step:
                chunks.insert(0, {"type": "start-step"})
            await self._write(write, encode_chunks(self.turn.emit(chunks)))
        if self.loop.phase is not LoopPhase.RESULTS:
            # a continuation's released calls: recorded before it opened, never sent again
            self._step_calls, self._recorded = None, False
            if not self.turn.guard.in_step:  # (a takeover before it began: its step opens,
                # and with it the denials the app decided, before the model hears of them)
                await self._write(write, encode_chunks(self.turn.emit([{"type": "start-step"}])))
            return True
        if self._step_calls is None:  # the model's step just ended: what it called, once
            run, out = self.loop.dispatch(self.join.take_ready())
            if out:
                await self._write(write, encode_chunks(self.turn.emit(out)))
            self._step_calls = run
        if self._step_calls and not self._recorded and not await self._record_step():
            return False  # (a step that sends nothing has nothing to record: the next
            # checkpoint, or the turn's end, comes first)
        calls, self._step_calls, self._recorded = self._step_calls, None, False
        for call in calls:
            self._start(call)
        return True

    async def _record_step(self) -> bool:
        """The step's calls recorded with its ending, before they are sent: a takeover never
        asks the model for this step again, and sends again only the calls their policy
        allows. (Kept across a cancellation — a client gone during the write — so the run
        going on detached sends them.)"""
        ended = self.join.ended
        assert ended is not None and self._step_calls is not None
        replays = self.parts.replays
        intents = tuple(
            Intent(c.call_id, c.name, c.input, replays(c.name), self._key(c.call_id))
            for c in self._step_calls
        )
        metadata = ended.message_metadata
        self._recorded = await self._checkpoint(
            Stage.RESULTS,
            ended={"finish_reason": ended.finish_reason, "metadata": metadata},
            intents=intents,
        )
        return self._recorded

    async def _before_model(self) -> bool:
        return await self._checkpoint(Stage.CALLING)

    async def _checkpoint(self, stage: Stage, **recorded: Any) -> bool:
        """Record where the turn is; ``False`` when another instance took it over (then it
        ends here, unheard)."""
        leaving = self._leaving
        if leaving and stage is Stage.RESULTS:
            recorded["sent"] = False  # (the calls wait for the instance going on with it)
        try:
            await self.checkpoints.save(stage, self.loop, **recorded)
        except Fenced:
            self.lose()
            return False
        if self.lost or self.handed_over:  # (heard meanwhile, from the lease's renewal)
            return False
        if leaving:  # recorded: another instance goes on from here
            await self._leave()
            return False
        return True

    async def _leave(self) -> None:
        self.handed_over = True
        self._cancel_calls()
        self.stop(CloseRequest(CloseReason.SHUTDOWN))
        await self.checkpoints.release()

    async def _after_run(self) -> None:
        if self.turn.done and not self.lost and not self.handed_over:
            self.checkpoints.end_soon()  # (a takeover meanwhile finds the turn's end)


class _Interrupted:
    """The outcome of a call cut off by its instance's death that may not run again."""

    output: Any = None
    error: str | None = (
        "The call was interrupted (the gateway instance running it stopped) and may have "
        "partly run; it was not run again."
    )
    asks: Any = None
