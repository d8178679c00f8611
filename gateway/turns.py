"""Opening a turn (the HTTP POST and the WebSocket ``send`` share it) and its end-of-turn log."""

from __future__ import annotations

import functools
import time
import uuid
from typing import Any

from chunkbridge.gateway.approvals import QuestionAnswer, claim_answers, issued_question
from chunkbridge.gateway.driver import TurnDriver
from chunkbridge.gateway.errors import BadRequest, GatewayError
from chunkbridge.gateway.state import GatewayState
from chunkbridge.gateway.streaming import ChatStream
from chunkbridge.kit import RequestRejected, Translator, TurnInput
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL, approval_signature
from chunkbridge.translators.core.closing import CloseReason
from chunkbridge.translators.core.guard import IssuedApproval
from chunkbridge.translators.core.turn import Turn, TurnOptions

__all__ = ["log_stream_end", "open_turn"]


async def open_turn(
    state: GatewayState,
    chat_request: ChatRequest,
    session_id: str,
    forward: dict[str, str],
    request_id: str,
    started: float,
    log: Any,
) -> ChatStream:
    """Start one turn upstream (the session's turn held, the upstream opened, the chunk log
    begun when resume is on) and the :class:`ChatStream` that delivers it, over HTTP or a
    WebSocket. Raises before anything is streamed: the caller answers the error."""
    config = state.config
    state.acquire_turn(session_id)
    resume = state.resume if chat_request.id else None  # no chat id: nothing to resume by
    member = ""
    try:
        if resume is not None:  # the rule across instances (redis); a no-op in one process
            member = await resume.acquire_turn(session_id, config.max_turns_per_session)
        run_id = uuid.uuid4().hex
        turn_input = TurnInput(
            chat_request, session_id, run_id, state.dialect_settings, config.history.value
        )
        try:
            approvals = turn_input.approval_answers
            questions = [
                QuestionAnswer(call.tool_call_id)
                for call in turn_input.answered_calls()
                if call.tool_name == QUESTION_TOOL
            ]
            # the first request with an answer wins; the upstream hears only checked answers
            try:
                await claim_answers(
                    state.approvals, session_id, approvals, questions, config.approval_secret
                )
            except GatewayError:
                state.metrics.approvals.labels("refused").inc(len(approvals))
                raise
            try:
                upstream = await state.connector.open(turn_input, forward)
            except BaseException:
                if approvals or questions:  # it never heard of them: they may be sent again
                    await state.approvals.release(session_id, [*approvals, *questions])
                raise
        except RequestRejected as exc:
            raise BadRequest(exc.client_message) from exc
        for answer in approvals:  # delivered
            state.metrics.approvals.labels("approved" if answer.approved else "denied").inc()
    except BaseException:
        state.release_turn(session_id)
        if resume is not None:
            await resume.release_turn(session_id, member)
        raise

    message_id = chat_request.response_message_id() or f"msg_{run_id[:24]}"
    translator = state.dialect.translator(state.translator_options)
    secret = config.approval_secret
    turn = Turn(
        translator,
        TurnOptions(
            target=config.target,
            message_id=message_id,
            mask_errors=config.mask_errors,
            known_tools=turn_input.known_tool_calls(),
            denied_calls=[a.tool_call_id for a in approvals if not a.approved],
            sign_approval=functools.partial(approval_signature, secret) if secret else None,
            on_approval=functools.partial(_issue, state, session_id),
        ),
    )
    driver = TurnDriver(
        upstream, turn, state.driver_settings, started=started, counters=state.metrics
    )
    state.metrics.requests.labels("200").inc()
    state.metrics.active_streams.inc()

    key = (session_id, chat_request.id)

    async def release() -> None:
        # The session is free as soon as the client has its answer (ChatStream.turn_over);
        # the questions the agent waits on become answerable first (once each).
        if not driver.abandoned and turn.close_reason is CloseReason.COMPLETED:
            for question_id in turn.open_questions:
                state.approvals.issue(session_id, issued_question(question_id))
        state.release_turn(session_id)
        if resume is not None:
            await resume.release_turn(session_id, member)

    async def finished(stream: ChatStream) -> None:
        # Takes the stream as an argument: a closure over it would make stream and callback a
        # reference cycle, keeping every finished turn (upstream socket, translator, buffers)
        # alive until the cyclic garbage collector happens to run.
        if resume is not None and stream.log is not None:
            resume.finished(key, stream.log)  # type: ignore[arg-type]  # its own log kind
        state.forget_stream(stream)
        log_stream_end(state, log, stream, translator, started)

    stream = ChatStream(
        driver=driver,
        # with resume on, a client that goes away detaches: the turn runs on into its log
        on_disconnect="detach" if resume is not None else config.on_disconnect,
        request_id=request_id,
        on_done=finished,
        release=release,
    )
    if resume is not None:
        stream.log = resume.begin(key, stream)
    state.streams.add(stream)
    return stream


def _issue(state: GatewayState, session_id: str, approval: IssuedApproval) -> None:
    """An approval the stream requests: into the ledger (answers are accepted only for it)."""
    state.approvals.issue(session_id, approval)
    state.metrics.approvals.labels("requested").inc()


def log_stream_end(
    state: GatewayState, log: Any, stream: ChatStream, translator: Translator, started: float
) -> None:
    driver = stream.driver
    turn = driver.turn
    duration = time.monotonic() - started
    metrics = state.metrics
    metrics.active_streams.dec()
    metrics.stream_duration.observe(duration)
    close_reason = turn.close_reason.value if turn.close_reason is not None else "unfinished"
    metrics.stream_outcomes.labels(close_reason).inc()
    if driver.upstream_error is not None:
        metrics.upstream_errors.labels(type(driver.upstream_error).__name__).inc()
    error = str(driver.upstream_error) if driver.upstream_error is not None else None
    if turn.internal_error is not None:
        metrics.internal_errors.inc()
        error = f"{type(turn.internal_error).__name__}: {turn.internal_error}"[:500]
        log.error("turn.internal_error", exc_info=turn.internal_error)
    unknown = sum(v for k, v in translator.stats.items() if k.startswith("unknown-event:"))
    metrics.unknown_events.inc(unknown)
    if driver.first_write_at is not None:
        metrics.time_to_first_chunk.observe(driver.first_write_at - started)
    log.info(
        "stream.end",
        status=200,
        close_reason=close_reason,
        finish_reason=turn.finish_reason,
        timeout=driver.timeout.value if driver.timeout is not None else None,
        duration_ms=round(duration * 1000, 1),
        upstream_events=turn.events,
        chunks=driver.events_out,
        bytes=driver.bytes_out,
        unknown_events=unknown,
        malformed_events=translator.stats.get("malformed-event", 0),
        guard_repairs=sum(turn.guard.repairs.values()),
        conversions=sum(turn.guard.gate.conversions.values()),
        approvals_requested=len(turn.guard.approvals_issued),
        client_disconnected=stream.client_disconnected,
        error=error,
    )
