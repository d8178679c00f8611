"""One HTTP/1.1 client connection: h11's Sans-I/O client state machine in a thin asyncio protocol,
the gateway's only HTTP client. It carries the turns of HTTP upstreams
(:mod:`~chunkbridge.gateway.transports.http_sse`) and the MCP client's requests
(:mod:`chunkbridge.gateway.tools.http_transport`); the pool
(:mod:`~chunkbridge.gateway.transports.http_pool`) opens, keeps and reuses them.

h11 does the protocol (framing, chunked bodies, keep-alive rules) and :class:`HttpConnection` is
the shell around it, as :mod:`chunkbridge.gateway.transports.websocket` is for websockets'
protocol: a ``data_received`` call hands what one socket read brought of the body to the
exchange's :class:`BodyDecoder` in one piece (SSE events, JSON lines, or the bytes as they are)
and puts what it gives into a deque that the reader pops, so a reader takes everything of a read
in one go. A general-purpose async client costs several awaits per body chunk through its stream
layers, which on a token stream (one event per read) was most of the gateway's CPU per event,
and on an MCP call a fifth of a turn's (bench/RESULTS.md).

Flow control is by the size of what is held (characters or bytes): above :data:`READ_HIGH_WATER`
received but not taken, the shell stops reading the socket (a slow reader slows the server down
instead of growing our memory), and it stops reading while a reader lets a burst gather.

Errors are the gateway's own (:mod:`chunkbridge.gateway.errors`): a connection lost or a response
h11 cannot read is :class:`~chunkbridge.gateway.errors.UpstreamClosed`; the MCP side maps them to
``httpx2``'s at its boundary. Not supported: compressed bodies on the upstream side (its requests
ask for none), HTTP/2.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import h11

from chunkbridge.gateway.errors import (
    UpstreamClosed,
    UpstreamError,
    UpstreamEventTooLarge,
    UpstreamUnavailable,
)
from chunkbridge.gateway.transports.base import UpstreamEnded

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "READ_HIGH_WATER",
    "WOKEN",
    "BodyDecoder",
    "ChooseDecoder",
    "Frame",
    "HttpConnection",
    "Origin",
    "RawBody",
    "header_value",
]

#: Received-but-not-taken characters (or bytes) above which the body is not read; reading resumes
#: below a quarter of it.
READ_HIGH_WATER = 64 * 1024
#: Largest single upstream event (``max_event_bytes``): an SSE event or an NDJSON line that
#: grows past it without ending fails the exchange instead of the gateway's memory.
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
#: What a reader's :meth:`HttpConnection.wait` returns when a timer (not the body) woke it.
WOKEN = object()
_NEED_DATA = h11.NEED_DATA
_DATA = h11.Data

#: One decoded piece of a body: an event's text, or bytes as they came.
Frame = str | bytes


class BodyDecoder(Protocol):
    """A body's framing, fed one read at a time (httpx's decoder shape)."""

    def frames(self, data: bytes) -> list[str] | list[bytes]:
        """The frames ``data`` completes (the rest is kept for the next call); ``data`` may be
        a view of h11's buffer, valid only during the call."""

    @property
    def pending(self) -> int:
        """Size of the frame under way (it counts towards the high-water mark)."""

    def flush(self) -> Frame | None:
        """At the body's end: the frame under way, if it is one."""


#: Chooses the body's decoder from the response head; may raise an ``UpstreamError`` to refuse
#: the response (the exchange then fails with it).
ChooseDecoder = Callable[[h11.Response], BodyDecoder]


class RawBody:
    """The body as it arrives: one frame of bytes per read."""

    pending = 0

    def frames(self, data: bytes) -> list[bytes]:
        return [bytes(data)]  # h11 may hand over a view of its buffer

    def flush(self) -> Frame | None:
        return None


