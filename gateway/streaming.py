"""The SSE response of one chat turn: upstream frames → translator → bytes → client.

A small ASGI callable in the manner of Starlette's ``StreamingResponse`` with its disconnect race:
the response loop receives a frame from the upstream, runs it — and every further frame the
upstream transport already holds — through the translator's fused hot path, and writes the result
in one ``send`` (coalescing). A listener task waits for ``http.disconnect``; under uvicorn it is
the only thing that notices a client going away, and when it does the loop is cancelled and the
``finally`` aborts the upstream.

Bursts are written at most once per ``flush_interval`` (1 ms by default): a frame that arrives
sooner after a write waits for the rest of the interval while the upstream socket is not read
(``Upstream.gather``), then everything that arrived is read, translated and written at once. A
model streaming tokens tens of milliseconds apart never waits; an upstream sending as fast as
it can costs one read and one write per millisecond instead of a wake-up per TCP segment — on
the benchmark's 2-core VM that took the gateway from 29 to 21-26 µs of CPU per event (S1, with
the old websockets client), and the upstream's sends got cheaper too (a sleeping reader no longer
has to be woken for each one).

Backpressure needs no buffer of ours: the loop receives the next frame only after ``await send``
returned, and ``send`` returns only when the transport can take more. While it waits, frames
pile up in the upstream transport, which stops reading its socket above 64 KiB, so the upstream
is slowed down instead of the gateway buffering the turn.

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
from dataclasses import dataclass
from typing import Any

from gateway.errors import GatewayError
from gateway.metrics import Metrics
from gateway.transports.base import Upstream, UpstreamEnded
from protocol_specs.ui_message_stream import RESPONSE_HEADERS
from translators.base import Translator
from translators.guard import CloseReason
from translators.sse_codec import DONE_FRAME, KEEPALIVE_FRAME, STREAM_OPEN_FRAME, encode_chunks

__all__ = ["ChatStream", "StreamOutcome", "StreamSettings"]

#: Frames coalesced into one write at most (bounds one write's size and latency).
_MAX_BATCH = 128
#: The response headers every turn sends (``x-request-id`` is added per turn).
_HEADERS = [(name.encode(), value.encode()) for name, value in RESPONSE_HEADERS.items()]


@dataclass(frozen=True, slots=True)
class StreamSettings:
    first_event_timeout: float
    idle_timeout: float
    total_timeout: float
    keepalive_interval: float
    #: Seconds between two writes of upstream data at least (see the module docstring).
    flush_interval: float
    on_disconnect: str


@dataclass(slots=True)
class StreamOutcome:
    """What the ``stream.end`` log line and the metrics report about one turn."""

    reason: CloseReason | None = None
    client_disconnected: bool = False
    bytes_out: int = 0
    events_out: int = 0
    first_chunk_at: float | None = None
    error_detail: str | None = None


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
        on_done: Callable[[ChatStream], Awaitable[None]],
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
        #: Set by :meth:`shutdown`; the loop then ends the turn with ``CloseReason.SHUTDOWN``.
        self.shutting_down = False
        #: The background task of a detached turn (a strong reference keeps it alive).
        self.detached_task: asyncio.Task[None] | None = None

    def shutdown(self) -> None:
        """End the turn now (SIGTERM drain): abort the upstream; the loop writes a valid ending."""
        self.shutting_down = True
        asyncio.ensure_future(self.upstream.aclose(abort_frame=self.abort_frame))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = [*_HEADERS, (b"x-request-id", self.request_id.encode())]
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
            abandoned = self.outcome.client_disconnected and not self.translator.done
            if abandoned and self.settings.on_disconnect == "detach":
                # The upstream finishes the turn on its own (resumable streams build on this);
                # the task holds the session's turn until then.
                self.detached_task = asyncio.create_task(self._finish_detached())
            else:
                await self.upstream.aclose(abort_frame=self.abort_frame if abandoned else None)
                await self.on_done(self)

    async def _finish_detached(self) -> None:
        remaining = self.started + self.settings.total_timeout - time.monotonic()
        try:
            async with asyncio.timeout(max(remaining, 0)):
                while not self.translator.done:
                    self.translator.feed_frame(await self.upstream.recv())
        except (TimeoutError, UpstreamEnded, GatewayError):
            pass
        finally:
            await self.upstream.aclose(
                abort_frame=None if self.translator.done else self.abort_frame
            )
            await self.on_done(self)

    async def _listen_for_disconnect(self, receive: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return

    def _close(self, reason: CloseReason, error_text: str | None = None) -> bytes:
        if self.shutting_down:
            reason, error_text = CloseReason.SHUTDOWN, None
        if self.outcome.reason is None:
            self.outcome.reason = reason
        return encode_chunks(self.translator.close(reason, error_text))

    async def _pump(self, send: Any) -> None:
        """The response loop. Silence is watched by one timer per stream (:meth:`_tick`), not a
        timeout per receive: ``asyncio.timeout`` costs several microseconds per use, which on a
        sparse stream is more than translating the event."""
        settings = self.settings
        translator = self.translator
        upstream = self.upstream
        metrics = self.metrics
        self._loop = loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        # self.started is time.monotonic(); the loop's clock may have another origin (uvloop).
        self._deadline = loop.time() + settings.total_timeout - (time.monotonic() - self.started)
        self._last_event = self._last_write = loop.time()
        self._silence_limit = settings.first_event_timeout
        self._schedule_tick(loop)
        try:
            while not translator.done:
                try:
                    if upstream.buffered():
                        frame = await upstream.recv()
                    else:
                        self._receiving = True
                        try:
                            frame = await upstream.recv()
                        except asyncio.CancelledError:
                            if not self._tick_fired or task.uncancel() > 0:
                                raise
                            self._tick_fired = False
                            if await self._on_silence(send, loop):
                                break
                            continue
                        finally:
                            self._receiving = False
                    self._last_event = now = loop.time()
                    self._silence_limit = settings.idle_timeout
                    buffer = translator.encode_frame(frame)
                    hold = self._flushed_at + settings.flush_interval - now
                    if hold > 0 and not translator.done:
                        # A burst: the previous write was moments ago; let the rest of it
                        # arrive and write it together.
                        await upstream.gather(hold)
                    if upstream.buffered() and not translator.done:
                        parts = [buffer]
                        while (
                            len(parts) < _MAX_BATCH and not translator.done and upstream.buffered()
                        ):
                            parts.append(translator.encode_frame(await upstream.recv()))
                        buffer = b"".join(parts)
                        metrics.upstream_events += len(parts)
                    else:
                        metrics.upstream_events += 1
                except UpstreamEnded:
                    buffer = self._close(CloseReason.UPSTREAM_CLOSED)
                except GatewayError as exc:
                    self.outcome.error_detail = str(exc)
                    self.metrics.upstream_errors.labels(type(exc).__name__).inc()
                    buffer = self._close(CloseReason.UPSTREAM_CLOSED, exc.client_message)
                await self._write(send, buffer)
            await send({"type": "http.response.body", "body": DONE_FRAME, "more_body": False})
            self.outcome.bytes_out += len(DONE_FRAME)
            metrics.chunks_out += 1
        finally:
            if self._tick_handle is not None:
                self._tick_handle.cancel()

    # -- silence: one timer per stream ---------------------------------------------------------

    _task: asyncio.Task[Any]
    _loop: asyncio.AbstractEventLoop
    _tick_handle: asyncio.TimerHandle | None = None
    #: The loop is waiting in ``upstream.recv()`` (the only await the timer may interrupt).
    _receiving = False
    _tick_fired = False
    _deadline = 0.0
    _last_event = 0.0
    _last_write = 0.0
    #: When upstream data was last written (the flush interval counts from it).
    _flushed_at = float("-inf")
    _silence_limit = 0.0

    def _next_check(self) -> float:
        return min(
            self._last_write + self.settings.keepalive_interval,
            self._last_event + self._silence_limit,
            self._deadline,
        )

    def _schedule_tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self._tick_handle = loop.call_at(self._next_check(), self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        """Timer callback: interrupt a waiting ``recv`` when something is due, else re-arm."""
        self._tick_handle = None
        if self._receiving and loop.time() >= self._next_check() - 0.001:
            self._tick_fired = True
            self._task.cancel()
        else:  # events arrived meanwhile, or the loop is busy writing: check again later
            self._tick_handle = loop.call_at(
                max(self._next_check(), loop.time() + 0.01), self._tick, loop
            )

    async def _on_silence(self, send: Any, loop: asyncio.AbstractEventLoop) -> bool:
        """The timer fired while waiting: time out (True: the turn ended) or send a keep-alive."""
        now = loop.time()
        if now >= self._last_event + self._silence_limit or now >= self._deadline:
            await self._write(send, self._close(CloseReason.TIMEOUT))
            return True
        await send({"type": "http.response.body", "body": KEEPALIVE_FRAME, "more_body": True})
        self._last_write = loop.time()
        self._schedule_tick(loop)
        return False

    async def _write(self, send: Any, body: bytes) -> None:
        if not body:
            return
        if self.outcome.first_chunk_at is None:
            self.outcome.first_chunk_at = time.monotonic()
        events = body.count(b"\n\n")
        self.outcome.events_out += events
        self.outcome.bytes_out += len(body)
        self.metrics.chunks_out += events
        await send({"type": "http.response.body", "body": body, "more_body": True})
        self._last_write = self._flushed_at = self._loop.time()
