"""Durable loop turns, the owner's side (``durable = true``): the checkpoints a turn writes as it
goes (:class:`~chunkbridge.translators.core.checkpoint.Checkpoint`), under its fence.

A durable turn is held in Redis (:class:`~chunkbridge.gateway.stores.redis_takeover.
RedisTakeovers`: its owner key, renewed with the chunk log's lease, and a fence raised by every
hold) and checkpointed in the transcript's database
(:class:`~chunkbridge.gateway.stores.base.CheckpointStore`). :func:`begin` holds a new turn and
writes its first checkpoint before its first model call; the agent loop then writes one at each
boundary through its :class:`Checkpointer`, each made durable — the chunk log flushed up to it,
the row written — before what it guards is done (the model called, the calls sent). A write
refused because a higher fence holds the row means another instance took the turn over: the
loop hears :class:`Fenced` and the turn ends here without a word
(:meth:`~chunkbridge.gateway.turn.driver.TurnDriver.lose`).

Tests make an instance kill itself at a chosen checkpoint (``CB_FAULT_KILL_AT``: ``N`` — before
the N-th checkpoint write of the process — or ``N:after``), to test recovery at points a signal
from outside could not hit reliably (not a ``CHUNKBRIDGE_`` variable: no setting of a
deployment).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from redis.exceptions import RedisError

from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.stores.base import CheckpointStore, Forget, Key, Save, StoreUnavailable
from chunkbridge.gateway.stores.redis_resume import RedisResumeStore
from chunkbridge.gateway.stores.redis_takeover import RedisTakeovers
from chunkbridge.gateway.stores.writer import StoreWriter
from chunkbridge.gateway.transports.base import Upstream
from chunkbridge.gateway.turn.agent import AgentDriver, LoopParts
from chunkbridge.gateway.turn.driver import DriverSettings, Totals, Write
from chunkbridge.translators.core.agent_loop import AgentLoop, LoopPhase
from chunkbridge.translators.core.checkpoint import Checkpoint, Intent, Stage
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.event_translator import Chunk, EventTranslator
from chunkbridge.translators.core.redo import StepRedo, withdrawable
from chunkbridge.translators.core.sse_codec import encode_chunks
from chunkbridge.translators.core.steps import ReadyCall
from chunkbridge.translators.core.turn import Turn

__all__ = [
    "Checkpointer",
    "DurableDriver",
    "DurableServices",
    "FaultPlan",
    "Fenced",
    "begin",
    "first_checkpoint",
]

_FAULT_VARIABLE = "CB_FAULT_KILL_AT"


class Fenced(Exception):
    """Another instance took the turn over: this one must not go on with it."""


class DurableLog(Protocol):
    """The chunk log as a checkpoint needs it (the ``redis`` resume store's)."""

    #: Bytes appended so far.
    written: int

    async def flushed(self) -> bool:
        """Everything appended so far is stored; ``False``: refused (another instance holds
        the turn)."""


@dataclass(slots=True)
class FaultPlan:
    """Where this process kills itself, for recovery tests (see the module); ``at = 0``: never."""

    at: int = 0
    after: bool = False
    #: Checkpoint writes this process made.
    count: int = 0

    @classmethod
    def from_environment(cls) -> FaultPlan:
        value = os.environ.get(_FAULT_VARIABLE, "")
        number, _, when = value.partition(":")
        return cls(int(number), when == "after") if number.isdigit() else cls()

    def before(self) -> int:
        """A checkpoint write begins: its number in this process (the process dies here if
        planned so)."""
        self.count += 1
        self._kill_at(self.count, after=False)
        return self.count

    def landed(self, number: int) -> None:
        """Checkpoint write ``number`` landed (others may have begun meanwhile)."""
        self._kill_at(number, after=True)

    def _kill_at(self, number: int, after: bool) -> None:
        if self.at and number == self.at and self.after == after:
            os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True, slots=True)
class DurableServices:
    """What every durable turn of a gateway shares."""

    checkpoints: CheckpointStore
    #: What writes the checkpoints (their transactions shared with other turns').
    writer: StoreWriter
    takeovers: RedisTakeovers
    #: The chunk logs (read and written on by a takeover).
    resume: RedisResumeStore
    #: Takeovers from one checkpoint in a row before the turn ends with an error.
    max_recoveries: int
    fault: FaultPlan
    #: Ends of turns being recorded (strong references: a task nobody holds may go).
    ending: set[asyncio.Task[None]] = field(default_factory=set)


