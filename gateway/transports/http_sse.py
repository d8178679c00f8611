"""HTTP upstreams that answer a POST with server-sent events: every dialect with an HTTP contract.

One request per turn: the dialect's :class:`~chunkbridge.kit.HttpRequest` (a path under the
configured upstream URL, headers such as the API key, a JSON body), on a connection of the pool
(:mod:`~chunkbridge.gateway.transports.http_pool`), its body read as SSE or JSON lines
(:func:`upstream_body`). Before the first byte, the statuses the
dialect names (429 and 5xx by default) are retried with exponential backoff, honouring
``Retry-After`` (capped), at most ``retries`` times. 401/403 raise
:class:`~chunkbridge.gateway.errors.UpstreamAuthRejected` (the caller knows whose credentials those
were). Any other refusal becomes one frame through the dialect's ``error_frame`` (the turn then ends
with the provider's own message in an ``error`` chunk), or a 502 when the dialect has none.
Redirects are not followed (a 3xx is a refusal: the upstream stays where the
configuration says).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

import h11
import orjson

from chunkbridge.gateway.errors import UpstreamAuthRejected, UpstreamUnavailable
from chunkbridge.gateway.transports.base import UpstreamEnded, map_upstream_errors
from chunkbridge.gateway.transports.http_connection import (
    WOKEN,
    BodyDecoder,
    Frame,
    HttpConnection,
    Origin,
    header_value,
)
from chunkbridge.gateway.transports.http_pool import HttpConnectionPool
from chunkbridge.kit import HttpRequest, HttpSseContract
from chunkbridge.translators.core.sse_codec import SseDecoder

__all__ = ["HttpSseUpstream", "open_http_sse"]


_MAX_BACKOFF = 8.0
#: Largest error body read (the provider's message is in its first bytes).
MAX_ERROR_BODY = 64 * 1024
#: Content types of newline-delimited JSON bodies (one event per line instead of SSE).
_JSON_LINES = frozenset({b"application/x-ndjson", b"application/jsonl", b"application/json-lines"})


class HttpSseUpstream:
    """The SSE body of one response (or, for a refused request, the frame that reports it)."""

    def __init__(
        self, shell: HttpConnection | None, pool: HttpConnectionPool | None, first_frames: list[str]
    ) -> None:
        self._shell = shell
        self._pool = pool
        if shell is None:
            self._frames: deque[Frame] = deque(first_frames)
        else:
            self._frames = shell.frames

    async def recv(self) -> Frame | None:
        frames = self._frames
        shell = self._shell
        while not frames:
            if shell is None:
                raise UpstreamEnded()
            if shell.end is not None:
                raise shell.end
            shell.waiter = waiter = asyncio.get_running_loop().create_future()
            try:
                if await waiter is WOKEN:
                    return None
            finally:
                shell.waiter = None
        frame = frames.popleft()
        if shell is not None:
            shell.taken(len(frame))
        return frame

    def buffered(self) -> bool:
        return bool(self._frames)

    def wake(self) -> None:
        shell = self._shell
        if shell is not None:
            waiter = shell.waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(WOKEN)

    async def gather(self, seconds: float) -> None:
        if self._shell is None:
            return
        await self._shell.gather(seconds)

    async def aclose(self, *, abort: bool = False) -> None:
        """Stop reading: a finished response gives its connection back to the pool; closing
        one mid-body aborts the request (the provider stops generating)."""
        shell, self._shell = self._shell, None
        self._frames.clear()
        if shell is None:
            return
        if self._pool is not None and not abort and shell.reusable:
            self._pool.release(shell)
            return
        shell.close()


def _retry_after(response: h11.Response, attempt: int) -> float:
    header = header_value(response, b"retry-after")
    if header:
        with contextlib.suppress(ValueError):
            return min(max(float(header), 0.0), _MAX_BACKOFF)
    return min(0.5 * 2.0**attempt, _MAX_BACKOFF)


def _request_head(
    origin: Origin, target: str, request: HttpRequest, forward: dict[str, str], length: int
) -> h11.Request:
    """The request's head: ours, then the client's ``forward`` headers, then the dialect's."""
    all_headers = {
        "host": origin.host_header,
        "user-agent": "chunkbridge",
        "content-type": "application/json",
        "accept": "text/event-stream",
        "accept-encoding": "identity",
    }
    all_headers.update({k.lower(): v for k, v in forward.items()})
    all_headers.update({k.lower(): v for k, v in request.headers.items()})
    all_headers["content-length"] = str(length)
    all_headers.pop("transfer-encoding", None)
    return h11.Request(method=request.method, target=target, headers=list(all_headers.items()))


