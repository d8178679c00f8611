"""The ``mcp`` SDK's Streamable HTTP client over the gateway's own HTTP/1.1 client: an ``httpx2``
transport that sends each request through
:class:`~chunkbridge.gateway.transports.http_pool.HttpConnectionPool` (kept-alive connections,
the TLS policy, the environment's proxies, the one retry of a connection the server closed).

The SDK's client stays as it is (its sessions, SSE parsing, reconnection, the GET stream of
server messages); only the layer that moves bytes is ours, through httpx's transport API. The
default one (``httpcore2`` on anyio) took about a fifth of the gateway's CPU in an agent turn
whose tools are on an MCP server over HTTP — more than the model's stream — for requests of a few
hundred bytes (bench/RESULTS.md). A response's body is handed over in the pieces the socket gave
(the connection's flow control holds a server that streams faster than the SDK reads); closing
it gives the connection back to the pool, or closes it when it was not read to the end. The
gateway's errors are mapped to ``httpx2``'s here, at the boundary, as the SDK expects them.

A cancelled call's response stream is closed at once. On MCP 2026-07-28 the SDK aborts the
request's POST itself; before that it sends ``notifications/cancelled`` and goes on reading the
call's stream, so the server's later progress kept arriving and the connection stayed held
until the server finished. The transport sees that notification go by and closes the stream it
names, failing its reader with :class:`CallCancelled` — an SSE failure, which the SDK does not
resume from the last event id as it would a stream that merely ended.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import h11
import httpx2
import orjson

from chunkbridge.gateway.errors import (
    UpstreamClosed,
    UpstreamError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from chunkbridge.gateway.transports.base import UpstreamEnded
from chunkbridge.gateway.transports.http_connection import (
    HttpConnection,
    Origin,
    header_value,
    raw_body,
)
from chunkbridge.gateway.transports.http_pool import HttpConnectionPool

__all__ = ["CallCancelled", "H11Transport", "mcp_http_client"]

#: A request's JSON-RPC id.
RequestId = int | str


class CallCancelled(httpx2.SSEError):
    """The call this response stream answers was cancelled: closed, not to be resumed."""


def _httpx_error(exc: UpstreamError) -> httpx2.TransportError:
    """The ``httpx2`` error httpx's own transport raises in the same case."""
    detail = exc.detail or str(exc)
    if isinstance(exc, UpstreamTimeout):
        connecting = detail.startswith("connect")
        return (httpx2.ConnectTimeout if connecting else httpx2.ReadTimeout)(detail)
    if isinstance(exc, UpstreamUnavailable):
        return httpx2.ConnectError(detail)
    if isinstance(exc, UpstreamClosed) and isinstance(exc.__cause__, OSError):
        return httpx2.ReadError(detail)
    return httpx2.RemoteProtocolError(detail)


class _Body(httpx2.AsyncByteStream):
    """A response's body as it arrives; closing it gives the connection back (or closes it)."""

    def __init__(self, pool: HttpConnectionPool, shell: HttpConnection, timeout: float | None):
        self._pool = pool
        self._shell: HttpConnection | None = shell
        self._timeout = timeout
        self._closed: Callable[[], object] | None = None
        self._cancelled = False

    def on_close(self, closed: Callable[[], object]) -> None:
        """Call ``closed`` once the body is closed."""
        self._closed = closed

    async def __aiter__(self) -> AsyncIterator[bytes]:
        shell = self._shell
        while shell is not None:
            frames = shell.frames
            while not frames:
                end = shell.end
                if self._cancelled:
                    raise CallCancelled("the call was cancelled")
                if isinstance(end, UpstreamEnded):
                    return
                if isinstance(end, UpstreamError):
                    raise _httpx_error(end) from end
                try:
                    async with asyncio.timeout(self._timeout):
                        await shell.wait()
                except TimeoutError:
                    raise httpx2.ReadTimeout("no data from the server in time") from None
            piece = frames.popleft()
            shell.taken(len(piece))
            yield cast(bytes, piece)  # raw_body: the bytes as they came

    def cancel(self) -> None:
        """Stop the stream: nothing more is read, the connection is closed (its reader, if
        waiting, wakes to :class:`CallCancelled`)."""
        self._cancelled = True
        if self._shell is not None:
            self._shell.frames.clear()
            self._shell.close()

    async def aclose(self) -> None:
        shell, self._shell = self._shell, None
        if shell is not None:
            self._pool.release(shell)
        if self._closed is not None:
            self._closed()


class H11Transport(httpx2.AsyncBaseTransport):
    """``httpx2``'s transport API over the gateway's connection pool (see the module)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._pool = HttpConnectionPool(tls)
        #: The response streams of the calls under way, by their JSON-RPC id.
        self._streams: dict[RequestId, _Body] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        scheme = url.scheme
        if scheme not in ("http", "https"):
            raise httpx2.UnsupportedProtocol(f"no transport for {scheme}:// URLs")
        origin = Origin(scheme, url.host, url.port or (443 if scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        body = await request.aread()
        message = _message(body) if request.method == "POST" else None
        if message is not None and message.get("method") == "notifications/cancelled":
            self._cancelled(message)
        try:
            head = h11.Request(
                method=request.method, target=url.raw_path, headers=request.headers.raw
            )
            shell, response = await self._pool.request(
                origin,
                head,
                body,
                raw_body,
                connect_timeout=timeouts.get("connect"),
                response_timeout=timeouts.get("read"),
            )
        except h11.LocalProtocolError as exc:
            raise httpx2.LocalProtocolError(str(exc)) from exc
        except UpstreamError as exc:
            raise _httpx_error(exc) from exc
        stream = _Body(self._pool, shell, timeouts.get("read"))
        key = None if message is None else message.get("id")
        if isinstance(key, int | str) and header_value(response, b"content-type").startswith(
            b"text/event-stream"
        ):
            self._streams[key] = stream
            stream.on_close(lambda: self._streams.pop(key, None))
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=stream,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason},
        )

    def _cancelled(self, notification: dict[str, Any]) -> None:
        """A ``notifications/cancelled`` on its way: the stream of the call it names ends."""
        params = notification.get("params")
        key = params.get("requestId") if isinstance(params, dict) else None
        stream = self._streams.pop(key, None) if isinstance(key, int | str) else None
        if stream is not None:
            stream.cancel()

    async def aclose(self) -> None:
        await self._pool.aclose()


def _message(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC message a POST carries (``None``: not one, or not JSON)."""
    try:
        message = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return None
    return message if isinstance(message, dict) else None


def mcp_http_client(
    headers: dict[str, str] | None = None, tls: ssl.SSLContext | None = None
) -> Any:
    """The ``httpx2`` client of a Streamable HTTP MCP server: the SDK's own timeouts
    (30 s, and 300 s between the bytes of a stream a server may hold open), over
    :class:`H11Transport` (``tls``: the context with the gateway's client certificate)."""
    timeout = httpx2.Timeout(30.0, read=300.0)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, transport=H11Transport(tls))