class Checkpointer:
    """One durable turn's checkpoints, written under its fence (see the module)."""

    def __init__(self, services: DurableServices, key: Key, fence: int, last: Checkpoint) -> None:
        self.services = services
        self.key = key
        self.fence = fence
        #: The newest checkpoint written.
        self.last = last
        #: The turn's chunk log (set once the run that writes it exists).
        self.log: DurableLog | None = None
        #: A checkpoint could not be written: the turn goes on without any.
        self.broken = False
        self._log = get_logger("chunkbridge.durable")

    async def save(
        self,
        stage: Stage,
        loop: AgentLoop,
        *,
        ended: dict[str, Any] | None = None,
        intents: tuple[Intent, ...] = (),
        sent: bool = True,
    ) -> None:
        """The turn is at ``stage``: recorded before the caller goes on; :class:`Fenced` when
        another instance holds the turn. A store that fails is logged and the turn goes on
        (its answer matters more than its recovery)."""
        written = self.log.written if self.log is not None else self.last.log_bytes
        checkpoint = self.last.next(
            stage,
            loop=loop.state(),
            log_bytes=written,
            ended=ended,
            intents=intents,
            sent=sent,
        )
        await self.write(checkpoint)

    async def write(self, checkpoint: Checkpoint) -> None:
        """Record ``checkpoint`` — the chunk log first, up to it — or raise :class:`Fenced`
        when another instance holds the turn. A store that fails does not end the turn (its
        answer matters more than its recovery): it goes on without checkpoints, once it is
        known to be still this instance's, and no instance takes it over."""
        if self.broken:
            return
        fault = self.services.fault
        number = fault.before()
        try:
            if self.log is not None and not await self.log.flushed():
                raise Fenced("Redis refused the turn's chunks: another instance holds it")
            head = checkpoint.head_json() if checkpoint.seq == 1 else None
            save = Save(self.key, self.fence, checkpoint.seq, checkpoint.to_json(), head)
            saved = await self.services.writer.record(save)
        except (StoreUnavailable, OSError, RedisError) as exc:
            await self._unrecorded(exc)
            return
        if not saved:
            raise Fenced(f"the turn is held under a higher fence than {self.fence}")
        self.last = checkpoint
        fault.landed(number)

    async def _unrecorded(self, exc: Exception) -> None:
        """A checkpoint could not be written: the turn goes on without any (a takeover from
        an older one could send a call twice), unless it is no longer this instance's."""
        takeovers, key = self.services.takeovers, self.key
        try:
            holds = await takeovers.holds(key, self.fence)
        except Exception:  # Redis is away too: nobody can take it over either
            holds = True
        if not holds:
            raise Fenced("another instance holds the turn") from exc
        self.broken = True
        self._log.warning("turn.not_durable", session_id=key[0], error=str(exc)[:200])
        with contextlib.suppress(Exception):
            await takeovers.forget(key, self.fence)

    async def release(self) -> None:
        """This instance stops: the turn is left to another one at once (not after its
        lease), from this checkpoint."""
        try:
            if self.log is not None:
                await self.log.flushed()
            await self.services.takeovers.release(self.key, self.fence)
        except Exception as exc:  # then it is taken over when its lease lapses
            self._log.warning("turn.release_failed", session_id=self.key[0], error=str(exc)[:200])
        get_logger("chunkbridge.durable").info("turn.handed_over", session_id=self.key[0])

    def end_soon(self) -> None:
        """:meth:`end`, without keeping the client's ``[DONE]`` waiting for it."""
        task = asyncio.get_running_loop().create_task(self.end())
        self.services.ending.add(task)
        task.add_done_callback(self.services.ending.discard)

    async def drop(self) -> None:
        """The turn will not run after all (its first model call failed): nothing of it is
        kept, and nobody takes it over."""
        self.services.resume.durable.pop(self.key, None)
        await self.end()
        with contextlib.suppress(Exception):
            await self.services.takeovers.forget(self.key, self.fence)

    async def end(self) -> None:
        """The turn ended here: its checkpoint goes (once its end is in the log: a takeover
        that finds no checkpoint finds the end)."""
        try:
            if self.log is not None:
                await self.log.flushed()
            await self.services.writer.record(Forget(self.key, self.fence))
        except (StoreUnavailable, OSError) as exc:
            self._log.warning(
                "turn.checkpoint_failed", session_id=self.key[0], error=str(exc)[:200]
            )


def first_checkpoint(
    request: dict[str, Any],
    run_id: str,
    message_id: str,
    target: int,
    continued: dict[str, Any] | None,
    header: int,
    released: list[ReadyCall] | None,
    denied: tuple[str, ...] = (),
    *,
    reset_step: bool = False,
) -> Checkpoint:
    """A durable turn's first checkpoint: before its first model call — or the calls its
    continuation released, none of which a takeover runs again. ``header``: the bytes its log
    starts with that are not its chunks (a trace comment, a continuation's resume prefix)."""
    intents = tuple(Intent(c.call_id, c.name, c.input, False, "") for c in released or ())
    return Checkpoint(
        seq=1,
        stage=Stage.CALLING if released is None else Stage.RELEASED,
        run_id=run_id,
        message_id=message_id,
        target=target,
        reset_step=reset_step,
        log_bytes=header,
        prefix=header,
        loop={},
        intents=intents,
        request=request,
        continued=continued,
        denied=denied,
    )


async def begin(services: DurableServices, key: Key, first: Checkpoint) -> Checkpointer | None:
    """Hold a new durable turn and write its first checkpoint (before its first model call);
    ``None`` when it cannot be held or recorded (then it runs as a turn that is not durable,
    said in a log line)."""
    log = get_logger("chunkbridge.durable")
    try:
        fence = await services.takeovers.own(key)
    except Exception as exc:  # Redis: the turn runs, without a recovery
        log.warning("turn.not_durable", session_id=key[0], error=str(exc)[:200])
        return None
    if not fence:
        log.warning("turn.not_durable", session_id=key[0], error="held by another instance")
        return None
    # its lease is renewed from now on; its log (begun later) is written under this hold
    services.resume.durable[key] = services.takeovers.token(fence)
    checkpointer = Checkpointer(services, key, fence, first)
    try:
        await checkpointer.write(first)
    except Fenced:
        checkpointer.broken = True
    if checkpointer.broken:
        services.resume.durable.pop(key, None)
        return None
    return checkpointer


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
