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

from chunkbridge.gateway.turn.run import TurnRun, until_first
from chunkbridge.protocol_specs.ui_message_stream import RESPONSE_HEADERS
from chunkbridge.translators.core.sse_codec import DONE_FRAME, STREAM_OPEN_FRAME

__all__ = ["ResumeResponse", "TurnResponse", "wait_for_disconnect"]

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


class TurnResponse:
    """The SSE body of one turn: the run delivered through ASGI ``send``, then ``[DONE]``
    (``headers``: more response headers, an app's own)."""

    def __init__(self, run: TurnRun, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.run = run
        self.headers = headers

    async def __call__(self, scope: Any, receive: Any, send: Send) -> None:
        run = self.run

        def write(body: bytes) -> Awaitable[None]:
            # hands back the server's awaitable instead of being a coroutine itself (one
            # coroutine less per write)
            return send({"type": "http.response.body", "body": body, "more_body": True})

        try:
            await _open(send, run.request_id, self.headers)
            if await run.deliver(write, wait_for_disconnect(receive)):
                await send({"type": "http.response.body", "body": DONE_FRAME, "more_body": False})
                run.count_done_frame()
        except OSError:  # the client went away during a send (ASGI spec >= 2.4 servers)
            run.client_disconnected = True
        finally:
            await run.end()


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
            finished = await until_first(self._replay(send), wait_for_disconnect(receive))
        if finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _replay(self, send: Send) -> None:
        async for body in self.bodies:
            await send({"type": "http.response.body", "body": body, "more_body": True})
