"""A durable turn's record of itself (``durable = true``): the checkpoints it writes as it goes
(:class:`~chunkbridge.translators.core.checkpoint.Checkpoint`), under its fence.

A durable turn is held in Redis (:class:`~chunkbridge.gateway.stores.redis_takeover.
RedisTakeovers`: its owner key, renewed with the chunk log's lease, and a fence raised by every
hold) and checkpointed in the transcript's database
(:class:`~chunkbridge.gateway.stores.base.CheckpointStore`, through the store writer). :func:`begin`
holds a new turn and writes its first checkpoint before its first model call; the agent loop
(:class:`~chunkbridge.gateway.turn.durable.DurableDriver`) then writes one at each boundary
through its :class:`Checkpointer`, each made durable — the chunk log flushed up to it, the row
written — before what it guards is done (the model called, the calls sent). A write refused
because a higher fence holds the row means another instance took the turn over: the loop hears
:class:`Fenced` and the turn ends here without a word
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
from dataclasses import dataclass, field
from typing import Any, Protocol

from redis.exceptions import RedisError

from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.stores.base import CheckpointStore, Forget, Key, Save, StoreUnavailable
from chunkbridge.gateway.stores.redis_resume import RedisResumeStore
from chunkbridge.gateway.stores.redis_takeover import RedisTakeovers
from chunkbridge.gateway.stores.writer import StoreWriter
from chunkbridge.translators.core.agent_loop import AgentLoop
from chunkbridge.translators.core.checkpoint import Checkpoint, Intent, Stage
from chunkbridge.translators.core.steps import ReadyCall

__all__ = [
    "Checkpointer",
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
