"""The SSE response of one chat turn: upstream frames → translator → bytes → client.

A small ASGI callable in the manner of Starlette's ``StreamingResponse`` with its disconnect race:
one task reads the upstream into a bounded queue, the response loop takes what is queued, runs it
through the translator's fused hot path and writes it in one ``send`` (coalescing), and a listener
waits for ``http.disconnect``. Under uvicorn the listener is the only thing that notices a client
going away; when it does, the loop is cancelled and the ``finally`` aborts the upstream.

Backpressure: ``await send`` returns only when the transport can take more; while it waits the
loop takes nothing from the queue, the reader blocks on the full queue, and the websockets
client stops reading its socket. Memory per stream stays bounded by the queue and the client's
own small buffers, however slow the client is.

Every way a turn can end produces a valid ending: the translator (through its guard) closes open
parts, settles tools, and writes ``error`` (when it is one) and exactly one ``finish``; then
``[DONE]``. Timeouts (first event, idle, total), upstream loss and shutdown are inputs to the
translator, not exceptions that escape.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from gateway.errors import GatewayError
from gateway.metrics import Metrics
from gateway.transports.base import Upstream
from protocol_specs.ui_message_stream import RESPONSE_HEADERS
from translators.base import Translator
from translators.guard import CloseReason
from translators.sse_codec import DONE_FRAME, KEEPALIVE_FRAME, STREAM_OPEN_FRAME, encode_chunks

__all__ = ["ChatStream", "StreamOutcome", "StreamSettings", "SHUTDOWN"]

#: Queue items besides frames.
_EOF = object()
SHUTDOWN = object()
#: Frames taken from the queue for one write at most (keeps one write's latency bounded).
_MAX_BATCH = 128


@dataclass(slots=True)
class StreamSettings:
    first_event_timeout: float
    idle_timeout: float
    total_timeout: float
    keepalive_interval: float
    mask_errors: bool
    on_disconnect: str
    queue_frames: int


@dataclass(slots=True)
class StreamOutcome:
    """What the ``stream.end`` log line and the metrics report about one turn."""

    reason: CloseReason | None = None
    client_disconnected: bool = False
    bytes_out: int = 0
    events_out: int = 0
    first_chunk_at: float | None = None
    error_detail: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ChatStream:
    def __init__(
        self,
        *,
        upstream: Upstream,
        translator: Translator,
        abort_frame: dict[str, Any],
        settings: StreamSettings,
        metrics: Metrics,
        request_id: str,
        started: float,
        on_done: Callable[[StreamOutcome], Awaitable[None]],
    ) -> None:
        self.upstream = upstream
        self.translator = translator
        self.abort_frame = abort_frame
        self.settings = settings
        self.metrics = metrics
        self.request_id = request_id
        self.started = started
        self.on_done = on_done
        self.outcome = StreamOutcome()
        self.queue: asyncio.Queue[Any] = asyncio.Queue(settings.queue_frames)

    def shutdown(self) -> None:
        """Ask the stream to end now (SIGTERM drain): it finishes with a valid ending."""
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(SHUTDOWN)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = [(k.encode(), v.encode()) for k, v in RESPONSE_HEADERS.items()]
        headers.append((b"x-request-id", self.request_id.encode()))
        reader = asyncio.create_task(self._read_upstream())
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": STREAM_OPEN_FRAME, "more_body": True})
            pump = asyncio.create_task(self._pump(send))
            listener = asyncio.create_task(self._listen_for_disconnect(receive))
            done, _ = await asyncio.wait({pump, listener}, return_when=asyncio.FIRST_COMPLETED)
            if pump in done:
                listener.cancel()
                pump.result()
            else:
                self.outcome.client_disconnected = True
                self.outcome.reason = CloseReason.ABORTED
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pump
        except OSError:  # the client went away during a send (ASGI spec >= 2.4 servers)
            self.outcome.client_disconnected = True
            self.outcome.reason = self.outcome.reason or CloseReason.ABORTED
        finally:
            detached = (
                self.outcome.client_disconnected
                and not self.translator.done
                and self.settings.on_disconnect == "detach"
            )
            if detached:
                # The upstream finishes the turn on its own (resumable streams build on this);
                # the task holds the session until then. A strong reference keeps it alive.
                self.detached_task = asyncio.create_task(self._finish_detached(reader))
            else:
                await self._stop_upstream(reader)
                await self.on_done(self.outcome)

    detached_task: asyncio.Task[None] | None = None

    async def _stop_upstream(self, reader: asyncio.Task[None]) -> None:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
        aborted = self.outcome.client_disconnected and not self.translator.done
        await self.upstream.aclose(abort_frame=self.abort_frame if aborted else None)

    async def _finish_detached(self, reader: asyncio.Task[None]) -> None:
        remaining = self.started + self.settings.total_timeout - time.monotonic()
        try:
            async with asyncio.timeout(max(remaining, 0)):
                while not self.translator.done:
                    item = await self.queue.get()
                    if not isinstance(item, str | bytes):
                        break
                    self.translator.feed_frame(item)
        except TimeoutError:
            pass
        finally:
            await self._stop_upstream(reader)
            await self.on_done(self.outcome)

    async def _listen_for_disconnect(self, receive: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return

    async def _read_upstream(self) -> None:
        try:
            async for frame in self.upstream.frames():
                await self.queue.put(frame)
        except GatewayError as exc:
            await self.queue.put(exc)
            return
        await self.queue.put(_EOF)

    def _close(self, reason: CloseReason, error_text: str | None = None) -> bytes:
        if self.outcome.reason is None:
            self.outcome.reason = reason
        return encode_chunks(self.translator.close(reason, error_text))

    async def _pump(self, send: Any) -> None:
        settings = self.settings
        translator = self.translator
        queue = self.queue
        loop = asyncio.get_running_loop()
        # self.started is time.monotonic(); the loop's clock may have another origin (uvloop).
        deadline = loop.time() + settings.total_timeout - (time.monotonic() - self.started)
        last_event = loop.time()
        waited_first = True
        while not translator.done:
            now = loop.time()
            silence_limit = settings.first_event_timeout if waited_first else settings.idle_timeout
            remaining_silence = last_event + silence_limit - now
            remaining_total = deadline - now
            if remaining_silence <= 0 or remaining_total <= 0:
                await self._write(send, self._close(CloseReason.TIMEOUT))
                break
            wait = min(settings.keepalive_interval, remaining_silence, remaining_total)
            try:
                async with asyncio.timeout(wait):
                    item = await queue.get()
            except TimeoutError:
                if loop.time() - last_event >= settings.keepalive_interval * 0.99:
                    await send(
                        {"type": "http.response.body", "body": KEEPALIVE_FRAME, "more_body": True}
                    )
                continue
            last_event = loop.time()
            waited_first = False
            buffer = bytearray()
            batch = 0
            while True:
                buffer += self._handle(item)
                batch += 1
                if translator.done or batch >= _MAX_BATCH or queue.empty():
                    break
                item = queue.get_nowait()
            if buffer:
                await self._write(send, bytes(buffer))
        await send({"type": "http.response.body", "body": DONE_FRAME, "more_body": False})
        self.outcome.bytes_out += len(DONE_FRAME)

    def _handle(self, item: Any) -> bytes:
        if isinstance(item, str | bytes):
            self.metrics.upstream_events.inc()
            return self.translator.encode_frame(item)
        if item is _EOF:
            return self._close(CloseReason.UPSTREAM_CLOSED)
        if item is SHUTDOWN:
            return self._close(CloseReason.SHUTDOWN)
        if isinstance(item, GatewayError):
            self.outcome.error_detail = str(item)
            self.metrics.upstream_errors.labels(type(item).__name__).inc()
            text = None if self.settings.mask_errors else item.client_message
            return self._close(CloseReason.UPSTREAM_CLOSED, text)
        raise AssertionError(f"unexpected queue item {item!r}")  # pragma: no cover

    async def _write(self, send: Any, body: bytes) -> None:
        if not body:
            return
        if self.outcome.first_chunk_at is None:
            self.outcome.first_chunk_at = time.monotonic()
        events = body.count(b"\n\n")
        self.outcome.events_out += events
        self.outcome.bytes_out += len(body)
        self.metrics.chunks_out.inc(events)
        await send({"type": "http.response.body", "body": body, "more_body": True})
