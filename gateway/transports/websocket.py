"""WebSocket upstreams: every dialect with a WebSocket contract, for ``ws://`` and ``wss://`` URLs.

websockets' Sans-I/O ``ClientProtocol`` does all of the protocol — the opening handshake and
its checks, framing and masking, pings answered with pongs, the closing handshake, the size
limit — and this module is the thin asyncio shell around it that the library's documentation
invites ("integrate the Sans-I/O layer"), in the way the gateway's turns are sans-I/O cores fed
by :mod:`chunkbridge.gateway.turn.driver`.

Why not websockets' own asyncio client: it hands over one message per ``recv()`` through an
assembler built for applications that await each message (a queue, a future per wait, flow
control checks on every put and get, a keep-alive task per connection). The turn driver drains
every message that one socket read brought in and writes them in one response chunk, so here a
read's messages land in a plain deque that ``recv`` pops: less CPU per event and less memory per
open stream (bench/RESULTS.md has the measurements).

Flow control is by bytes: above :data:`READ_HIGH_WATER` received but not yet taken, the shell
stops reading the socket, so a slow browser slows the upstream instead of growing our memory.
It also stops reading while the response loop lets a burst gather (:meth:`_Shell.gather`):
the kernel collects the upstream's frames, and one read takes them all.

Not supported (the asyncio client had them; a sidecar does not need them): HTTP redirects on
the handshake (a 3xx is a 502, which also keeps the upstream where the configuration says),
proxies, compression (loopback or cluster traffic; deflate costs CPU and ~40 KB per connection),
client-initiated pings (a silent upstream is the idle timeout's job).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

import orjson
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosedError
from websockets.frames import OK_CLOSE_CODES, Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import State
from websockets.uri import parse_uri

from chunkbridge.gateway.errors import UpstreamClosed
from chunkbridge.gateway.transports.base import UpstreamEnded, map_upstream_errors

__all__ = ["READ_HIGH_WATER", "WebSocketUpstream", "open_websocket"]

#: How long closing may take after the client left (the issue's "within 1 s").
CLOSE_TIMEOUT = 1.0
#: Largest upstream message accepted (a bigger one fails the connection with close code 1009).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: Received-but-not-taken bytes above which the socket is not read; reading resumes below a
#: quarter of it. One response loop batch is a few KB, so normal streams never pause.
READ_HIGH_WATER = 64 * 1024

_TEXT, _BINARY, _CONT = Opcode.TEXT, Opcode.BINARY, Opcode.CONT


class _Shell(asyncio.Protocol):
    """asyncio's callbacks in, ``ClientProtocol`` calls and a deque of messages out."""

    def __init__(self, protocol: ClientProtocol, request: Request, high_water: int) -> None:
        self.protocol = protocol
        self.request = request
        self.messages: deque[bytes] = deque()
        #: Bytes in :attr:`messages` (flow control).
        self.buffered_bytes = 0
        self.high_water = high_water
        self.low_water = high_water // 4
        #: Not reading because :attr:`buffered_bytes` went above the high-water mark.
        self.flow_paused = False
        #: Not reading because the response loop lets a burst gather (:meth:`gather`).
        self.gathering = False
        self._fragments: list[bytes] = []
        loop = asyncio.get_running_loop()
        #: Done when the handshake response arrived or the connection was lost before it.
        self.handshake_done: asyncio.Future[None] = loop.create_future()
        self.lost: asyncio.Future[None] = loop.create_future()
        #: The server's handshake response arrived (accepted or not: see ``handshake_exc``).
        self.response_received = False
        #: The future ``recv`` waits on while nothing is buffered.
        self.waiter: asyncio.Future[object] | None = None
        self.transport: asyncio.Transport

    # -- asyncio callbacks ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.protocol.send_request(self.request)
        self.flush()

    def data_received(self, data: bytes) -> None:
        protocol = self.protocol
        protocol.receive_data(data)
        events = protocol.events_received()
        self.flush()  # pongs, the close reply
        messages = self.messages
        for event in events:
            if event.__class__ is Frame:
                opcode = event.opcode
                payload: bytes = event.data  # type: ignore[assignment]  # bytes, from the parser
                if opcode is _TEXT or opcode is _BINARY:
                    if event.fin:
                        messages.append(payload)
                        self.buffered_bytes += len(payload)
                    else:
                        self._fragments = [payload]
                elif opcode is _CONT:
                    self._fragments.append(payload)
                    if event.fin:
                        message = b"".join(self._fragments)
                        self._fragments = []
                        messages.append(message)
                        self.buffered_bytes += len(message)
                # ping, pong, close: the protocol answered them already
            elif not self.handshake_done.done():  # the handshake response (or its failure)
                self.response_received = True
                self.handshake_done.set_result(None)
        if self.buffered_bytes > self.high_water and not self.flow_paused:
            self.flow_paused = True
            if not self.gathering:
                self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> None:
        self.protocol.receive_eof()
        self.protocol.events_received()
        self.flush()
        # None: the transport closes; a WebSocket never writes after the peer's EOF.

    def connection_lost(self, exc: Exception | None) -> None:
        self.protocol.receive_eof()  # idempotent; the state becomes CLOSED
        if not self.handshake_done.done():
            self.handshake_done.set_result(None)
        self.lost.set_result(None)
        self._wake()

    # -- helpers -------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write what the protocol has to send; an empty chunk means half-close."""
        for data in self.protocol.data_to_send():
            if data:
                self.transport.write(data)
            elif self.transport.can_write_eof():
                self.transport.write_eof()
            else:
                self.transport.close()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done() and (self.messages or self.ended):
            waiter.set_result(None)

    @property
    def ended(self) -> bool:
        """No message will arrive any more: a close frame came in, or the connection is gone."""
        protocol = self.protocol
        return protocol.close_rcvd is not None or protocol.state is State.CLOSED

    def taken(self, size: int) -> None:
        self.buffered_bytes -= size
        if self.flow_paused and self.buffered_bytes <= self.low_water:
            self.flow_paused = False
            if not self.gathering and not self.lost.done():
                self.transport.resume_reading()

    async def gather(self, seconds: float) -> None:
        if self.flow_paused or self.lost.done():  # not reading anyway
            await asyncio.sleep(seconds)
            return
        self.gathering = True
        self.transport.pause_reading()
        try:
            await asyncio.sleep(seconds)
        finally:
            self.gathering = False
            if not self.flow_paused and not self.lost.done():
                self.transport.resume_reading()
        # Let the event loop read the socket before the response loop goes on. uvloop polls
        # sockets before it runs the callbacks that are due, asyncio after them: two passes
        # give both one poll in between.
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    def end_exception(self) -> Exception:
        """:class:`UpstreamEnded` after a normal close (1000/1001), else :class:`UpstreamClosed`."""
        protocol = self.protocol
        received, sent = protocol.close_rcvd, protocol.close_sent
        if received is not None and received.code in OK_CLOSE_CODES:
            if sent is None or sent.code in OK_CLOSE_CODES:
                return UpstreamEnded()
        error = ConnectionClosedError(received, sent, protocol.close_rcvd_then_sent)
        return UpstreamClosed(detail=f"receive: {error}")


