"""The HTTP/1.1 connections under the ``mcp`` SDK's Streamable HTTP client: an ``httpx2``
transport on h11 and asyncio's protocol callbacks, with kept-alive connections per origin.

The SDK's client stays as it is (its sessions, SSE parsing, reconnection, the GET stream of
server messages); only the layer that moves bytes is ours, through httpx's transport API. The
default one (``httpcore2`` on anyio) took about a fifth of the gateway's CPU in an agent turn
whose tools are on an MCP server over HTTP — more than the model's stream — for requests of a few
hundred bytes (bench/RESULTS.md). A server the environment names a proxy for is reached through
httpx's own transports, which go through it; TLS is verified as httpx verifies it.

A response's body is read as it arrives and handed over in the pieces the socket gave; above
:data:`READ_HIGH_WATER` bytes not taken, the socket is not read (a server that streams faster
than the SDK reads waits). A connection goes back to the pool when its response was read to the
end and h11 says it can take another request; a kept-alive connection the server closed before
answering is replaced once, as nothing was processed on it.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import h11
import httpx2

__all__ = ["READ_HIGH_WATER", "H11Transport", "mcp_http_client"]

#: Bytes received but not taken above which the socket is not read (resumed below a quarter).
READ_HIGH_WATER = 256 * 1024
#: Idle connections kept per origin, and for how long.
MAX_IDLE = 16
IDLE_SECONDS = 30.0

_NEED_DATA = h11.NEED_DATA
_PAUSED = h11.PAUSED
_DATA = h11.Data

Origin = tuple[str, str, int]


class _Connection(asyncio.Protocol):
    """One connection: h11 fed by ``data_received``, the body's pieces in a deque."""

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.h11 = h11.Connection(h11.CLIENT)
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.lost: asyncio.Future[None] = loop.create_future()
        self.idle_since = 0.0
        self._new_exchange(loop)

    def _new_exchange(self, loop: asyncio.AbstractEventLoop) -> None:
        self.head: asyncio.Future[h11.Response] = loop.create_future()
        self.pieces: deque[bytes] = deque()
        self.size = 0
        #: Whether the body ended, and the error it ended with (``None``: it was complete).
        self.ended = False
        self.error: Exception | None = None
        self.received_any = False
        self.paused = False
        self.waiter: asyncio.Future[None] | None = None

    # -- asyncio's callbacks -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received_any = self.received_any or bool(data)
        conn = self.h11
        conn.receive_data(data)
        try:
            while True:
                event = conn.next_event()
                if event is _NEED_DATA or event is _PAUSED:
                    break
                if event.__class__ is _DATA:
                    self.pieces.append(bytes(event.data))
                    self.size += len(event.data)
                elif isinstance(event, h11.Response):
                    if not self.head.done():
                        self.head.set_result(event)
                elif isinstance(event, h11.EndOfMessage):
                    self._end(None)
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    self._end(httpx2.RemoteProtocolError("the server closed the connection"))
                    break
        except h11.RemoteProtocolError as exc:
            self._end(httpx2.RemoteProtocolError(str(exc)))
            self.abort()
        if self.size > READ_HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool | None:
        self.data_received(b"")
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)
        detail = f"the connection was lost: {exc}" if exc else "the server closed the connection"
        if not self.head.done():
            self.head.set_exception(httpx2.RemoteProtocolError(detail))
            self.head.exception()  # retrieved: the waiter may be gone
        self._end(httpx2.ReadError(detail))
        self._wake()

    # -- the exchange --------------------------------------------------------------------------

    def _end(self, error: Exception | None) -> None:
        if not self.ended:
            self.ended, self.error = True, error

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def send(self, request: h11.Request, body: bytes) -> None:
        assert self.transport is not None
        conn = self.h11
        parts = [conn.send(request) or b""]
        if body:
            parts.append(conn.send(h11.Data(body)) or b"")
        parts.append(conn.send(h11.EndOfMessage()) or b"")
        self.transport.write(b"".join(parts))

    async def next_piece(self, read_timeout: float | None) -> bytes | None:
        """The body's next piece; ``None`` at its end."""
        while not self.pieces:
            if self.ended:
                if self.error is not None:
                    raise self.error
                return None
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(read_timeout):
                    await self.waiter
            except TimeoutError:
                raise httpx2.ReadTimeout("no data from the server in time") from None
        piece = self.pieces.popleft()
        self.size -= len(piece)
        if self.paused and self.size < READ_HIGH_WATER // 4 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return piece

    @property
    def reusable(self) -> bool:
        conn = self.h11
        return (
            self.ended
            and self.error is None
            and not self.lost.done()
            and conn.our_state is h11.DONE
            and conn.their_state is h11.DONE
        )

    def recycle(self) -> None:
        self.h11.start_next_cycle()
        self._new_exchange(asyncio.get_running_loop())
        self.idle_since = time.monotonic()

    def abort(self) -> None:
        if self.transport is not None and not self.lost.done():
            self.transport.abort()


