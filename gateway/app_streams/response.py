"""A useChat answer from an app's own events: a Starlette response, or SSE bytes for any
framework.

Both answer as the gateway answers its own POST
(:func:`~chunkbridge.gateway.app_streams.waiting.answer`): the turn
:func:`~chunkbridge.gateway.app_streams.turns.open_app_turn` opens, through the gateway's SSE
response (:class:`~chunkbridge.gateway.http.sse.TurnResponse`: the disconnect race, ``[DONE]``,
the run's end), or — a message for a busy session under a ``busy`` policy — its wait in the
session's line first (:class:`~chunkbridge.gateway.http.sse.QueuedResponse`).
:class:`UIStreamResponse` is that ASGI answer; :func:`ui_stream` runs the same answer into an
async iterator the framework reads. A Stop or a disconnect ends the turn and closes the app's
source within a second — unless the turn is resumable (a gateway with ``resume`` on and a chat
id): then, as on the gateway, it goes on into its log for the page that comes back, and ``POST
…/chat/{chat id}/stop`` stops it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.responses import Response

from chunkbridge.gateway.app_streams.turns import AppStream, app_stream, standalone
from chunkbridge.gateway.app_streams.waiting import answer
from chunkbridge.gateway.errors import GatewayError
from chunkbridge.gateway.http.intake import refusal, rejected
from chunkbridge.gateway.http.sse import QueuedResponse, TurnResponse
from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.service import Gateway
from chunkbridge.gateway.transports.app_events import EventSource
from chunkbridge.kit import CloseReason, CloseRequest, Dialect, TranslatorOptions
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.protocol_specs.ui_message_stream import RESPONSE_HEADERS
from chunkbridge.translators.core.sse_codec import DONE_FRAME, STREAM_OPEN_FRAME, encode_chunks
from chunkbridge.translators.core.turn import EventTurn, TurnOptions

__all__ = ["UIStreamResponse", "ui_stream"]

#: Seconds :func:`ui_stream` waits for its turn to end once its reader left.
_END_TIMEOUT = 5.0


class UIStreamResponse(Response):
    """A useChat answer streamed from ``events``, returnable from a Starlette or FastAPI
    route.

    ``events``: an async iterable of the dialect's events — dicts as its wire has them, or
    its Python SDK's event objects (the ``openai`` and ``anthropic`` SDKs' streams as they
    come: ``UIStreamResponse(await client.chat.completions.create(..., stream=True),
    dialect="openai-chat")``), or an awaitable or async context manager of one, entered and
    left here; or a callable returning any of these, called when the turn begins (in the
    event loop: it starts the work and returns, as ``lambda:
    client.chat.completions.create(**body)`` does) — of no argument, or of one: the chat
    request as the turn answers it. They go through the gateway's translator, stream guard,
    gating for ``target`` (the client's AI SDK major: 5 is accepted by 5, 6 and 7) and SSE
    encoding; every ending is valid; a Stop or a disconnect closes them within a second.

    ``message_id``: the answer's id (by default the message ``request`` continues, else the
    client's own). ``gateway``: a started :class:`~chunkbridge.Gateway` lends the turn its
    resume log, transcript store, telemetry and per-session rule; ``request`` (from
    :func:`~chunkbridge.parse_chat_request`) names the chat and its history, ``session_id``
    the session of its routes (by default the chat id). ``settings``: the dialect's own.

    A new user message to a session whose turn runs — an app's stream or the gateway's own,
    on any instance — is answered as the gateway's ``busy`` answers a POST to it: 409
    (``reject``); or it waits in the session's line, its answer saying its place meanwhile
    (``start``, then transient ``data-queue`` parts ``{position}``; 409 when ``queue_max``
    wait already), and runs when its turn comes (``queue``), after the running turn was stopped
    (``interrupt``: that answer's ``finish`` says ``interruptedBy``) — and under ``steer`` as
    under ``queue``, since the app's events are no agent loop to steer. A body's
    ``expectedTurnId`` that is not the chat's newest answer is refused (409) first.

    Only a callable can wait: events given as they are may be under way already (an SDK's
    stream is, once its request went out), so a message that would have to wait with them
    is refused (409, saying to pass a callable) and they are closed; when the session is
    free and nobody waits, they run. Given a callable, the upstream hears of a message only
    once its turn comes, and a callable of one argument gets the request of a message that
    waited with the answer it waited for whole, as the server has it (the client's copy is
    cut where it was when the user sent).

    Raises :class:`TypeError` or :class:`ValueError` for what no stream can be; what only
    the request can tell (the gateway not started or draining, the session busy) is answered
    with the gateway's status and text, before the stream begins.
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        events: Any,
        *,
        dialect: str | Dialect,
        target: int = 5,
        message_id: str | None = None,
        gateway: Gateway | None = None,
        request: ChatRequest | None = None,
        session_id: str | None = None,
        settings: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.stream: AppStream = app_stream(
            events,
            dialect=dialect,
            target=target,
            message_id=message_id,
            gateway=gateway,
            request=request,
            session_id=session_id,
            settings=settings,
        )
        self.status_code = 200
        self.background = None
        self.body = b""
        self._extra = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()
        ]
        sse = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in RESPONSE_HEADERS.items()]
        self.raw_headers = [*sse, *self._extra]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        started = time.monotonic()
        try:
            answered = await answer(self.stream, self._extra)
        except GatewayError as exc:
            await EventSource(self.stream.events).aclose()  # never read: closed
            await refusal(_refused(self.stream, exc, started))(scope, receive, send)
            return
        await answered(scope, receive, send)
        if self.background is not None:  # (FastAPI's background tasks: after the answer)
            await self.background()


