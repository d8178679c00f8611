"""Durable loop turns, the taker's side: going on with a turn whose instance died.

Every instance of a durable gateway looks for turns whose owner's lease lapsed
(:class:`Recoverer`, every :data:`LOOK_INTERVAL`), claims each in Redis — a new, higher fence —
and raises the fence of its checkpoint row to it (:func:`take_over`), so its former owner can
write nothing more. The turn is then rebuilt from its checkpoint and from what readers saw: the
chunk log read back, its chunks up to the checkpoint fed to the turn (its guard's state is the
readers', its assembler's message the one the checkpoint stands for), then those after it — the
*tail*. From there it goes on as the checkpoint's stage says
(:mod:`~chunkbridge.translators.core.checkpoint`):

* ``calling`` — the model is called again with the message at the checkpoint; a step it was
  streaming is made again as a continuation of what readers saw of it
  (:class:`~chunkbridge.translators.core.redo.StepRedo`: no text twice). None of that step's
  calls ran: a durable turn sends its calls only once the step is recorded;
* ``results`` — the step's calls with a result in the tail are done; the others run again where
  their replay policy allows it, with the same idempotency key, and otherwise end with an error
  result that says the call was interrupted and may have partly run; then the loop goes on;
* ``released`` — a continuation's approved or answered calls without a result end with that
  error (an approved call runs at most once; an answered one waited in the dead process).

The continuation writes on in the same chunk log under the same ``messageId``, so a reader
following it sees one message to ``[DONE]``, and records the answer in the transcript at its
end. A turn taken over from the same checkpoint more than ``max_recoveries`` times in a row ends
with an ``error`` chunk instead (``turn.recovery_exhausted``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import re
import sys
import time
import uuid
from collections.abc import Iterable
from typing import Any

import orjson

from chunkbridge.gateway.errors import TurnInProgress
from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.stores.redis_follow import error_ending, owner_died_ending
from chunkbridge.gateway.telemetry import NO_TRACE
from chunkbridge.gateway.turn.agent import NotOpened
from chunkbridge.gateway.turn.agent_setup import AgentSetup
from chunkbridge.gateway.turn.answers import issue_approval
from chunkbridge.gateway.turn.checkpointer import Checkpointer, DurableServices
from chunkbridge.gateway.turn.durable import DurableDriver
from chunkbridge.gateway.turn.opening import Gateway, resume_prefix
from chunkbridge.gateway.turn.run import Seat, TurnRun
from chunkbridge.gateway.turn.transcript import TurnTranscript
from chunkbridge.kit import IdFactory, TurnInput, counter_ids
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.protocol_specs.human_in_the_loop import approval_signature
from chunkbridge.translators.core.agent_loop import LoopPhase
from chunkbridge.translators.core.checkpoint import Checkpoint, Stage
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.sse_codec import DONE_FRAME, decode_chunks
from chunkbridge.translators.core.steps import ReadyCall
from chunkbridge.translators.core.turn import Turn, TurnOptions

__all__ = ["LOOK_INTERVAL", "Recoverer", "take_over"]

#: Seconds between two looks for turns to take over.
LOOK_INTERVAL = 0.5
_EXHAUSTED = "The answer was interrupted too often at the same point and was given up."
_UNREADABLE = "The answer was interrupted and could not be taken up again."
_COUNTED_ID = re.compile(r"^([a-z]+)-(\d+)$")


class Recoverer:
    """Takes over the durable turns whose instance died (see the module)."""

    def __init__(self, gateway: Gateway, services: DurableServices) -> None:
        self.gateway = gateway
        self.services = services
        self.log = get_logger("chunkbridge.durable")
        self._looking: asyncio.Task[None] | None = None
        #: Takeovers being set up (strong references: a task nobody holds may be collected).
        self._taking: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._looking = asyncio.get_running_loop().create_task(self._look())

    async def _look(self) -> None:
        takeovers = self.services.takeovers
        while True:
            await asyncio.sleep(LOOK_INTERVAL)
            try:
                for key in await takeovers.due():
                    fence = await takeovers.claim(key)
                    if fence:
                        task = asyncio.get_running_loop().create_task(
                            take_over(self.gateway, self.services, key, fence)
                        )
                        self._taking.add(task)
                        task.add_done_callback(self._taking.discard)
            except Exception as exc:  # Redis away: looked for again at the next look
                self.log.warning("turn.takeover_look_failed", error=str(exc)[:200])

    async def stop(self) -> None:
        """No more takeovers here (the instance stops)."""
        if self._looking is not None:
            self._looking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._looking
        if self._taking:
            await asyncio.wait(list(self._taking), timeout=2.0)


async def take_over(gateway: Gateway, services: DurableServices, key: Any, fence: int) -> None:
    """Go on with the durable turn ``key``, claimed under ``fence`` (see the module)."""
    log = get_logger("chunkbridge.durable")
    started = time.monotonic()
    try:
        claimed = await services.checkpoints.claim(key, fence)
        entries = await services.resume.entries(key)
    except Exception as exc:  # the stores: the lease lapses again, another look retries
        log.warning("turn.takeover_failed", session_id=key[0], error=str(exc)[:200])
        return
    if claimed is None or entries is None or _finished(entries):  # it ended (in part)
        await _settle(services, key, fence, entries)
        return
    agent = gateway.agent
    if claimed.retries > services.max_recoveries or agent is None:
        await _give_up(gateway, key, fence, "turn.recovery_exhausted", claimed.recoveries)
        return
    try:
        checkpoint = Checkpoint.from_json(claimed.body, claimed.head)
        checkpointer = Checkpointer(services, key, fence, checkpoint)
        run = await _resumed_run(
            gateway, agent, key, checkpointer, b"".join(entries), claimed.recoveries
        )
    except Exception as exc:  # a checkpoint this version cannot go on from: said, and ended
        log.error("turn.takeover_failed", session_id=key[0], exc_info=exc)
        await _give_up(gateway, key, fence, "turn.takeover_failed", claimed.recoveries)
        return
    log.info(
        "turn.taken_over",
        session_id=key[0],
        chat_id=key[1],
        stage=checkpointer.last.stage.value,
        recoveries=claimed.recoveries,
        seconds=round(time.monotonic() - started, 3),
    )
    gateway.metrics.takeovers.inc()
    run.client_disconnected = True  # nobody reads here: into the log only
    await run.end()


async def _resumed_run(
    gateway: Gateway,
    agent: AgentSetup,
    key: Any,
    checkpointer: Checkpointer,
    data: bytes,
    recoveries: int,
) -> TurnRun:
    """The turn rebuilt from its checkpoint and its log, ready to go on (see the module)."""
    checkpoint = checkpointer.last
    header = b""
    if len(data) < checkpoint.prefix:  # its instance died before its log began: it begins here
        header = resume_prefix(checkpoint.continued, checkpoint.target)
        size = len(header)
        checkpointer.last = checkpoint = dataclasses.replace(
            checkpoint, prefix=size, log_bytes=size
        )
    request = ChatRequest.model_validate(checkpoint.request)
    turn_input = TurnInput(
        request, key[0], checkpoint.run_id, gateway.dialect_settings, gateway.history
    )
    model_input = dataclasses.replace(turn_input, request=agent.model_view(request))
    before = decode_chunks(data[checkpoint.prefix : checkpoint.log_bytes])
    tail = decode_chunks(data[checkpoint.log_bytes :])
    options = dataclasses.replace(
        gateway.translator_options, id_factory=_ids_after([*before, *tail])
    )
    turn = _turn(gateway, agent, turn_input, checkpoint, options)
    turn.emit(before)  # what readers saw up to the checkpoint: the message then, the guard's
    assert turn.assembler is not None
    message = orjson.loads(orjson.dumps(turn.assembler.message))  # (a copy: it goes on)
    turn.emit(tail)  # and after it
    parts = agent.parts(
        model_input,
        gateway.connector,
        {},
        functools.partial(gateway.dialect.translator, options),
        None,
        gateway.question_secret,
    )
    if checkpoint.loop:
        parts.loop.restore(checkpoint.loop)
    parts.loop.recoveries = recoveries
    settings = gateway.driver_settings
    counters = gateway.metrics
    driver = DurableDriver(NotOpened(), turn, settings, parts, checkpointer, counters=counters)
    if checkpoint.stage is Stage.CALLING:
        first = functools.partial(gateway.connector.open, model_input, NO_TRACE.upstream_call({}))
        again = functools.partial(parts.open_step, message)
        driver.redo_step(again if checkpoint.loop else first, [*before, *tail])
        parts.loop.phase = LoopPhase.CALLING
    else:
        _resume_calls(gateway, driver, checkpoint, tail)
    member = await _seat(gateway, key)
    return _run(gateway, member, key, turn, driver, request, checkpointer, data, header)


def _resume_calls(
    gateway: Gateway, driver: DurableDriver, checkpoint: Checkpoint, tail: list[dict[str, Any]]
) -> None:
    """A takeover while the step's calls ran, or a continuation's released ones."""
    again, interrupted = _calls_to_resume(checkpoint, tail)
    gateway.metrics.interrupted_calls.labels("replayed").inc(len(again))
    gateway.metrics.interrupted_calls.labels("refused").inc(len(interrupted))
    driver.resume_calls(again, interrupted, record=not checkpoint.sent)
    loop = driver.loop
    if checkpoint.stage is Stage.RELEASED:
        loop.phase = LoopPhase.RELEASED
        return
    ended = checkpoint.ended or {}
    driver.join.ended = CloseRequest(
        CloseReason.COMPLETED, ended.get("finish_reason"), ended.get("metadata")
    )
    loop.phase = LoopPhase.RESULTS


def _turn(
    gateway: Gateway,
    agent: AgentSetup,
    turn_input: TurnInput,
    checkpoint: Checkpoint,
    options: Any,
) -> Turn:
    """The turn as its first owner made it (its message continued from the checkpoint's)."""
    config = gateway.config
    secret, session_id = gateway.approval_secret, turn_input.session_id
    turn_options = TurnOptions(
        target=checkpoint.target,
        reset_step=checkpoint.reset_step,
        message_id=checkpoint.message_id,
        mask_errors=config.mask_errors,
        known_tools=turn_input.known_tool_calls(),
        denied_calls=checkpoint.denied,
        sign_approval=functools.partial(approval_signature, secret) if secret else None,
        on_approval=functools.partial(
            issue_approval, gateway.stores.approvals, gateway.metrics, session_id
        ),
        gateway_tools=agent.names,
        app_tools=agent.policy.app,
        assemble=True,
        continued=checkpoint.continued,
    )
    return Turn(gateway.dialect.translator(options), turn_options)


def _run(
    gateway: Gateway,
    member: str,
    key: Any,
    turn: Turn,
    driver: DurableDriver,
    request: ChatRequest,
    checkpointer: Checkpointer,
    data: bytes,
    header: bytes,
) -> TurnRun:
    services = gateway.durable
    assert services is not None
    seat = Seat(key, gateway.turns, services.resume, member)
    transcript = None
    writer = gateway.store_writer
    if writer is not None and turn.assembler is not None:
        checkpoint = checkpointer.last
        transcript = TurnTranscript(
            writer,
            key,
            checkpoint.target,
            request,
            checkpoint.message_id,
            checkpoint.continued,
            wait_for_end=False,
            assembler=turn.assembler,
        )
        if not data:  # its first owner died before it recorded the request
            transcript.begin()
    # (before its log: a durable turn's log is written under its hold)
    services.resume.durable[key] = services.takeovers.token(checkpointer.fence)
    run = TurnRun(
        driver,
        seat,
        gateway.run_services,
        request_id=uuid.uuid4().hex[:16],
        log=get_logger("chunkbridge.access").bind(session_id=key[0]),
        started=time.monotonic(),
        transcript=transcript,
        resume_prefix=header,
        open_log=functools.partial(services.resume.rejoin, key),
    )
    log = run.chunk_log
    assert log is not None
    log.written += len(data)  # type: ignore[attr-defined]  # (what the log held already)
    checkpointer.log = log  # type: ignore[assignment]
    gateway.metrics.active_streams.inc()
    return run


async def _seat(gateway: Gateway, key: Any) -> str:
    """The session's turn, held for the continuation (the dead owner's hold lapsed with its
    lease): its member across instances ("" when a new turn of the session got in first, said
    in a log line)."""
    gateway.turns.hold(key[0], sys.maxsize)  # (admitted once already)
    services = gateway.durable
    assert services is not None
    try:
        return await services.resume.acquire_turn(key[0], gateway.config.max_turns_per_session)
    except TurnInProgress:
        get_logger("chunkbridge.durable").warning("turn.takeover_beside", session_id=key[0])
        return ""


def _calls_to_resume(
    checkpoint: Checkpoint, tail: list[dict[str, Any]]
) -> tuple[list[ReadyCall], list[ReadyCall]]:
    """The recorded calls without a result in the tail: those that run again (their policy
    allows it), and those that end as interrupted (a continuation's released calls always:
    their intents say they may not run again)."""
    settled = {
        chunk.get("toolCallId")
        for chunk in tail
        if chunk.get("type") in ("tool-output-available", "tool-output-error")
        and not chunk.get("preliminary")
    }
    again: list[ReadyCall] = []
    interrupted: list[ReadyCall] = []
    for intent in checkpoint.intents:
        if intent.call_id in settled:
            continue
        (again if intent.replay or not checkpoint.sent else interrupted).append(intent.ready())
    return again, interrupted


def _ids_after(chunks: Iterable[dict[str, Any]]) -> IdFactory:
    """Part ids counted on from the highest the log used (``text-3`` → ``text-4``…), so a
    continued message never reuses one."""
    used: dict[str, int] = {}
    for chunk in chunks:
        for field in ("id", "sourceId"):
            value = chunk.get(field)
            match = _COUNTED_ID.match(value) if isinstance(value, str) else None
            if match:
                kind, number = match.group(1), int(match.group(2))
                used[kind] = max(used.get(kind, 0), number)
    return counter_ids(used)


def _finished(entries: list[bytes]) -> bool:
    """The log holds the answer's ``finish`` (its owner died before it recorded the end)."""
    return b'data: {"type":"finish"' in b"".join(entries)


async def _settle(
    services: DurableServices, key: Any, fence: int, entries: list[bytes] | None
) -> None:
    """A durable turn with no checkpoint or no open log: it ended, its end half written — or
    its instance died before its first checkpoint, when its request had not been answered yet
    (its client saw it fail; nothing was streamed). A log begun ends (as an interruption when
    its answer never finished); the turn leaves the durable ones."""
    if entries:
        data = b"".join(entries)
        ending = b"" if _finished(entries) else owner_died_ending()
        if not ending and DONE_FRAME not in data:
            ending = DONE_FRAME
        _end_log(services, key, fence, ending)
    with contextlib.suppress(Exception):
        await services.checkpoints.forget(key, fence)
        await services.takeovers.forget(key, fence)


async def _give_up(gateway: Gateway, key: Any, fence: int, why: str, recoveries: int) -> None:
    """The turn cannot go on — it died at the same point too often, or its checkpoint cannot
    be read here: it ends with an error (``why`` is the log line)."""
    services = gateway.durable
    assert services is not None
    get_logger("chunkbridge.durable").error(
        why, session_id=key[0], chat_id=key[1], recoveries=recoveries
    )
    if why == "turn.recovery_exhausted":
        gateway.metrics.recoveries_exhausted.inc()
    text = _EXHAUSTED if why == "turn.recovery_exhausted" else _UNREADABLE
    _end_log(services, key, fence, error_ending(text))
    with contextlib.suppress(Exception):
        await services.checkpoints.forget(key, fence)


def _end_log(services: DurableServices, key: Any, fence: int, ending: bytes) -> None:
    """The turn's log ends with ``ending``, written under the takeover's hold."""
    services.resume.durable[key] = services.takeovers.token(fence)
    log = services.resume.rejoin(key, _Ended())
    if ending:
        log.append(ending)
    log.finish()


class _Ended:
    """A log written to its end by the takeover itself (nothing runs to stop)."""

    def stop(self) -> bool:
        return False

    def lost(self) -> None:
        pass