class _Body(httpx2.AsyncByteStream):
    """A response's body as it arrives; closing it gives the connection back (or closes it)."""

    def __init__(self, pool: H11Transport, connection: _Connection, timeout: float | None):
        self._pool = pool
        self._connection: _Connection | None = connection
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        while connection is not None:
            piece = await connection.next_piece(self._timeout)
            if piece is None:
                return
            yield piece

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            self._pool.release(connection)


class H11Transport(httpx2.AsyncBaseTransport):
    """``httpx2``'s transport API over :class:`_Connection` (see the module)."""

    def __init__(self) -> None:
        self._idle: dict[Origin, list[_Connection]] = {}
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        scheme = url.scheme
        if scheme not in ("http", "https"):
            raise httpx2.UnsupportedProtocol(f"no transport for {scheme}:// URLs")
        origin = (scheme, url.host, url.port or (443 if scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        body = await request.aread()
        try:
            head = h11.Request(
                method=request.method, target=url.raw_path, headers=request.headers.raw
            )
        except h11.LocalProtocolError as exc:
            raise httpx2.LocalProtocolError(str(exc)) from exc
        reused = self._take_idle(origin)
        for connection in (reused, None):
            if connection is None:
                connection = await self._connect(origin, timeouts.get("connect"))
            try:
                connection.send(head, body)
                async with asyncio.timeout(timeouts.get("read")):
                    response = await connection.head
            except httpx2.RemoteProtocolError:
                connection.abort()
                if connection is reused and not connection.received_any:
                    continue  # the server had closed the kept-alive connection: on a new one
                raise
            except TimeoutError:
                connection.abort()
                raise httpx2.ReadTimeout("no response from the server in time") from None
            except BaseException:
                connection.abort()
                raise
            return httpx2.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=_Body(self, connection, timeouts.get("read")),
                extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason},
            )
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connect(self, origin: Origin, connect_timeout: float | None) -> _Connection:
        scheme, host, port = origin
        secure = scheme == "https"
        if secure and self._ssl is None:
            self._ssl = httpx2.create_ssl_context()  # as httpx2 verifies
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(connect_timeout):
                _, connection = await loop.create_connection(
                    lambda: _Connection(origin),
                    host,
                    port,
                    ssl=self._ssl if secure else None,
                    server_hostname=host if secure else None,
                )
        except TimeoutError:
            raise httpx2.ConnectTimeout(f"no connection to {host}:{port} in time") from None
        except OSError as exc:
            raise httpx2.ConnectError(f"{host}:{port}: {exc}") from exc
        return connection

    def _take_idle(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if not connection.lost.done() and now - connection.idle_since < IDLE_SECONDS:
                return connection
            connection.abort()
        return None

    def release(self, connection: _Connection) -> None:
        """A response was closed: its connection is kept for the next request if it can be."""
        idle = self._idle.setdefault(connection.origin, [])
        if self._closed or not connection.reusable or len(idle) >= MAX_IDLE:
            connection.abort()
            return
        connection.recycle()
        idle.append(connection)

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for connection in idle:
                connection.abort()
        self._idle.clear()


def mcp_http_client(url: str, headers: dict[str, str] | None = None) -> Any:
    """The ``httpx2`` client of the Streamable HTTP MCP server at ``url``: the SDK's own timeouts
    (30 s, and 300 s between the bytes of a stream a server may hold open), over
    :class:`H11Transport` — unless the environment names a proxy for ``url``: then over httpx's
    own transports, which go through it (a custom transport turns httpx's proxies off)."""
    timeout = httpx2.Timeout(30.0, read=300.0)
    if _proxied(url):
        return httpx2.AsyncClient(headers=headers, timeout=timeout)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, transport=H11Transport())


def _proxied(url: str) -> bool:
    """Whether ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY`` (and ``NO_PROXY``) send ``url``
    through a proxy."""
    parts = urlsplit(url)
    proxies = getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not proxy_bypass(parts.netloc)
