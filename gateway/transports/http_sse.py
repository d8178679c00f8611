"""HTTP upstreams that answer a POST with server-sent events: every dialect with an HTTP contract.

One request per turn: the dialect's :class:`~chunkbridge.kit.HttpRequest` (a path under the
configured upstream URL, headers such as the API key, a JSON body), on a connection of the pool
(:mod:`~chunkbridge.gateway.transports.http_connection`). Before the first byte, the statuses the
dialect names (429 and 5xx by default) are retried with exponential backoff, honouring
``Retry-After`` (capped), at most ``retries`` times. 401/403 raise
:class:`~chunkbridge.gateway.errors.UpstreamAuthRejected` (the caller knows whose credentials those
were). Any other refusal becomes one frame through the dialect's ``error_frame`` (the turn then ends
with the provider's own message in an ``error`` chunk), or a 502 when the dialect has none. A
reused connection the server closed meanwhile is replaced once, transparently, before any byte of
the answer. Redirects are not followed (a 3xx is a refusal: the upstream stays where the
configuration says).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

import h11
import orjson

from chunkbridge.gateway.errors import (
    UpstreamAuthRejected,
    UpstreamClosed,
    UpstreamUnavailable,
)
from chunkbridge.gateway.transports.base import UpstreamEnded, map_upstream_errors
from chunkbridge.gateway.transports.http_connection import (
    MAX_ERROR_BODY,
    WOKEN,
    HttpConnection,
    Origin,
    header_value,
)
from chunkbridge.gateway.transports.http_pool import HttpConnectionPool
from chunkbridge.kit import HttpRequest, HttpSseContract

__all__ = ["HttpSseUpstream", "open_http_sse"]


_MAX_BACKOFF = 8.0


class HttpSseUpstream:
    """The SSE body of one response (or, for a refused request, the frame that reports it)."""

    def __init__(
        self, shell: HttpConnection | None, pool: HttpConnectionPool | None, first_frames: list[str]
    ) -> None:
        self._shell = shell
        self._pool = pool
        if shell is None:
            self._frames: deque[str] = deque(first_frames)
        else:
            self._frames = shell.frames

    async def recv(self) -> str | None:
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


async def _exchange(
    pool: HttpConnectionPool,
    origin: Origin,
    request: h11.Request,
    body: bytes,
    connect_timeout: float,
    first_byte_timeout: float,
) -> tuple[HttpConnection, h11.Response]:
    """Send on a kept-alive connection (one the server closed meanwhile is replaced once) or a
    new one; the response head."""
    reused = pool.take_idle(origin)
    for shell in (reused, None):
        if shell is None:
            shell = await pool.connect(origin, connect_timeout)
        shell.send(request, body)
        try:
            async with asyncio.timeout(first_byte_timeout):
                return shell, await asyncio.shield(shell.response_ready)
        except UpstreamClosed:
            if shell is reused and not shell.received_any:
                continue  # the server had closed the idle connection: once more, on a new one
            raise
        except BaseException:
            shell.close()
            raise
    raise AssertionError("unreachable")  # pragma: no cover


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
    all_headers = {
        "host": origin.host_header,
        "user-agent": "chunkbridge",
        "content-type": "application/json",
        "accept": "text/event-stream",
        "accept-encoding": "identity",
    }
    all_headers.update({k.lower(): v for k, v in headers.items()})
    all_headers.update({k.lower(): v for k, v in request.headers.items()})
    all_headers["content-length"] = str(len(content))
    all_headers.pop("transfer-encoding", None)
    with map_upstream_errors("request"):  # e.g. a header value with a line break
        h11_request = h11.Request(
            method=request.method, target=target, headers=list(all_headers.items())
        )
    attempt = 0
    while True:
        with map_upstream_errors("connect"):
            shell, response = await _exchange(
                pool, origin, h11_request, content, connect_timeout, first_byte_timeout
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
                    while shell.end is None and shell.error_size < MAX_ERROR_BODY:
                        shell.waiter = asyncio.get_running_loop().create_future()
                        await shell.waiter
            body = b"".join(shell.error_body)
            shell.close()
        if status in (401, 403):
            raise UpstreamAuthRejected(status, detail=f"upstream answered {status}")
        if status in contract.retry_statuses:
            raise UpstreamUnavailable(detail=f"upstream answered {status} after {attempt} retries")
        frame = contract.error_frame(status, body) if contract.error_frame is not None else None
        if frame is None:
            raise UpstreamUnavailable(detail=f"upstream answered {status}")
        return HttpSseUpstream(None, None, [frame])
