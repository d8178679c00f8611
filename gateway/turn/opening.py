"""Opening a turn, in three steps, each of which hands on what it holds or lets it go:

1. :func:`admit` — the session's turn held (a :class:`~chunkbridge.gateway.turn.run.Seat`:
   here, and across instances with resume on), the conversation the turn sends (the stored one
   with ``history = stored``), and the answers in the request checked and claimed (the first
   request carrying an answer wins it);
2. :func:`connect` — the upstream opened; or not yet, when the gateway calls a continuation
   released run before the model hears of them (the agent loop);
3. :func:`assemble` — the turn (translator, guard, its one assembler), its driver, its transcript
   and the :class:`~chunkbridge.gateway.turn.run.TurnRun` that owns it all from there.

Nothing streams before the three are done: a failure is answered as an HTTP error, the answers
claimed are released (the upstream never heard of them, so they may come again) and the
session's turn is freed.
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.errors import BadRequest, GatewayError
from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.stores import Stores
from chunkbridge.gateway.stores.base import Claim, Line, TranscriptStore
from chunkbridge.gateway.stores.writer import StoreWriter
from chunkbridge.gateway.telemetry import NoTrace, TurnTrace, trace_comment
from chunkbridge.gateway.transports.base import Upstream
from chunkbridge.gateway.transports.connectors import Connector
from chunkbridge.gateway.turn import busy, checkpointer
from chunkbridge.gateway.turn.agent import AgentDriver, NotOpened
from chunkbridge.gateway.turn.agent_setup import AgentSetup
from chunkbridge.gateway.turn.answers import QuestionAnswer, claim_answers, issue_approval
from chunkbridge.gateway.turn.checkpointer import Checkpointer, DurableServices
from chunkbridge.gateway.turn.driver import DriverSettings, TurnDriver
from chunkbridge.gateway.turn.durable import DurableDriver
from chunkbridge.gateway.turn.run import OpenTurns, RunServices, Seat, TurnRun
from chunkbridge.gateway.turn.transcript import TurnTranscript, stored_request
from chunkbridge.kit import (
    ApprovalAnswer,
    Dialect,
    RequestRejected,
    TranslatorOptions,
    TurnInput,
    counter_ids,
)
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL, approval_signature
from chunkbridge.translators.core.message_assembly import MessageAssembler
from chunkbridge.translators.core.message_replay import replay_chunks
from chunkbridge.translators.core.sse_codec import encode_chunks
from chunkbridge.translators.core.steps import ReadyCall
from chunkbridge.translators.core.turn import Turn, TurnOptions

__all__ = [
    "Admission",
    "Gateway",
    "admit",
    "assemble",
    "connect",
    "delivered",
    "hold_seat",
    "note_answer",
    "resume_prefix",
]

Trace = TurnTrace | NoTrace


class Gateway(Protocol):
    """What opening a turn reads of its gateway (:class:`chunkbridge.gateway.service.Gateway`:
    the turn is a layer below it)."""

    config: GatewayConfig
    stores: Stores
    turns: OpenTurns
    agent: AgentSetup | None
    dialect: Dialect
    dialect_settings: Any
    history: Literal["latest", "full"]
    stored_history: bool
    translator_options: TranslatorOptions
    connector: Connector
    metrics: Metrics
    store_writer: StoreWriter | None
    driver_settings: DriverSettings
    run_services: RunServices
    #: ``durable = true``: what durable turns share, else ``None``.
    durable: DurableServices | None
    #: The sessions' lines (``busy``) and their newest answers.
    line: Line
    log: Any
    draining: bool

    @property
    def steerable(self) -> bool: ...

    def steer_offer(
        self, request: ChatRequest, session_id: str, run_id: str, request_id: str
    ) -> str: ...

    @property
    def approval_secret(self) -> str | None: ...

    @property
    def question_secret(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Admission:
    """A turn let in: what it holds and what it sends."""

    seat: Seat
    #: The conversation as the turn sends it (the stored one with ``history = stored``).
    request: ChatRequest
    #: What the upstream is given (in a loop turn: the model's view of the request).
    turn_input: TurnInput
    run_id: str
    #: Where the turn is recorded (``store`` on and a chat id), else ``None``.
    transcripts: TranscriptStore | None
    #: The assistant message a continuation continues (stored, or the client's copy), when the
    #: turn needs it: to resume, to record, or to build the loop's next model call on.
    continued: dict[str, Any] | None
    #: The turn builds the message the client builds (:attr:`Turn.assembler`).
    assemble: bool
    answers: Sequence[ApprovalAnswer]
    questions: Sequence[QuestionAnswer]
    #: Gateway calls the continuation released (approved, or answered): they run first.
    released: list[ReadyCall] | None
    #: ``durable = true``: the turn is held and its first checkpoint written.
    checkpoints: Checkpointer | None = None

    @property
    def message_id(self) -> str:
        """The id of the answer: the message continued, or a new one."""
        return self.request.response_message_id() or busy.answer_id(self.run_id)

    async def let_go(self, gateway: Gateway) -> None:
        """Undo the admission (the turn will not stream): its answers, its checkpoint and its
        seat."""
        try:
            if self.answers or self.questions:  # never delivered: they may come again
                answered: list[Claim] = [*self.answers, *self.questions]
                await gateway.stores.approvals.release(self.seat.key[0], answered)
            if self.checkpoints is not None:
                await self.checkpoints.drop()
        finally:
            await self.seat.free()


# -- admit -----------------------------------------------------------------------------------


async def admit(
    gateway: Gateway,
    request: ChatRequest,
    session_id: str,
    trace: Trace,
    seat: Seat | None = None,
    run_id: str | None = None,
) -> Admission:
    """Hold the session's turn (unless ``seat`` holds it: a request the session's line
    admitted, whose answer's id came from ``run_id``), then read the conversation and claim the
    answers (the turn is freed again when either fails)."""
    if seat is None:
        seat = await _seat(gateway, request, session_id)
    try:
        request, transcripts, continued = await _conversation(gateway, request, seat)
        return await _claim(gateway, seat, request, transcripts, continued, trace, run_id)
    except BaseException:
        await seat.free()
        raise


async def _seat(gateway: Gateway, request: ChatRequest, session_id: str) -> Seat:
    limit = gateway.config.max_turns_per_session
    gateway.turns.hold(session_id, limit)
    resume = gateway.stores.resume if request.id else None  # no chat id: not resumable
    if resume is None:
        return Seat((session_id, request.id), gateway.turns)
    try:  # the rule across instances (redis); a no-op in one process
        member = await resume.acquire_turn(session_id, limit)
    except BaseException:
        gateway.turns.free(session_id)
        raise
    return Seat((session_id, request.id), gateway.turns, resume, member)


async def hold_seat(gateway: Gateway, request: ChatRequest, session_id: str) -> Seat:
    """The session's turn, held as :func:`admit` holds it, for a turn an app opens with its own
    events (:mod:`chunkbridge.gateway.app_streams`)."""
    return await _seat(gateway, request, session_id)


async def _conversation(
    gateway: Gateway, request: ChatRequest, seat: Seat
) -> tuple[ChatRequest, TranscriptStore | None, dict[str, Any] | None]:
    """The request as the turn sends it, where it is recorded, and the message it continues."""
    transcripts = gateway.stores.transcripts
    continued: dict[str, Any] | None = None
    if transcripts is not None and gateway.stored_history:
        limit = gateway.config.store_max_messages
        request, continued = await stored_request(transcripts, request, seat.key[0], limit)
    if not request.id:
        transcripts = None  # nothing to file it under
    if _assembles(gateway, seat, transcripts) and continued is None:
        copy = request.continued_message()
        if copy is not None:
            continued = copy.model_dump(mode="json", exclude_unset=True)  # the client's
    return request, transcripts, continued


def _assembles(gateway: Gateway, seat: Seat, transcripts: TranscriptStore | None) -> bool:
    """The turn needs the message the client builds: to resume it, record it, or loop on it."""
    return seat.resume is not None or transcripts is not None or gateway.agent is not None


async def _claim(
    gateway: Gateway,
    seat: Seat,
    request: ChatRequest,
    transcripts: TranscriptStore | None,
    continued: dict[str, Any] | None,
    trace: Trace,
    run_id: str | None,
) -> Admission:
    """Check and claim the request's answers; the gateway calls they release."""
    run_id = run_id or uuid.uuid4().hex
    turn_input = TurnInput(request, seat.key[0], run_id, gateway.dialect_settings, gateway.history)
    try:
        answers = turn_input.approval_answers
        answered = turn_input.answered_calls()
    except RequestRejected as exc:
        raise BadRequest(exc.client_message) from exc
    questions = [QuestionAnswer(c.tool_call_id) for c in answered if c.tool_name == QUESTION_TOOL]
    approvals, secret = gateway.stores.approvals, gateway.approval_secret
    try:
        await claim_answers(approvals, seat.key[0], answers, questions, secret)
    except GatewayError as exc:
        gateway.metrics.approvals.labels("refused").inc(len(answers))
        trace.event("chunkbridge.approval.refused", {"reason": exc.client_message})
        raise
    admission = Admission(
        seat,
        request,
        turn_input,
        run_id,
        transcripts,
        continued,
        _assembles(gateway, seat, transcripts),
        answers,
        questions,
        released=None,
    )
    agent = gateway.agent
    if agent is None:
        return admission
    try:  # released gateway calls (approved, answered) run before the model hears of them
        released = agent.released_calls(answers, answered, gateway.question_secret)
    except BaseException:
        await approvals.release(seat.key[0], [*answers, *questions])
        raise
    model_input = dataclasses.replace(turn_input, request=agent.model_view(request))
    admission = dataclasses.replace(admission, turn_input=model_input, released=released)
    try:
        return await _held(gateway, admission, trace)
    except BaseException:
        await approvals.release(seat.key[0], [*answers, *questions])
        raise


