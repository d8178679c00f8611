"""An app's stream for a busy session (``busy``): the gateway's line, as its own POST takes it.

Given a started gateway whose ``busy`` is ``queue``, ``interrupt`` or ``steer``, a new user
message answered with the app's events takes its place in the session's line exactly as a POST
to the gateway does (:func:`~chunkbridge.gateway.turn.busy.line_up`): the stale guard
(``expectedTurnId``), the line shared with the gateway's own turns (across instances with
``resume = redis``), ``queue_max``, the running turn stopped under ``interrupt`` — an app's
stream or a gateway turn alike. It runs at once, or waits, answered meanwhile by
:class:`~chunkbridge.gateway.http.sse.QueuedResponse` (``start``, ``data-queue`` positions,
keep-alives; ``queue_timeout``), and opens its turn once the line admits it, with the answer it
waited for as the server has it (:func:`~chunkbridge.gateway.turn.busy.with_previous_answer`).

Two things follow from what an app's events are:

* ``steer`` waits as ``queue`` (logged ``busy.steer_as_queue``, as the gateway logs a steer
  where no loop runs): the app's events are no loop a message could go on with.
* Only events the turn opens itself can wait — a callable
  (:func:`~chunkbridge.gateway.transports.app_events.opens_later`). Events given as they are
  may be under way already (an SDK's stream whose request went out, a generator or context
  manager over one) and nothing tells, so such a message runs when the session is free and
  nobody waits, and is refused otherwise (:class:`EventsCannotWait`, 409) without joining the
  line: nothing is interrupted for it, nothing waits on its behalf.

With ``busy = reject`` (or no chat id, or not a new user message) none of this applies: the
stream holds the session's turn or is refused, as before.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import uuid

from chunkbridge.gateway.app_streams.turns import (
    AppStream,
    check_gateway,
    open_app_turn,
    stream_log,
)
from chunkbridge.gateway.errors import TurnInProgress
from chunkbridge.gateway.http.sse import QueuedResponse, TurnResponse
from chunkbridge.gateway.service import Gateway
from chunkbridge.gateway.transports.app_events import opens_later
from chunkbridge.gateway.turn import busy
from chunkbridge.gateway.turn.busy import Queued
from chunkbridge.gateway.turn.run import Seat, TurnRun

__all__ = ["EventsCannotWait", "answer"]

Headers = list[tuple[bytes, bytes]]


class EventsCannotWait(TurnInProgress):
    """A message whose answer the app began before it was let in cannot wait for the busy
    session (see the module): 409."""

    client_message = (
        "This session is already answering, and this message cannot wait its turn: its answer "
        "was started before it was let in (the app should give UIStreamResponse a callable "
        "that starts it)."
    )


async def answer(
    stream: AppStream, headers: Headers | None = None
) -> TurnResponse | QueuedResponse:
    """The ASGI answer of ``stream``: its turn, or its wait for one (``headers``: the app's
    own, on either). Raises a :class:`~chunkbridge.gateway.errors.GatewayError` before
    anything is sent: what :func:`~chunkbridge.gateway.app_streams.turns.open_app_turn`
    raises, the stale guard's and the line's refusals, :class:`EventsCannotWait`."""
    started = time.monotonic()
    request_id = uuid.uuid4().hex[:16]
    place = await _line_up(stream)
    if not isinstance(place, Queued):
        run = await open_app_turn(stream, request_id, seat=place, started=started)
        return TurnResponse(run, headers)
    log = stream_log(stream, request_id)
    log.info("busy.queued", position=place.position, kind=place.waiter.kind.value)
    waited = dataclasses.replace(stream, message_id=stream.message_id or place.message_id)
    opener = functools.partial(_open_waited, waited, place, request_id, started)
    return QueuedResponse(place, opener, request_id, log, headers, waited.message_id)


async def _line_up(stream: AppStream) -> Seat | Queued | None:
    """The stream's place in its session's line; ``None`` where no ``busy`` policy applies."""
    gateway, request = stream.gateway, stream.request
    if gateway is None or gateway.config.busy == "reject" or request is None:
        return None
    check_gateway(gateway, stream.session_id)
    may_wait = opens_later(stream.events)
    try:
        return await gateway.line_up(request, stream.session_id, steerable=False, may_wait=may_wait)
    except TurnInProgress as exc:
        if may_wait:  # (the line is full)
            raise
        raise EventsCannotWait(detail="its events were given open, not as a callable") from exc


async def _open_waited(
    stream: AppStream, queued: Queued, request_id: str, started: float, seat: Seat
) -> TurnRun:
    """The turn of a stream that waited and now holds ``seat``: its events opened only now, the
    answer it waited for as the server has it."""
    gateway: Gateway | None = stream.gateway
    assert gateway is not None and stream.request is not None
    try:
        request = await busy.with_previous_answer(gateway, stream.request, queued)
    except BaseException:
        await seat.free()
        raise
    stream = dataclasses.replace(stream, request=request)
    return await open_app_turn(stream, request_id, seat=seat, started=started)