def _refused(stream: AppStream, exc: GatewayError, started: float) -> GatewayError:
    gateway = stream.gateway
    metrics = standalone()[1].metrics if gateway is None else gateway.metrics
    log = (get_logger("chunkbridge") if gateway is None else gateway.log).bind(
        session_id=stream.session_id[:128], dialect=stream.dialect.name
    )
    return rejected(metrics, log, exc, started)


async def ui_stream(
    events: Any,
    *,
    dialect: str | Dialect,
    target: int = 5,
    message_id: str | None = None,
    gateway: Gateway | None = None,
    request: ChatRequest | None = None,
    session_id: str | None = None,
    settings: Any = None,
) -> AsyncIterator[bytes]:
    """The answer of :class:`UIStreamResponse`, as the bytes of its SSE body, for a framework
    other than Starlette: send them with the headers of
    ``chunkbridge.protocol_specs.ui_message_stream.RESPONSE_HEADERS`` (``content-type:
    text/event-stream``, ``x-vercel-ai-ui-message-stream: v1``…). ``events`` and the gateway's
    ``busy`` as there (a message that waits says its place in the stream). Closing the
    iterator (the framework does when its client goes away) ends the turn — or the wait — and
    closes ``events``; a refusal (the gateway not started, the session busy) is a stream that
    ends with its text as an ``error``."""
    stream = app_stream(
        events,
        dialect=dialect,
        target=target,
        message_id=message_id,
        gateway=gateway,
        request=request,
        session_id=session_id,
        settings=settings,
    )
    started = time.monotonic()
    try:
        answered = await answer(stream)
    except GatewayError as exc:
        await EventSource(events).aclose()
        yield STREAM_OPEN_FRAME + _refusal_body(stream, _refused(stream, exc, started))
        return
    outbox: asyncio.Queue[bytes | None] = asyncio.Queue(1)
    left = asyncio.Event()
    delivery = asyncio.create_task(_deliver(answered, outbox, left))
    try:
        while (body := await outbox.get()) is not None:
            yield body
    finally:
        left.set()  # the reader left (or the answer is over): nothing more to send
        if not outbox.empty():
            outbox.get_nowait()  # (a body being put: it goes in, the next send sees left)
        await asyncio.wait({delivery}, timeout=_END_TIMEOUT)
        if delivery.done():
            delivery.result()  # (a bug of ours: raised here, not lost in the task)


async def _deliver(
    answered: TurnResponse | QueuedResponse,
    outbox: asyncio.Queue[bytes | None],
    left: asyncio.Event,
) -> None:
    """The ASGI answer run into ``outbox`` (one body at a time: the reader's pace is the
    turn's), its client gone once the reader has ``left``; then the end of it (``None``)."""

    async def receive() -> dict[str, Any]:
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if left.is_set():
            raise OSError("the reader left")  # (as an ASGI server says a client went away)
        body = message.get("body") if message["type"] == "http.response.body" else None
        if body:
            await outbox.put(body)

    await answered({"type": "http"}, receive, send)
    if not left.is_set():
        await outbox.put(None)


def _refusal_body(stream: AppStream, error: GatewayError) -> bytes:
    """A refused stream's body: the error, as every client of the target takes it."""
    translator = stream.dialect.translator(TranslatorOptions(settings=stream.settings))
    turn = EventTurn(translator, TurnOptions(target=stream.target, message_id=stream.message_id))
    ending = turn.close(CloseRequest(CloseReason.UPSTREAM_ERROR, error.client_message))
    return encode_chunks(ending) + DONE_FRAME