async def _held(gateway: Gateway, admission: Admission, trace: Trace) -> Admission:
    """``durable = true``: the loop turn held and its first checkpoint written (before its
    first model call), when it is resumable."""
    if gateway.durable is None or admission.seat.resume is None:
        return admission
    target = gateway.config.target
    header = len(trace_comment(trace)) + len(_resume_prefix(admission, target))
    first = checkpointer.first_checkpoint(
        admission.request.model_dump(mode="json", exclude_unset=True, by_alias=True),
        admission.run_id,
        admission.message_id,
        target,
        admission.continued,
        header,
        admission.released,
        tuple(a.tool_call_id for a in admission.answers if not a.approved),
        reset_step=gateway.config.reset_step,
    )
    checkpoints = await checkpointer.begin(gateway.durable, admission.seat.key, first)
    return dataclasses.replace(admission, checkpoints=checkpoints)


def _resume_prefix(admission: Admission, target: int) -> bytes:
    if admission.seat.resume is None:
        return b""
    return resume_prefix(admission.continued, target)


def resume_prefix(continued: dict[str, Any] | None, target: int) -> bytes:
    """A continuation's message, replayed first into its chunk log: a fresh page resuming it
    rebuilds the message it continues (none for a new message)."""
    return b"" if continued is None else encode_chunks(replay_chunks(continued, target))