def raw_body(response: h11.Response) -> BodyDecoder:
    return RawBody()


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> tuple[Origin, str]:
        """The origin of ``url`` and the request target (path and query)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UpstreamUnavailable(detail=f"not an http(s) URL: {url}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(parts.scheme, parts.hostname, port), target

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


class HttpConnection(asyncio.Protocol):
    """asyncio's callbacks in, h11 calls and a deque of decoded frames out. One shell is one
    connection; it serves one request at a time and may be reused for the next."""

    def __init__(self, origin: Origin, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.origin = origin
        self.max_event_bytes = max_event_bytes
        self.conn = h11.Connection(h11.CLIENT)
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.lost: asyncio.Future[None] = loop.create_future()
        self.idle_since = 0.0
        self.choose_decoder: ChooseDecoder = raw_body
        self._reset(loop)

    def _reset(self, loop: asyncio.AbstractEventLoop) -> None:
        self.frames: deque[Frame] = deque()
        self.size = 0
        self.high_water = READ_HIGH_WATER
        self.low_water = READ_HIGH_WATER // 4
        self.flow_paused = False
        self.gathering = False
        self.decoder: BodyDecoder = RawBody()
        #: Set when the response head arrived (or the connection failed before it).
        self.response_ready: asyncio.Future[h11.Response] = loop.create_future()
        #: How the body ended (``UpstreamEnded`` or an error), once it did.
        self.end: Exception | None = None
        #: Whether any byte came on this exchange: a kept-alive connection closed before any did
        #: had processed nothing, so its request may go again (the pool's one retry).
        self.received_any = False
        self.waiter: asyncio.Future[Any] | None = None

    # -- asyncio callbacks ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received_any = True
        conn = self.conn
        conn.receive_data(data)
        self._events()

    def eof_received(self) -> None:
        self.conn.receive_data(b"")
        self._events()
        # None: the transport closes.

    def connection_lost(self, exc: Exception | None) -> None:
        if self.end is None and self.transport is not None:
            detail = f"receive: {exc}" if exc else "receive: the connection was closed"
            error = UpstreamClosed(detail=detail)
            error.__cause__ = exc
            self._fail(error)
            self._wake(None)  # a reader waiting learns it now, not at its read timeout
        if not self.lost.done():
            self.lost.set_result(None)

    # -- the protocol ----------------------------------------------------------------------------

    def _events(self) -> None:
        conn = self.conn
        body: list[bytes] = []  # the body bytes of this read, decoded as one piece below
        try:
            while True:
                event = conn.next_event()
                if event is _NEED_DATA or event is h11.PAUSED:
                    break
                if event.__class__ is _DATA:
                    body.append(event.data)
                elif isinstance(event, h11.Response):
                    self.decoder = self.choose_decoder(event)
                    if not self.response_ready.done():
                        self.response_ready.set_result(event)
                elif isinstance(event, h11.EndOfMessage):
                    self._decode(body)
                    body = []
                    tail = self.decoder.flush()  # a last event without its blank line
                    if tail is not None:
                        self.frames.append(tail)
                    self.end = UpstreamEnded()
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    self._fail(UpstreamClosed(detail="receive: the connection was closed"))
                    break
                # InformationalResponse (100 Continue…): nothing to do
        except h11.RemoteProtocolError as exc:
            self._fail(UpstreamClosed(detail=f"receive: {exc}"))
        except UpstreamError as exc:
            self._fail(exc)
        try:  # what arrived before a failure is still delivered
            if body:
                self._decode(body)
        except UpstreamError as exc:
            self._fail(exc)
        if (
            self.size + self.decoder.pending > self.high_water
            and self.frames  # taking them resumes reading; a lone partial event must complete
            and not self.flow_paused
            and self.transport is not None
        ):
            self.flow_paused = True
            if not self.gathering:
                self.transport.pause_reading()
        self._wake(None)

    def _decode(self, body: list[bytes]) -> None:
        if not body:
            return
        frames = self.frames
        size = 0
        for frame in self.decoder.frames(body[0] if len(body) == 1 else b"".join(body)):
            frames.append(frame)
            size += len(frame)
        self.size += size
        if self.decoder.pending > self.max_event_bytes:
            raise UpstreamEventTooLarge(
                detail=f"an event over {self.max_event_bytes} bytes (max_event_bytes)"
            )

    def _fail(self, exc: UpstreamError) -> None:
        if self.end is None:
            self.end = exc
        if not self.response_ready.done():
            self.response_ready.set_exception(exc)
            self.response_ready.exception()  # retrieved: no "never retrieved" warning
        if self.transport is not None:
            self.transport.abort()

    def _wake(self, value: Any) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done() and (self.frames or self.end is not None):
            waiter.set_result(value)

    # -- the exchange ----------------------------------------------------------------------------

    def send(self, request: h11.Request, body: bytes, choose_decoder: ChooseDecoder) -> None:
        """Write the whole request; its response's body is decoded by ``choose_decoder``'s pick."""
        assert self.transport is not None
        self.choose_decoder = choose_decoder
        conn = self.conn
        self.transport.write(
            b"".join(
                (
                    conn.send(request) or b"",
                    conn.send(h11.Data(body)) or b"" if body else b"",
                    conn.send(h11.EndOfMessage()) or b"",
                )
            )
        )

    async def wait(self) -> Any:
        """Until a frame or the end arrives (``None``), or a waker sets :data:`WOKEN`."""
        self.waiter = waiter = asyncio.get_running_loop().create_future()
        try:
            return await waiter
        finally:
            self.waiter = None

    @property
    def reusable(self) -> bool:
        conn = self.conn
        return (
            not self.lost.done()
            and conn.our_state is h11.DONE
            and conn.their_state is h11.DONE
            and isinstance(self.end, UpstreamEnded)
        )

    def recycle(self) -> None:
        self.conn.start_next_cycle()
        self._reset(asyncio.get_running_loop())
        self.idle_since = time.monotonic()

    def taken(self, size: int) -> None:
        self.size -= size
        if self.flow_paused and (
            self.size + self.decoder.pending <= self.low_water or not self.frames
        ):
            self.flow_paused = False
            if not self.gathering and not self.lost.done() and self.transport is not None:
                self.transport.resume_reading()

    async def gather(self, seconds: float) -> None:
        transport = self.transport
        if self.flow_paused or self.lost.done() or self.end is not None or transport is None:
            await asyncio.sleep(seconds)
            return
        self.gathering = True
        transport.pause_reading()
        try:
            await asyncio.sleep(seconds)
        finally:
            self.gathering = False
            if not self.flow_paused and not self.lost.done():
                transport.resume_reading()
        # Let the event loop read the socket before the driver goes on (see the WebSocket shell).
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    def close(self) -> None:
        if self.transport is not None and not self.lost.done():
            self.transport.abort()


def header_value(response: h11.Response, name: bytes) -> bytes:
    for key, value in response.headers:
        if key == name:
            return bytes(value).lower()
    return b""
