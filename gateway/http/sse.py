"""The two SSE responses: a turn's (the POST) and a resumed one's (``GET …/stream``).

Small ASGI callables in the manner of Starlette's ``StreamingResponse``: the same header set,
the same ``: stream-open`` comment, and the same disconnect race
(:func:`~chunkbridge.gateway.turn.run.until_first` against ``http.disconnect``: under uvicorn,
the only thing that notices a client going away). Every way a turn can end produces a valid
ending: the driver writes the turn's closing chunks (open parts closed, tools settled, ``error``
when it is one, exactly one ``finish``), then ``[DONE]`` follows.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from chunkbridge.gateway.errors import GatewayError
from chunkbridge.gateway.stores import StoreUnavailable
from chunkbridge.gateway.stores.line import Joined
from chunkbridge.gateway.turn.busy import Queued
from chunkbridge.gateway.turn.run import Seat, TurnRun, until_first
from chunkbridge.gateway.turn.steering import follow
from chunkbridge.protocol_specs.ui_message_stream import RESPONSE_HEADERS
from chunkbridge.translators.core.sse_codec import (
    DONE_FRAME,
    KEEPALIVE_FRAME,
    STREAM_OPEN_FRAME,
    encode_chunk,
    encode_chunks,
)

__all__ = ["QueuedResponse", "ResumeResponse", "TurnResponse", "wait_for_disconnect"]

#: The ``error`` of a message that waited ``queue_timeout`` for its turn.
QUEUE_TIMEOUT_TEXT = "The session stayed busy for too long; the message was not answered."
#: The ``error`` of a message whose place in the line lapsed (its instance lost Redis).
LOST_PLACE_TEXT = "The message lost its place in the queue; please send it again."

#: The response headers of every stream (``x-request-id`` is added per response).
_HEADERS = [(name.encode(), value.encode()) for name, value in RESPONSE_HEADERS.items()]

Send = Callable[[dict[str, Any]], Awaitable[None]]


async def wait_for_disconnect(receive: Any) -> None:
    """Until the ASGI client goes away (the only way uvicorn tells a streaming response)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def _open(
    send: Send, request_id: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [*_HEADERS, (b"x-request-id", request_id.encode()), *(extra or ())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": STREAM_OPEN_FRAME, "more_body": True})


def _writer(send: Send) -> Callable[[bytes], Awaitable[None]]:
    def write(body: bytes) -> Awaitable[None]:
        # hands back the server's awaitable instead of being a coroutine itself (one
        # coroutine less per write)
        return send({"type": "http.response.body", "body": body, "more_body": True})

    return write


async def _deliver(
    run: TurnRun,
    receive: Any,
    send: Send,
    opens: bool = True,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """The run through ``send`` (``opens``: the response's head first, with ``headers`` too),
    then ``[DONE]``; the run's end whatever happens."""
    try:
        if opens:
            await _open(send, run.request_id, headers)
        if await run.deliver(_writer(send), wait_for_disconnect(receive)):
            await send({"type": "http.response.body", "body": DONE_FRAME, "more_body": False})
            run.count_done_frame()
    except OSError:  # the client went away during a send (ASGI spec >= 2.4 servers)
        run.client_disconnected = True
    finally:
        await run.end()


class TurnResponse:
    """The SSE body of one turn: the run delivered through ASGI ``send``, then ``[DONE]``
    (``headers``: more response headers, an app's own)."""

    def __init__(self, run: TurnRun, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.run = run
        self.headers = headers

    async def __call__(self, scope: Any, receive: Any, send: Send) -> None:
        await _deliver(self.run, receive, send, headers=self.headers)


def queue_chunk(position: int) -> dict[str, Any]:
    """The transient ``data-queue`` part: a waiting request's position (0: it runs)."""
    return {"type": "data-queue", "data": {"position": position}, "transient": True}


def error_ending_chunks(text: str) -> list[dict[str, Any]]:
    """How a request that waited ends without its turn: ``error`` + ``finish``."""
    return [{"type": "error", "errorText": text}, {"type": "finish", "finishReason": "error"}]


class QueuedResponse:
    """The SSE body of a request that waits for its session's turn (``busy``): ``start`` (the
    answer's id) at once, then a transient ``data-queue`` part with its position on entering
    and whenever it changes (1: it runs next; 0: it runs now), keep-alive comments meanwhile;
    once it holds the turn, the turn's own stream (its ``start`` repeats the id) as
    :class:`TurnResponse` delivers it. A request
    that waits ``queue_timeout``, or cannot open its turn after waiting, ends with ``error`` +
    ``finish``. A client that goes away leaves the line (those behind it move up).
    ``headers``: more response headers (an app's own); ``message_id``: the answer's id when
    its turn names it otherwise (an app's stream given one)."""

    def __init__(
        self,
        queued: Queued,
        open_turn: Callable[[Seat], Awaitable[TurnRun]],
        request_id: str,
        log: Any,
        headers: list[tuple[bytes, bytes]] | None = None,
        message_id: str | None = None,
    ) -> None:
        self.queued = queued
        self.open_turn = open_turn
        self.request_id = request_id
        self.log = log
        self.headers = headers
        self.message_id = message_id or queued.message_id
        self._seat: Seat | None = None
        #: The running turn took it as a steer (its answer is that turn's next one).
        self._joined = False

    async def __call__(self, scope: Any, receive: Any, send: Send) -> None:
        queued, write = self.queued, _writer(send)
        run: TurnRun | None = None
        try:
            await _open(send, self.request_id, self.headers)
            await write(encode_chunk({"type": "start", "messageId": self.message_id}))
            if not await until_first(self._wait(write), wait_for_disconnect(receive)):
                self.log.info("busy.left", position=queued.position)
                queued.gateway.metrics.busy.labels("left").inc()
                return  # the client went away
            if self._joined:
                await self._follow(receive, send)
                return
            seat, self._seat = self._seat, None
            if seat is None:
                self.log.info("busy.timeout", status=200)
                await self._fail(send, QUEUE_TIMEOUT_TEXT)
                return
            try:
                run = await self.open_turn(seat)
            except Exception as exc:  # (the waiting response began: an error chunk now)
                if isinstance(exc, GatewayError):
                    self.log.warning(
                        "busy.open_failed", error=type(exc).__name__, detail=exc.detail
                    )
                    await self._fail(send, exc.client_message)
                else:  # a bug of ours: the detail goes to the log only
                    self.log.error("busy.open_failed", exc_info=exc)
                    await self._fail(send, GatewayError.client_message)
                return
        except OSError:
            return  # the client went away during a send
        except StoreUnavailable as exc:  # its place lapsed, or the line is out of reach
            self.log.warning("busy.lost_place", error=str(exc)[:200])
            with contextlib.suppress(OSError):
                await self._fail(send, LOST_PLACE_TEXT)
            return
        except GatewayError as exc:  # the instance drains
            self.log.info("busy.ended", error=type(exc).__name__, detail=exc.detail)
            with contextlib.suppress(OSError):
                await self._fail(send, exc.client_message)
            return
        finally:
            if run is None:
                await queued.leave()
                if self._seat is not None:  # (admitted as its client went away)
                    await self._seat.free()
        await _deliver(run, receive, send, opens=False)

    async def _wait(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        async def say(position: int) -> None:
            await write(encode_chunk(queue_chunk(position)))

        async def keepalive() -> None:
            await write(KEEPALIVE_FRAME)

        place = await self.queued.wait(say, keepalive)
        self._joined = isinstance(place, Joined)
        self._seat = place if isinstance(place, Seat) else None
        if place is not None:
            await say(0)  # it runs: 0, what a page clears its "waiting" sign on

    async def _follow(self, receive: Any, send: Send) -> None:
        """The running turn took the message as a steer: its answer, the turn's next one, is
        read from the chat's chunk log (:func:`~chunkbridge.gateway.turn.steering.follow`)."""
        queued = self.queued
        bodies = await follow(queued.gateway.stores.resume, queued.key, queued.message_id)
        if bodies is None:
            self.log.warning("busy.steer_unfound")
            await self._fail(send, LOST_PLACE_TEXT)
            return
        await queued.leave()  # (found: the next message may steer that answer)
        relay = ResumeResponse(bodies, self.request_id)
        finished = False
        with contextlib.suppress(Exception):  # the store failed mid-way: the body just ends
            finished = await until_first(relay.replay(send), wait_for_disconnect(receive))
        if finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    async def _fail(send: Send, text: str) -> None:
        body = encode_chunks(error_ending_chunks(text)) + DONE_FRAME
        await send({"type": "http.response.body", "body": body, "more_body": False})


class ResumeResponse:
    """The resumed SSE body: the log replayed from its first chunk, then followed live. A reader
    that disconnects stops reading; the producer does not notice."""

    def __init__(self, bodies: AsyncIterator[bytes], request_id: str) -> None:
        self.bodies = bodies
        self.request_id = request_id

    async def __call__(self, scope: Any, receive: Any, send: Send) -> None:
        await _open(send, self.request_id)
        finished = False
        with contextlib.suppress(Exception):  # the store failed mid-way: the body just ends
            finished = await until_first(self.replay(send), wait_for_disconnect(receive))
        if finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def replay(self, send: Send) -> None:
        """Every body of the log, as it comes (after the response's head)."""
        async for body in self.bodies:
            await send({"type": "http.response.body", "body": body, "more_body": True})