# -- connect ---------------------------------------------------------------------------------


async def connect(
    gateway: Gateway, admission: Admission, forward: dict[str, str], trace: Trace
) -> Upstream:
    """The turn's upstream; a continuation whose released calls run first opens none yet."""
    if admission.released is not None:
        return NotOpened()
    try:
        return await gateway.connector.open(admission.turn_input, trace.upstream_call(forward))
    except RequestRejected as exc:
        raise BadRequest(exc.client_message) from exc


def delivered(gateway: Gateway, admission: Admission, trace: Trace) -> None:
    """The upstream heard the answers: counted and traced."""
    for answer in admission.answers:
        decision = "approved" if answer.approved else "denied"
        gateway.metrics.approvals.labels(decision).inc()
        call = {"gen_ai.tool.call.id": answer.tool_call_id}
        trace.event(f"chunkbridge.approval.{decision}", call)


# -- assemble --------------------------------------------------------------------------------


def assemble(
    gateway: Gateway,
    admission: Admission,
    upstream: Upstream,
    forward: dict[str, str],
    *,
    request_id: str,
    log: Any,
    started: float,
    trace: Trace,
) -> TurnRun:
    """The turn, its driver, its transcript and its run."""
    request = admission.request
    message_id = admission.message_id
    trace.opened(request.id, message_id)
    options = _translator_options(gateway)
    turn = _turn(gateway, admission, message_id, options)
    driver = _driver(gateway, admission, upstream, turn, options, forward, started, trace)
    transcript = _transcript(gateway, admission, message_id, turn.assembler)
    prefix = _resume_prefix(admission, gateway.config.target)
    gateway.metrics.requests.labels("200").inc()
    gateway.metrics.active_streams.inc()
    run = TurnRun(
        driver,
        admission.seat,
        gateway.run_services,
        request_id=request_id,
        log=log,
        started=started,
        transcript=transcript,
        trace=trace,
        resume_prefix=prefix,
    )
    if admission.checkpoints is not None:  # (its position is in the log's bytes)
        admission.checkpoints.log = run.chunk_log  # type: ignore[assignment]
    note_answer(gateway, admission.seat, request, message_id)
    return run


