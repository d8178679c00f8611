"""HTTP/1.1 connections to upstreams, kept alive and reused per origin: the transport under
:mod:`~chunkbridge.gateway.transports.http_sse`.

h11's Sans-I/O HTTP/1.1 client state machine does the protocol (framing, chunked bodies, keep-alive
rules) and :class:`HttpConnection` is the thin asyncio shell around it, as
:mod:`chunkbridge.gateway.transports.websocket` is for websockets' protocol: a ``data_received``
call decodes what one socket read brought in
(:class:`~chunkbridge.translators.core.sse_codec.SseDecoder`, one frame per ``data:`` payload; or
one per line for a newline-delimited JSON body, by its ``Content-Type``) into a deque that ``recv``
pops, so the turn driver takes every event of a read in one go. A general-purpose async client costs
several awaits per body chunk through its stream layers, which on a token stream (one event per
read) was most of the gateway's CPU per event (bench/RESULTS.md).

Flow control is by characters: above :data:`READ_HIGH_WATER` received but not taken, the shell
stops reading the socket (a slow client slows the provider down instead of growing our memory),
and it stops reading while the driver lets a burst gather. Connections are kept alive and reused
per origin (:mod:`~chunkbridge.gateway.transports.http_pool`).

Not supported: proxies, compressed bodies (the request asks for none), HTTP/2.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11

from chunkbridge.gateway.errors import (
    UpstreamClosed,
    UpstreamError,
    UpstreamEventTooLarge,
    UpstreamUnavailable,
)
from chunkbridge.gateway.transports.base import UpstreamEnded
from chunkbridge.translators.core.sse_codec import SseDecoder

__all__ = [
    "CLOSE_TIMEOUT",
    "DEFAULT_MAX_EVENT_BYTES",
    "MAX_ERROR_BODY",
    "READ_HIGH_WATER",
    "WOKEN",
    "HttpConnection",
    "Origin",
    "header_value",
]

#: Received-but-not-taken characters above which the body is not read; reading resumes below a
#: quarter of it.
READ_HIGH_WATER = 64 * 1024
#: How long closing may take.
CLOSE_TIMEOUT = 1.0
#: Largest error body read (the provider's message is in its first bytes).
MAX_ERROR_BODY = 64 * 1024
#: Largest single upstream event (``max_event_bytes``): an SSE event or an NDJSON line that
#: grows past it without ending fails the turn instead of the gateway's memory.
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
WOKEN = object()
_NEED_DATA = h11.NEED_DATA
_DATA = h11.Data


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
    """asyncio's callbacks in, h11 calls and a deque of SSE ``data`` payloads out. One shell is
    one connection; it serves one request at a time and may be reused for the next."""

    def __init__(self, origin: Origin, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.origin = origin
        self.max_event_bytes = max_event_bytes
        self.conn = h11.Connection(h11.CLIENT)
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.lost: asyncio.Future[None] = loop.create_future()
        self.idle_since = 0.0
        self._reset(loop)

    def _reset(self, loop: asyncio.AbstractEventLoop) -> None:
        self.frames: deque[str] = deque()
        self.size = 0
        self.high_water = READ_HIGH_WATER
        self.low_water = READ_HIGH_WATER // 4
        self.flow_paused = False
        self.gathering = False
        self.decoder: SseFrames | JsonLinesDecoder = SseFrames()
        #: Set when the response head arrived (or the connection failed before it).
        self.response_ready: asyncio.Future[h11.Response] = loop.create_future()
        self.status = 0
        self.error_body: list[bytes] = []
        self.error_size = 0
        #: How the body ended (``UpstreamEnded`` or an error), once it did.
        self.end: Exception | None = None
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
            self._fail(UpstreamClosed(detail=detail))
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
                    if self.status < 300:
                        body.append(event.data)
                    elif self.error_size < MAX_ERROR_BODY:
                        self.error_body.append(bytes(event.data))
                        self.error_size += len(event.data)
                elif isinstance(event, h11.Response):
                    self.status = event.status_code
                    if header_value(event, b"content-type").split(b";")[0].strip() in _JSON_LINES:
                        self.decoder = JsonLinesDecoder()
                    encoding = header_value(event, b"content-encoding")
                    if encoding not in (b"", b"identity") and self.status < 300:
                        raise UpstreamUnavailable(
                            detail=f"compressed response ({encoding.decode()}) not supported"
                        )
                    if not self.response_ready.done():
                        self.response_ready.set_result(event)
                elif isinstance(event, h11.EndOfMessage):
                    self._decode(body)
                    body = []
                    tail = self.decoder.flush()  # a last event without its blank line
                    if tail is not None and self.status < 300:
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
        if waiter is None or waiter.done():
            return
        # an error body is read up to MAX_ERROR_BODY only: past it, nothing more is awaited
        if self.frames or self.end is not None or self.error_size >= MAX_ERROR_BODY:
            waiter.set_result(value)

    def send(self, request: h11.Request, body: bytes) -> None:
        assert self.transport is not None
        conn = self.conn
        self.transport.write(
            b"".join(
                (
                    conn.send(request) or b"",
                    conn.send(h11.Data(body)) or b"",
                    conn.send(h11.EndOfMessage()) or b"",
                )
            )
        )

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


#: Content types of newline-delimited JSON bodies (one event per line instead of SSE).
_JSON_LINES = frozenset({b"application/x-ndjson", b"application/jsonl", b"application/json-lines"})


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


def header_value(response: h11.Response, name: bytes) -> bytes:
    for key, value in response.headers:
        if key == name:
            return bytes(value).lower()
    return b""
