"""An app's own stream as a turn: its events through the gateway's pipeline.

:class:`~chunkbridge.gateway.app_streams.response.UIStreamResponse` and
:func:`~chunkbridge.gateway.app_streams.response.ui_stream` start here. :func:`open_app_turn`
builds the objects a gateway turn is made of — the dialect's translator in a turn for the
client's target (:class:`~chunkbridge.translators.core.turn.EventTurn`: its frames are the
app's events), the turn driver over an
:class:`~chunkbridge.gateway.transports.app_events.EventSource`, and the
:class:`~chunkbridge.gateway.turn.run.TurnRun` that owns the turn — so translation, the stream
guard, target gating, SSE encoding, keep-alives, timeouts and every ending are the gateway's.

Given a gateway, the turn is one of its turns: it holds the session's turn (409 while another
runs, as the gateway's POST answers; or its place in the session's line under a ``busy`` policy:
:mod:`~chunkbridge.gateway.app_streams.waiting`), notes the chat's newest answer (what
``expectedTurnId`` is compared with), writes the resume log (``resume`` on and a chat id:
``GET …/chat/{chat id}/stream`` replays it), the transcript (``store`` on and a chat id), its
trace and metrics, and the gateway's shutdown drains it. Without one, it has services of its
own: no resume, no store, no telemetry.
"""

from __future__ import annotations

import functools
import inspect
import sys
import time
import uuid
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.errors import ServiceUnavailable
from chunkbridge.gateway.http.intake import check_session
from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.registry import get_dialect
from chunkbridge.gateway.service import NOT_STARTED, Gateway
from chunkbridge.gateway.stores.memory import MemoryApprovalLedger
from chunkbridge.gateway.telemetry import NO_TRACE, NoTrace, Telemetry, TurnTrace
from chunkbridge.gateway.transports.app_events import EventSource, check_source, opens_later
from chunkbridge.gateway.turn.driver import DriverSettings, TurnDriver
from chunkbridge.gateway.turn.opening import hold_seat, note_answer, resume_prefix
from chunkbridge.gateway.turn.run import OpenTurns, RunServices, Seat, TurnRun
from chunkbridge.gateway.turn.transcript import TurnTranscript
from chunkbridge.kit import Dialect, TranslatorOptions, TurnInput, UnknownEventPolicy
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.translators.core.turn import EventTurn, TurnOptions

__all__ = [
    "AppStream",
    "GatewayNotStarted",
    "app_stream",
    "check_gateway",
    "open_app_turn",
    "stream_log",
    "standalone",
]

#: The AI SDK majors a stream can be written for.
TARGETS = (5, 6, 7)


class GatewayNotStarted(ServiceUnavailable):
    """The gateway a stream uses is not started (:meth:`Gateway.lifespan`): a 503 saying so."""

    client_message = NOT_STARTED

    def __init__(self) -> None:
        super().__init__(0, detail="the gateway's lifespan is not running")
        self.headers = {}


@dataclass(frozen=True, slots=True)
class AppStream:
    """An app's stream: its events, their dialect, and how the answer is written."""

    events: Any
    dialect: Dialect
    #: The dialect's settings (its translator reads some: tool kinds…).
    settings: Any
    target: int
    message_id: str | None
    gateway: Gateway | None
    #: The chat request it answers (for resume, the transcript, a continued message).
    request: ChatRequest | None
    session_id: str
    #: ``events`` is a callable that takes the request (see :func:`app_stream`).
    given_request: bool = False


def app_stream(
    events: Any,
    *,
    dialect: str | Dialect,
    target: int,
    message_id: str | None,
    gateway: Gateway | None,
    request: ChatRequest | None,
    session_id: str | None,
    settings: Any,
) -> AppStream:
    """The stream described, checked at once: what is wrong here is the app's bug
    (:class:`TypeError`, :class:`ValueError`), raised where the app builds its response.
    ``events`` may be a callable that opens them, of no argument or one (then given the chat
    request as the turn answers it)."""
    check_source(events)
    given_request = opens_later(events) and _takes_request(events)
    described = dialect if isinstance(dialect, Dialect) else get_dialect(dialect)
    if target not in TARGETS:
        raise ValueError(f"target {target!r}: the AI SDK major of the client, 5, 6 or 7")
    if isinstance(settings, BaseModel):
        chosen = settings
    else:
        try:
            chosen = described.settings.model_validate(settings or {})
        except ValidationError as exc:
            raise ValueError(f"invalid settings for dialect {described.name}: {exc}") from exc
    if session_id is None:
        session_id = request.id if request is not None and request.id else "default"
    return AppStream(
        events, described, chosen, target, message_id, gateway, request, session_id, given_request
    )


def _takes_request(opens: Any) -> bool:
    """Whether a callable that opens the events wants the request (one positional parameter
    without a default); :class:`TypeError` when it wants more."""
    try:
        parameters = inspect.signature(opens).parameters.values()
    except (TypeError, ValueError):  # (a builtin that says nothing: called with none)
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    wanted = [p for p in parameters if p.kind in positional and p.default is p.empty]
    if len(wanted) > 1:
        raise TypeError(
            "events: a callable that opens them takes no argument, or one (the chat request)"
        )
    return bool(wanted)


