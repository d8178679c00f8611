"""The SSE response of one chat turn: a small ASGI callable around the turn driver.

In the manner of Starlette's ``StreamingResponse`` with its disconnect race: it sends the headers
and a ``: stream-open`` comment, runs :meth:`chunkbridge.gateway.driver.TurnDriver.run` with the
ASGI ``send`` as the writer, ends with ``[DONE]``, and meanwhile a listener task waits for
``http.disconnect``. Under uvicorn that listener is the only thing that notices a client going away;
when it does, the driver's task is cancelled and the ``finally`` either aborts the upstream
(``on_disconnect = "abort"``: the abort frame goes upstream, the socket is closed within a second)
or lets the turn run to its end with nobody reading (``"detach"``).

The session's turn is released the moment the turn is over for the client — before its last
bytes (``[DONE]``) go out — so a continuation sent the instant the stream ends (an app's
``sendAutomaticallyWhen``) is never refused with 409; closing the upstream goes on after that
and cannot touch the next turn: no abort frame goes to an upstream whose turn completed. A turn
the gateway abandons (a stop, a timeout, a client gone) releases it only once its abort frame
is written, so that frame cannot reach a next turn's agent first.

Every way a turn can end produces a valid ending: the driver writes the turn's closing chunks (open
parts closed, tools settled, ``error`` when it is one, exactly one ``finish``), then ``[DONE]``
follows. The driver's :meth:`~chunkbridge.gateway.driver.TurnDriver.stop` ends it early on SIGTERM,
with the same discipline.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from chunkbridge.gateway.driver import TurnDriver
from chunkbridge.protocol_specs.ui_message_stream import RESPONSE_HEADERS
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.sse_codec import DONE_FRAME, STREAM_OPEN_FRAME

__all__ = ["ChatStream", "ChunkSink", "wait_for_disconnect"]


async def wait_for_disconnect(receive: Any) -> None:
    """Until the ASGI client goes away (the only way uvicorn tells a streaming response)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


class ChunkSink(Protocol):
    """Where a resumable turn's bodies also go (a resume store's chunk log)."""

    def append(self, body: bytes) -> None: ...


#: The response headers every turn sends (``x-request-id`` is added per turn).
_HEADERS = [(name.encode(), value.encode()) for name, value in RESPONSE_HEADERS.items()]
_SHUTDOWN = CloseRequest(CloseReason.SHUTDOWN)
_ABORTED = CloseRequest(CloseReason.ABORTED)


async def _discard(body: bytes) -> None:
    pass


class ChatStream:
    def __init__(
        self,
        *,
        driver: TurnDriver,
        on_disconnect: str,
        request_id: str,
        on_done: Callable[[ChatStream], Awaitable[None]],
        release: Callable[[], Awaitable[None]] | None = None,
        log: ChunkSink | None = None,
    ) -> None:
        self.driver = driver
        #: Frees the session's turn (called once; see the module docstring).
        self._release = release
        #: With resume on: every body written also goes here, for readers that (re)join.
        self.log: ChunkSink | None = log
        self.on_disconnect = on_disconnect
        self.request_id = request_id
        self.on_done = on_done
        self.client_disconnected = False
        #: The background task of a detached turn (a strong reference keeps it alive).
        self.detached_task: asyncio.Task[None] | None = None
        self._send: Any = None

    def shutdown(self) -> None:
        """End the turn now (SIGTERM drain): the client gets a valid ending, the upstream the
        abort frame."""
        self.driver.stop(_SHUTDOWN)

    def stop(self) -> None:
        """End the turn as a client abort would (the stop request of resumable streams)."""
        self.driver.stop(_ABORTED)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = [*_HEADERS, (b"x-request-id", self.request_id.encode())]
        self._send = send
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": STREAM_OPEN_FRAME, "more_body": True})
            write = self.tee(self._write)
            if await self.pump(write, self._listen_for_disconnect(receive)):
                await self.turn_over()
                await send({"type": "http.response.body", "body": DONE_FRAME, "more_body": False})
                self.driver.bytes_out += len(DONE_FRAME)
                self.driver.counters.chunks_out += 1
        except OSError:  # the client went away during a send (ASGI spec >= 2.4 servers)
            self.client_disconnected = True
        finally:
            await self.end()

    async def pump(self, write: Callable[[bytes], Awaitable[None]], disconnected: Any) -> bool:
        """Run the driver with ``write`` until the turn is over (``True``; the log gets its
        ``[DONE]``) or the ``disconnected`` awaitable completes first (``False``)."""
        pump = asyncio.create_task(self.driver.run(write))
        listener = asyncio.ensure_future(disconnected)
        done, _ = await asyncio.wait({pump, listener}, return_when=asyncio.FIRST_COMPLETED)
        if pump in done:
            listener.cancel()
            pump.result()
            if self.log is not None:
                self.log.append(DONE_FRAME)
            return True
        self.client_disconnected = True
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pump
        return False

    @property
    def must_abort(self) -> bool:
        """The upstream must hear the abort frame: the gateway ended the turn itself, or our
        own bug did."""
        driver = self.driver
        return driver.abandoned or driver.turn.internal_error is not None

    async def turn_over(self) -> None:
        """The turn ended for the client: free the session now, unless the upstream must hear
        the abort frame first (then :meth:`end` frees it after the close)."""
        if not self.must_abort:
            await self.release()

    async def release(self) -> None:
        """Free the session's turn (once)."""
        release, self._release = self._release, None
        if release is not None:
            await release()

    def tee(self, write: Callable[[bytes], Awaitable[None]]) -> Callable[[bytes], Awaitable[None]]:
        """``write`` that also puts what it writes into the chunk log, if there is one."""
        log = self.log
        if log is None:
            return write

        def both(body: bytes) -> Awaitable[None]:
            if body[:1] != b":":  # keep-alive comments are not content
                log.append(body)
            return write(body)

        return both

    def _write(self, body: bytes) -> Awaitable[None]:
        """The driver's writer: one ASGI body message. It hands back the server's awaitable
        instead of being a coroutine itself (one coroutine less per write)."""
        send: Callable[[dict[str, Any]], Awaitable[None]] = self._send
        return send({"type": "http.response.body", "body": body, "more_body": True})

    async def end(self) -> None:
        """After the delivery: detach (resume on, client gone), or close the upstream."""
        driver = self.driver
        gone = self.client_disconnected and not driver.turn.done
        if gone and self.on_disconnect == "detach":
            # The upstream finishes the turn on its own, nobody reading (resumable streams
            # build on this); the task holds the session's turn until then.
            self.detached_task = asyncio.create_task(self._finish_detached())
            return
        if gone:
            driver.turn.close(_ABORTED)
            driver.abandoned = True
        try:
            await driver.upstream.aclose(abort=self.must_abort)
        finally:
            await self.release()
            await self.on_done(self)

    async def _finish_detached(self) -> None:
        driver = self.driver
        log = self.log
        try:
            await driver.run(self.tee(_discard))  # nobody reads: into the log only
            if log is not None:
                log.append(DONE_FRAME)
        finally:
            await driver.upstream.aclose(abort=driver.abandoned)
            await self.release()
            await self.on_done(self)

    async def _listen_for_disconnect(self, receive: Any) -> None:
        await wait_for_disconnect(receive)
