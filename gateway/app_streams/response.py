"""A useChat answer from an app's own events: a Starlette response, or SSE bytes for any
framework.

Both run the turn :func:`~chunkbridge.gateway.app_streams.turns.open_app_turn` opens, exactly
as the gateway runs its own: :class:`UIStreamResponse` through the gateway's SSE response
(:class:`~chunkbridge.gateway.http.sse.TurnResponse`: the disconnect race, ``[DONE]``, the
run's end), :func:`ui_stream` through an async iterator the framework reads. A Stop or a
disconnect ends the turn and closes the app's source within a second — unless the turn is
resumable (a gateway with ``resume`` on and a chat id): then, as on the gateway, it goes on
into its log for the page that comes back, and ``POST …/chat/{chat id}/stop`` stops it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.responses import Response

from chunkbridge.gateway.app_streams.turns import AppStream, app_stream, open_app_turn, standalone
from chunkbridge.gateway.errors import GatewayError
from chunkbridge.gateway.http.intake import refusal, rejected
from chunkbridge.gateway.http.sse import TurnResponse
from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.service import Gateway
from chunkbridge.gateway.transports.app_events import EventSource
from chunkbridge.gateway.turn.run import TurnRun
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
    left here. They go through the gateway's translator, stream guard, gating for
    ``target`` (the client's AI SDK major: 5 is accepted by 5, 6 and 7) and SSE encoding;
    every ending is valid; a Stop or a disconnect closes them within a second.

    ``message_id``: the answer's id (by default the message ``request`` continues, else the
    client's own). ``gateway``: a started :class:`~chunkbridge.Gateway` lends the turn its
    resume log, transcript store, telemetry and per-session rule; ``request`` (from
    :func:`~chunkbridge.parse_chat_request`) names the chat and its history, ``session_id``
    the session of its routes (by default the chat id). ``settings``: the dialect's own.

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
            run = await open_app_turn(self.stream)
        except GatewayError as exc:
            await EventSource(self.stream.events).aclose()  # never read: closed
            await refusal(_refused(self.stream, exc, started))(scope, receive, send)
            return
        await TurnResponse(run, self._extra)(scope, receive, send)
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
    text/event-stream``, ``x-vercel-ai-ui-message-stream: v1``…). Closing the iterator (the
    framework does when its client goes away) ends the turn and closes ``events``; a refusal
    (the gateway not started, the session busy) is a stream that ends with its text as an
    ``error``."""
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
        run = await open_app_turn(stream)
    except GatewayError as exc:
        await EventSource(events).aclose()
        yield STREAM_OPEN_FRAME + _refusal_body(stream, _refused(stream, exc, started))
        return
    outbox: asyncio.Queue[bytes | None] = asyncio.Queue(1)
    left = asyncio.Event()
    delivery = asyncio.create_task(_deliver(run, outbox, left))
    try:
        yield STREAM_OPEN_FRAME
        while (body := await outbox.get()) is not None:
            yield body
    finally:
        left.set()  # the reader left (or the turn is over): nothing more to send
        await asyncio.wait({delivery}, timeout=_END_TIMEOUT)
        if delivery.done():
            delivery.result()  # (a bug of ours: raised here, not lost in the task)


async def _deliver(run: TurnRun, outbox: asyncio.Queue[bytes | None], left: asyncio.Event) -> None:
    """The run written into ``outbox`` (one body at a time: the reader's pace is the turn's)
    until the reader has ``left``, then ``[DONE]`` and the end of it (``None``)."""
    try:
        if await run.deliver(outbox.put, left.wait()):
            await outbox.put(DONE_FRAME)
            run.count_done_frame()
    finally:
        await run.end()
        if not left.is_set():
            await outbox.put(None)


def _refusal_body(stream: AppStream, error: GatewayError) -> bytes:
    """A refused stream's body: the error, as every client of the target takes it."""
    translator = stream.dialect.translator(TranslatorOptions(settings=stream.settings))
    turn = EventTurn(translator, TurnOptions(target=stream.target, message_id=stream.message_id))
    ending = turn.close(CloseRequest(CloseReason.UPSTREAM_ERROR, error.client_message))
    return encode_chunks(ending) + DONE_FRAME