#: The result a waiting ``recv`` gets from :meth:`WebSocketUpstream.wake`.
_WOKEN = object()


class WebSocketUpstream:
    def __init__(self, shell: _Shell, abort_frame: dict[str, Any] | None = None) -> None:
        self._shell = shell
        self._messages = shell.messages
        #: What :meth:`aclose` sends first when the turn is abandoned.
        self.abort_frame = abort_frame

    async def send(self, frame: dict[str, Any]) -> None:
        shell = self._shell
        if shell.protocol.state is not State.OPEN:
            raise UpstreamClosed(detail=f"send: connection is {shell.protocol.state.name.lower()}")
        shell.protocol.send_text(orjson.dumps(frame))
        shell.flush()

    async def recv(self) -> bytes | None:
        """The next message's payload as bytes (no UTF-8 decoding: orjson parses bytes), or
        ``None`` when :meth:`wake` interrupted the wait."""
        messages = self._messages
        shell = self._shell
        while not messages:
            if shell.ended:
                raise shell.end_exception()
            shell.waiter = waiter = asyncio.get_running_loop().create_future()
            try:
                if await waiter is _WOKEN:
                    return None
            finally:
                shell.waiter = None
        data = messages.popleft()
        shell.taken(len(data))
        return data

    def buffered(self) -> bool:
        return bool(self._messages)

    def wake(self) -> None:
        waiter = self._shell.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(_WOKEN)

    async def gather(self, seconds: float) -> None:
        await self._shell.gather(seconds)

    async def aclose(self, *, abort: bool = False) -> None:
        """Close (with ``abort``, sending the abort frame first) within :data:`CLOSE_TIMEOUT`."""
        abort_frame = self.abort_frame if abort else None
        shell = self._shell
        protocol = shell.protocol
        # Unread messages are dropped; reading must go on for the server's close reply.
        shell.messages.clear()
        shell.taken(shell.buffered_bytes)
        with contextlib.suppress(Exception):
            if protocol.state is State.OPEN:
                if abort_frame is not None:
                    protocol.send_text(orjson.dumps(abort_frame))
                protocol.send_close(1000)
                shell.flush()
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await asyncio.shield(shell.lost)
        if not shell.lost.done():
            shell.transport.abort()


async def open_websocket(
    url: str,
    *,
    headers: dict[str, str],
    connect_timeout: float,
    abort_frame: dict[str, Any] | None = None,
    high_water: int = READ_HIGH_WATER,
) -> WebSocketUpstream:
    """Connect and finish the handshake within ``connect_timeout``, or raise an UpstreamError."""
    with map_upstream_errors("connect"):
        uri = parse_uri(url)
        protocol = ClientProtocol(uri, max_size=MAX_MESSAGE_BYTES)
        request = protocol.connect()
        request.headers.update(headers)
        request.headers.setdefault("User-Agent", "chunkbridge")
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(connect_timeout):
            transport, shell = await loop.create_connection(
                lambda: _Shell(protocol, request, high_water),
                uri.host,
                uri.port,
                ssl=True if uri.secure else None,
                server_hostname=uri.host if uri.secure else None,
            )
            try:
                await shell.handshake_done
            except BaseException:
                transport.abort()
                raise
        # The state may be past OPEN already: a short turn's frames and close can come in the
        # same read as the response. They are buffered; recv() hands them out, then the end.
        if protocol.handshake_exc is not None or not shell.response_received:
            transport.abort()
            raise protocol.handshake_exc or ConnectionClosedError(None, None)
    return WebSocketUpstream(shell, abort_frame)