def note_answer(gateway: Gateway, seat: Seat, request: ChatRequest, message_id: str) -> None:
    """The chat's newest answer, ``message_id`` (what ``expectedTurnId`` is compared with)."""
    if request.id:
        user = request.latest_user_message()
        ttl = gateway.config.total_timeout + gateway.config.resume_ttl
        gateway.line.note_answer(seat.key, message_id, user.message_id if user else "", ttl)


def _turn(
    gateway: Gateway, admission: Admission, message_id: str, translator: TranslatorOptions
) -> Turn:
    config, answers = gateway.config, admission.answers
    secret, session_id = gateway.approval_secret, admission.seat.key[0]
    agent = gateway.agent
    options = TurnOptions(
        target=config.target,
        reset_step=config.reset_step,
        message_id=message_id,
        mask_errors=config.mask_errors,
        known_tools=admission.turn_input.known_tool_calls(),
        denied_calls=[a.tool_call_id for a in answers if not a.approved],
        sign_approval=functools.partial(approval_signature, secret) if secret else None,
        on_approval=functools.partial(
            issue_approval, gateway.stores.approvals, gateway.metrics, session_id
        ),
        gateway_tools=None if agent is None else agent.names,
        app_tools=frozenset() if agent is None else agent.policy.app,
        assemble=admission.assemble,
        continued=admission.continued,
    )
    return Turn(gateway.dialect.translator(translator), options)


def _translator_options(gateway: Gateway) -> TranslatorOptions:
    """The gateway's; a loop turn's model calls share one id counter (ids never repeat)."""
    if gateway.agent is None:
        return gateway.translator_options
    return dataclasses.replace(gateway.translator_options, id_factory=counter_ids())


def _driver(
    gateway: Gateway,
    admission: Admission,
    upstream: Upstream,
    turn: Turn,
    translator: TranslatorOptions,
    forward: dict[str, str],
    started: float,
    trace: Trace,
) -> TurnDriver:
    settings, metrics, agent = gateway.driver_settings, gateway.metrics, gateway.agent
    if agent is None:
        return TurnDriver(upstream, turn, settings, started=started, counters=metrics)
    parts = agent.parts(
        admission.turn_input,
        gateway.connector,
        forward,
        functools.partial(gateway.dialect.translator, translator),
        admission.released,
        gateway.question_secret,
        trace,
    )
    steer = busy.steer_hook(gateway, admission.seat.key)
    if steer is not None:
        parts = dataclasses.replace(parts, steer=steer)
    if admission.checkpoints is not None:
        return DurableDriver(
            upstream,
            turn,
            settings,
            parts,
            admission.checkpoints,
            started=started,
            counters=metrics,
        )
    return AgentDriver(upstream, turn, settings, parts, started=started, counters=metrics)


def _transcript(
    gateway: Gateway, admission: Admission, message_id: str, assembler: MessageAssembler | None
) -> TurnTranscript | None:
    writer = gateway.store_writer
    if admission.transcripts is None or writer is None:
        return None
    assert assembler is not None  # (a recorded turn assembles its message)
    transcript = TurnTranscript(
        writer,
        admission.seat.key,
        gateway.config.target,
        admission.request,
        message_id,
        admission.continued,
        wait_for_end=gateway.stored_history,
        assembler=assembler,
    )
    transcript.begin()
    return transcript
