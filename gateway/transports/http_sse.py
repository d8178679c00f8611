"""HTTP upstreams that answer a POST with server-sent events: every dialect with an HTTP contract.

One request per turn: the dialect's :class:`~translators.kit.HttpRequest` (a path under the
configured upstream URL, headers such as the API key, a JSON body). Before the first byte, the
statuses the dialect names (429 and 5xx by default) are retried with exponential backoff,
honouring ``Retry-After`` (capped), at most ``retries`` times. 401/403 raise
:class:`~gateway.errors.UpstreamAuthRejected` (the caller knows whose credentials those were).
Any other refusal becomes one frame through the dialect's ``error_frame`` (the turn then ends
with the provider's own message in an ``error`` chunk), or a 502 when the dialect has none.

The body is read by a reader task into a deque, as the WebSocket shell does with its socket, and
decoded by the sans-I/O :class:`~translators.core.sse_codec.SseDecoder` (one frame per ``data:``
payload): the turn driver takes every frame that arrived in one go, its timer can wake a waiting
``recv``, and above :data:`READ_HIGH_WATER` bytes not yet taken the reader stops reading, so a
slow client slows the provider down instead of growing our memory.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

import httpx
import orjson

from gateway.errors import UpstreamAuthRejected, UpstreamClosed, UpstreamError, UpstreamUnavailable
from gateway.transports.base import UpstreamEnded, map_upstream_errors
from translators.core.sse_codec import SseDecoder
from translators.kit import HttpRequest, HttpSseContract

__all__ = ["READ_HIGH_WATER", "HttpSseUpstream", "open_http_sse"]

#: Received-but-not-taken characters above which the body is not read; reading resumes below a
#: quarter of it.
READ_HIGH_WATER = 64 * 1024
#: How long closing may take.
CLOSE_TIMEOUT = 1.0
_MAX_BACKOFF = 8.0
_WOKEN = object()


class HttpSseUpstream:
    """The SSE body of one response (or, for a refused request, the frame that reports it)."""

    def __init__(
        self,
        response: httpx.Response | None,
        first_frames: list[str],
        high_water: int = READ_HIGH_WATER,
    ) -> None:
        self._response = response
        self._frames: deque[str] = deque(first_frames)
        self._size = 0
        self._high_water = high_water
        self._low_water = high_water // 4
        #: How the body ended (``UpstreamEnded`` or an error), once it did.
        self._end: Exception | None = None if response is not None else UpstreamEnded()
        self._waiter: asyncio.Future[Any] | None = None
        self._resume = asyncio.Event()
        self._reader = asyncio.create_task(self._read()) if response is not None else None

    async def _read(self) -> None:
        assert self._response is not None
        decoder = SseDecoder()
        frames, resume = self._frames, self._resume
        try:
            with map_upstream_errors("receive"):
                async for data in self._response.aiter_bytes():
                    events = decoder.decode_bytes(data)
                    if not events:
                        continue
                    for event in events:
                        frames.append(event.data)
                        self._size += len(event.data)
                    self._wake(None)
                    if self._size > self._high_water:
                        resume.clear()
                        await resume.wait()
            tail = decoder.flush()  # a last event without its blank line
            if tail is not None:
                frames.append(tail.data)
            self._end = UpstreamEnded()
        except UpstreamError as exc:
            self._end = exc
        finally:
            if self._end is None:  # cancelled by aclose
                self._end = UpstreamClosed(detail="receive: closed")
            self._wake(None)

    def _wake(self, value: Any) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(value)

    async def recv(self) -> str | None:
        frames = self._frames
        while not frames:
            if self._end is not None:
                raise self._end
            self._waiter = waiter = asyncio.get_running_loop().create_future()
            try:
                if await waiter is _WOKEN:
                    return None
            finally:
                self._waiter = None
        frame = frames.popleft()
        self._size -= len(frame)
        if self._size <= self._low_water and not self._resume.is_set():
            self._resume.set()
        return frame

    def buffered(self) -> bool:
        return bool(self._frames)

    def wake(self) -> None:
        self._wake(_WOKEN)

    async def gather(self, seconds: float) -> None:
        # The reader keeps reading meanwhile; what arrives is taken in one go afterwards.
        await asyncio.sleep(seconds)

    async def aclose(self, *, abort: bool = False) -> None:
        """Stop reading and close the response (closing it mid-body aborts the request)."""
        self._frames.clear()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(CLOSE_TIMEOUT):
                if self._reader is not None and not self._reader.done():
                    self._reader.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._reader
                if self._response is not None:
                    await self._response.aclose()


def _retry_after(response: httpx.Response, attempt: int) -> float:
    header = response.headers.get("retry-after")
    if header:
        with contextlib.suppress(ValueError):
            return min(max(float(header), 0.0), _MAX_BACKOFF)
    return min(0.5 * 2.0**attempt, _MAX_BACKOFF)


async def open_http_sse(
    client: httpx.AsyncClient,
    url: str,
    request: HttpRequest,
    contract: HttpSseContract,
    *,
    headers: dict[str, str],
    retries: int,
    connect_timeout: float,
    first_byte_timeout: float,
) -> HttpSseUpstream:
    """POST the turn's request; the streaming body, or an upstream error (see the module)."""
    all_headers = {"content-type": "application/json", "accept": "text/event-stream"}
    all_headers.update({k.lower(): v for k, v in headers.items()})
    all_headers.update({k.lower(): v for k, v in request.headers.items()})
    content = orjson.dumps(request.body)
    attempt = 0
    while True:
        with map_upstream_errors("connect"):
            built = client.build_request(
                request.method,
                url,
                content=content,
                headers=all_headers,
                timeout=httpx.Timeout(connect_timeout, read=None),
            )
            async with asyncio.timeout(connect_timeout + first_byte_timeout):
                response = await client.send(built, stream=True)
        status = response.status_code
        if status < 300:
            return HttpSseUpstream(response, [])
        if status in contract.retry_statuses and attempt < retries:
            delay = _retry_after(response, attempt)
            await response.aclose()
            attempt += 1
            await asyncio.sleep(delay)
            continue
        with map_upstream_errors("error response"):
            body = await response.aread()
            await response.aclose()
        if status in (401, 403):
            raise UpstreamAuthRejected(status, detail=f"upstream answered {status}")
        if status in contract.retry_statuses:
            raise UpstreamUnavailable(detail=f"upstream answered {status} after {attempt} retries")
        frame = contract.error_frame(status, body) if contract.error_frame is not None else None
        if frame is None:
            raise UpstreamUnavailable(detail=f"upstream answered {status}")
        return HttpSseUpstream(None, [frame])