async def open_http_sse(
    pool: HttpConnectionPool,
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
    with map_upstream_errors("connect"):
        origin, target = Origin.of(url)
    content = orjson.dumps(request.body)
    with map_upstream_errors("request"):  # e.g. a header value with a line break
        h11_request = _request_head(origin, target, request, headers, len(content))
    attempt = 0
    while True:
        with map_upstream_errors("connect"):
            shell, response = await pool.request(
                origin,
                h11_request,
                content,
                upstream_body,
                connect_timeout=connect_timeout,
                response_timeout=first_byte_timeout,
            )
        status = response.status_code
        if status < 300:
            return HttpSseUpstream(shell, pool, [])
        if status in contract.retry_statuses and attempt < retries:
            delay = _retry_after(response, attempt)
            shell.close()
            attempt += 1
            await asyncio.sleep(delay)
            continue
        with map_upstream_errors("error response"):
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(first_byte_timeout):
                    while shell.end is None and shell.size < MAX_ERROR_BODY:
                        await shell.wait()
            body = b"".join(piece for piece in shell.frames if isinstance(piece, bytes))
            shell.close()
        if status in (401, 403):
            raise UpstreamAuthRejected(status, detail=f"upstream answered {status}")
        if status in contract.retry_statuses:
            raise UpstreamUnavailable(detail=f"upstream answered {status} after {attempt} retries")
        frame = contract.error_frame(status, body) if contract.error_frame is not None else None
        if frame is None:
            raise UpstreamUnavailable(detail=f"upstream answered {status}")
        return HttpSseUpstream(None, None, [frame])


def upstream_body(response: h11.Response) -> BodyDecoder:
    """The decoder of an upstream's answer: SSE, or JSON lines by its ``Content-Type``; an error
    answer's first :data:`MAX_ERROR_BODY` bytes as they are. A compressed answer is refused (the
    request asks for none; decoding it is not worth its cost on every event)."""
    if response.status_code >= 300:
        return ErrorBody()
    encoding = header_value(response, b"content-encoding")
    if encoding not in (b"", b"identity"):
        raise UpstreamUnavailable(detail=f"compressed response ({encoding.decode()}) not supported")
    if header_value(response, b"content-type").split(b";")[0].strip() in _JSON_LINES:
        return JsonLinesDecoder()
    return SseFrames()


class ErrorBody:
    """An error answer's body, up to :data:`MAX_ERROR_BODY` bytes (the rest is not kept)."""

    pending = 0

    def __init__(self) -> None:
        self.size = 0

    def frames(self, data: bytes) -> list[bytes]:
        if self.size >= MAX_ERROR_BODY:
            return []
        self.size += len(data)
        return [bytes(data)]

    def flush(self) -> Frame | None:
        return None


class SseFrames:
    """Server-sent events: one frame per ``data:`` payload (the SSE codec's events)."""

    def __init__(self) -> None:
        self._decoder = SseDecoder()

    def frames(self, data: bytes) -> list[str]:
        return [event.data for event in self._decoder.decode_bytes(data)]

    @property
    def pending(self) -> int:
        """Characters of the event under way."""
        return self._decoder.pending

    def flush(self) -> str | None:
        tail = self._decoder.flush()
        return None if tail is None else tail.data


class JsonLinesDecoder:
    """Newline-delimited JSON: one frame per non-empty line (the other framing agent servers use,
    chosen by the response's ``Content-Type``)."""

    def __init__(self) -> None:
        self._buffer = b""

    def frames(self, data: bytes) -> list[str]:
        lines = (self._buffer + data).split(b"\n")
        self._buffer = lines.pop()
        return [line.decode("utf-8", "replace") for line in lines if line.strip()]

    @property
    def pending(self) -> int:
        """Bytes of the line under way."""
        return len(self._buffer)

    def flush(self) -> str | None:
        tail, self._buffer = self._buffer, b""
        return tail.decode("utf-8", "replace") if tail.strip() else None