@cache
def standalone() -> tuple[OpenTurns, RunServices, DriverSettings]:
    """What the streams given no gateway share: their own turns, services, and the
    gateway's default timeouts and keep-alives."""
    config = GatewayConfig()
    settings = DriverSettings(
        first_event_timeout=config.first_event_timeout,
        idle_timeout=config.idle_timeout,
        total_timeout=config.total_timeout,
        keepalive_interval=config.keepalive_interval,
        flush_interval=config.flush_interval,
        question_settle=config.question_settle,
    )
    # (the questions such a stream leaves are answered to the app, which no gateway checks)
    services = RunServices(MemoryApprovalLedger(60.0), Metrics(), "abort")
    return OpenTurns(), services, settings


@cache
def _telemetry(dialect: Dialect) -> Telemetry:
    return Telemetry(dialect.name, dialect.genai_provider, None)


def check_gateway(gateway: Gateway, session_id: str) -> None:
    """What a stream given ``gateway`` is refused for before anything else: the gateway not
    started (503) or draining (503), a bad session id (400)."""
    if not gateway.started:
        raise GatewayNotStarted()
    check_session(gateway.draining, session_id)


def stream_log(stream: AppStream, request_id: str) -> Any:
    """The stream's log, bound as a gateway request's is."""
    log = get_logger("chunkbridge") if stream.gateway is None else stream.gateway.log
    return log.bind(
        request_id=request_id, session_id=stream.session_id[:128], dialect=stream.dialect.name
    )


async def open_app_turn(
    stream: AppStream,
    request_id: str | None = None,
    *,
    seat: Seat | None = None,
    started: float | None = None,
) -> TurnRun:
    """The turn that answers ``stream`` (see the module). Raises a
    :class:`~chunkbridge.gateway.errors.GatewayError` before anything is streamed: the
    gateway not started or draining (503), a bad session id (400), the session's turn taken
    (409). ``seat``: the session's turn the stream holds already (its line admitted it)."""
    started = time.monotonic() if started is None else started
    request_id = request_id or uuid.uuid4().hex[:16]
    gateway = stream.gateway
    request = stream.request or ChatRequest(messages=[])
    if gateway is None:
        turns, services, settings = standalone()
        turns.hold(stream.session_id, sys.maxsize)
        seat = Seat((stream.session_id, request.id), turns)
    else:
        services, settings = gateway.run_services, gateway.driver_settings
        if seat is None:
            check_gateway(gateway, stream.session_id)
            seat = await hold_seat(gateway, request, stream.session_id)
    log = stream_log(stream, request_id)
    try:
        return _assemble(stream, request, seat, services, settings, log, request_id, started)
    except BaseException:
        await seat.free()
        raise


def _assemble(
    stream: AppStream,
    request: ChatRequest,
    seat: Seat,
    services: RunServices,
    settings: DriverSettings,
    log: Any,
    request_id: str,
    started: float,
) -> TurnRun:
    gateway = stream.gateway
    config = None if gateway is None else gateway.config
    continued_message = request.continued_message()
    continued = (
        None
        if continued_message is None
        else continued_message.model_dump(mode="json", exclude_unset=True)
    )
    transcripts = None if gateway is None or not request.id else gateway.stores.transcripts
    message_id = stream.message_id or request.response_message_id()
    if message_id is None and (seat.resume is not None or transcripts is not None):
        message_id = f"msg_{uuid.uuid4().hex[:24]}"  # the log and the record name the answer
    turn = _turn(stream, request, config, message_id, continued, seat, transcripts is not None)
    trace: TurnTrace | NoTrace = NO_TRACE
    if gateway is not None and gateway.telemetry is not None:
        trace = _telemetry(stream.dialect).turn(stream.session_id, request_id)
        trace.opened(request.id, message_id or "")
    events = functools.partial(stream.events, request) if stream.given_request else stream.events
    source = EventSource(events, log, getattr(turn.translator, "read_error", None))
    driver = TurnDriver(source, turn, settings, started=started, counters=services.metrics)
    transcript = None
    if gateway is not None and transcripts is not None and gateway.store_writer is not None:
        assert turn.assembler is not None and message_id is not None
        transcript = TurnTranscript(
            gateway.store_writer,
            seat.key,
            stream.target,
            request,
            message_id,
            continued,
            wait_for_end=gateway.stored_history,
            assembler=turn.assembler,
        )
        transcript.begin()
    if gateway is not None and message_id:
        note_answer(gateway, seat, request, message_id)
    services.metrics.requests.labels("200").inc()
    services.metrics.active_streams.inc()
    return TurnRun(
        driver,
        seat,
        services,
        request_id=request_id,
        log=log,
        started=started,
        transcript=transcript,
        trace=trace,
        resume_prefix=b"" if seat.resume is None else resume_prefix(continued, stream.target),
    )


def _turn(
    stream: AppStream,
    request: ChatRequest,
    config: GatewayConfig | None,
    message_id: str | None,
    continued: dict[str, Any] | None,
    seat: Seat,
    recorded: bool,
) -> EventTurn:
    """The dialect's translator in a turn for the stream's client, continuing the message the
    request continues (its tool calls known to the guard)."""
    translator = stream.dialect.translator(
        TranslatorOptions(
            unknown_events=UnknownEventPolicy(config.unknown_events if config else "forward"),
            dynamic_tools=config.dynamic_tools if config else False,
            settings=stream.settings,
        )
    )
    known = TurnInput(request, stream.session_id, "").known_tool_calls() if continued else []
    options = TurnOptions(
        target=stream.target,
        reset_step=bool(config and config.reset_step and stream.target == 7),
        message_id=message_id,
        mask_errors=bool(config and config.mask_errors),
        known_tools=known,
        assemble=seat.resume is not None or recorded,
        continued=continued,
    )
    return EventTurn(translator, options)
