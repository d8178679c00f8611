"""The WebSocket upstream transport (websockets' Sans-I/O protocol in a thin asyncio shell)
against a real ``websockets`` server on 127.0.0.1, on asyncio's loop and on uvloop: messages,
fragmentation, pings, every way a connection can end, handshake failures, flow control and
gathering a burst."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

from chunkbridge.gateway.errors import (
    UpstreamAuthRejected,
    UpstreamClosed,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from chunkbridge.gateway.transports import UpstreamEnded, open_websocket
from chunkbridge.gateway.transports import websocket as ws_transport
from tests.helpers import until

Handler = Callable[[ServerConnection], Awaitable[None]]


pytestmark = pytest.mark.both_loops


@contextlib.asynccontextmanager
async def server(
    handler: Handler, *, reject: int | None = None, **options: Any
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """A websockets server running ``handler``; yields its URL and what it saw."""
    seen: dict[str, Any] = {"received": []}

    def process_request(connection: ServerConnection, request: Request) -> Response | None:
        seen["headers"] = request.headers
        if reject is not None:
            response = connection.respond(reject, "no\n")
            if 300 <= reject < 400:
                response.headers["Location"] = "ws://127.0.0.1:1/elsewhere"
            return response
        return None

    async def wrapped(connection: ServerConnection) -> None:
        seen["connection"] = connection
        await handler(connection)

    async with serve(
        wrapped, "127.0.0.1", 0, compression=None, process_request=process_request, **options
    ) as srv:
        port = srv.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/sessions/s1/ws", seen


async def connect(url: str, **kwargs: Any):
    return await open_websocket(url, headers=kwargs.pop("headers", {}), connect_timeout=2, **kwargs)


async def drain(upstream: Any) -> tuple[list[bytes], BaseException]:
    """Every message until the end, and the exception that ended it."""
    messages = []
    async with asyncio.timeout(5):  # not wait_for: its task would keep the exception in a cycle
        while True:
            try:
                messages.append(await upstream.recv())
            except (UpstreamEnded, UpstreamClosed) as exc:
                return messages, exc


async def test_text_binary_and_fragmented_messages_then_a_normal_close() -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.send('{"a":1}')
        await ws.send(b"\x00\x01")
        await ws.send(['{"long":', '"in three', ' pieces"}'])  # one message, three frames
        await ws.close()

    async with server(handler) as (url, _):
        upstream = await connect(url)
        messages, end = await drain(upstream)
        await upstream.aclose()
    assert messages == [b'{"a":1}', b"\x00\x01", b'{"long":"in three pieces"}']
    assert isinstance(end, UpstreamEnded)


@pytest.mark.parametrize(
    ("code", "ended_normally"), [(1000, True), (1001, True), (1011, False), (4000, False)]
)
async def test_close_codes(code: int, ended_normally: bool) -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.send("last")
        await ws.close(code, "bye")

    async with server(handler) as (url, _):
        upstream = await connect(url)
        messages, end = await drain(upstream)
        await upstream.aclose()
    assert messages == [b"last"]  # what came before the close is still delivered
    if ended_normally:
        assert isinstance(end, UpstreamEnded)
    else:
        assert isinstance(end, UpstreamClosed)
        assert str(code) in end.detail


async def test_connection_dropped_without_a_close_frame() -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.send("partial")
        await asyncio.sleep(0.05)
        ws.transport.abort()

    async with server(handler) as (url, _):
        upstream = await connect(url)
        messages, end = await drain(upstream)
        await upstream.aclose()
    assert messages == [b"partial"]
    assert isinstance(end, UpstreamClosed)
    assert "no close frame" in end.detail


async def test_pings_are_answered_while_nothing_is_read() -> None:
    ponged = asyncio.Event()

    async def handler(ws: ServerConnection) -> None:
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, 1)
        ponged.set()
        await ws.send("pong seen")
        await ws.close()

    async with server(handler) as (url, _):
        upstream = await connect(url)
        await asyncio.wait_for(ponged.wait(), 2)  # the pong goes out without any recv()
        messages, end = await drain(upstream)
        await upstream.aclose()
    assert messages == [b"pong seen"]
    assert isinstance(end, UpstreamEnded)


async def test_handshake_headers_and_sent_frames() -> None:
    async def handler(ws: ServerConnection) -> None:
        async for message in ws:
            await ws.send(message)  # echo until the client closes

    async with server(handler) as (url, seen):
        upstream = await connect(url, headers={"Authorization": "Bearer t0k"})
        await upstream.send({"type": "prompt", "content": "héllo"})
        assert orjson.loads(await asyncio.wait_for(upstream.recv(), 2)) == {
            "type": "prompt",
            "content": "héllo",
        }
        await upstream.aclose()
    assert seen["headers"]["Authorization"] == "Bearer t0k"
    assert seen["headers"]["User-Agent"] == "chunkbridge"


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, UpstreamAuthRejected),
        (403, UpstreamAuthRejected),
        (404, UpstreamUnavailable),
        (302, UpstreamUnavailable),  # redirects are not followed
        (500, UpstreamUnavailable),
    ],
)
async def test_rejected_handshakes(status: int, error: type[Exception]) -> None:
    async def handler(ws: ServerConnection) -> None:  # pragma: no cover - never reached
        await ws.close()

    async with server(handler, reject=status) as (url, _):
        with pytest.raises(error) as info:
            await connect(url)
    assert str(status) in info.value.detail


async def test_refused_and_silent_servers() -> None:
    # A port nobody listens on: bind one, close it, connect there.
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    with pytest.raises(UpstreamUnavailable):
        await connect(f"ws://127.0.0.1:{port}/x")

    # A TCP server that accepts and never answers the handshake.
    writers = []
    silent = await asyncio.start_server(lambda r, w: writers.append(w), "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    started = time.monotonic()
    with pytest.raises(UpstreamTimeout):
        await open_websocket(f"ws://127.0.0.1:{port}/x", headers={}, connect_timeout=0.3)
    assert time.monotonic() - started < 2
    for writer in writers:
        writer.close()
    silent.close()
    await silent.wait_closed()

    with pytest.raises(UpstreamUnavailable):
        await connect("http://127.0.0.1:1/not-a-websocket-url")


async def test_abort_frame_then_close_within_the_close_timeout() -> None:
    got: list[Any] = []
    done = asyncio.Event()

    async def handler(ws: ServerConnection) -> None:
        async for message in ws:
            got.append(orjson.loads(message))
        got.append(("closed", ws.close_code))
        done.set()

    async with server(handler) as (url, _):
        upstream = await connect(url, abort_frame={"type": "abort"})
        started = time.monotonic()
        await upstream.aclose(abort=True)
        assert time.monotonic() - started < ws_transport.CLOSE_TIMEOUT + 0.5
        await asyncio.wait_for(done.wait(), 2)
        with pytest.raises(UpstreamClosed):  # nothing more can be sent
            await upstream.send({"type": "late"})
    assert got == [{"type": "abort"}, ("closed", 1000)]


async def test_a_slow_reader_stops_reading_the_socket_and_loses_nothing() -> None:
    count, size = 400, 1000  # 400 kB, far above the 64 KiB high-water mark

    async def handler(ws: ServerConnection) -> None:
        for i in range(count):
            await ws.send(orjson.dumps({"i": i, "pad": "x" * size}).decode())
        await ws.close()

    async with server(handler) as (url, _):
        upstream = await connect(url)
        shell = upstream._shell
        await until(lambda: shell.flow_paused)  # read nothing: the shell stops at the mark
        assert shell.buffered_bytes <= ws_transport.READ_HIGH_WATER + 300 * 1024  # + one read
        messages, end = await drain(upstream)
        await upstream.aclose()
    assert [orjson.loads(m)["i"] for m in messages] == list(range(count))
    assert isinstance(end, UpstreamEnded)
    assert not shell.flow_paused


async def test_gather_lets_a_burst_arrive_and_buffers_it_in_one_go() -> None:
    go = asyncio.Event()

    async def handler(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send("first")
        await go.wait()
        for i in range(20):  # spread over ~40 ms, inside the gathering window
            await ws.send(f"burst {i}")
            await asyncio.sleep(0.002)
        await ws.wait_closed()

    async with server(handler) as (url, _):
        upstream = await connect(url)
        shell = upstream._shell
        reads = 0
        original = shell.protocol.receive_data

        def counting(data: bytes) -> None:  # uvloop binds data_received itself: count below it
            nonlocal reads
            reads += 1
            original(data)

        shell.protocol.receive_data = counting
        await upstream.send({"type": "prompt"})
        assert await asyncio.wait_for(upstream.recv(), 2) == b"first"
        reads = 0
        go.set()
        await upstream.gather(0.2)  # the burst is sent meanwhile; the socket is not read
        assert [m.decode() for m in shell.messages] == [f"burst {i}" for i in range(20)]
        assert reads == 1  # all of it in one read, after the gathering
        assert not shell.gathering
        await upstream.aclose()


async def test_a_closed_upstream_is_freed_by_reference_counting() -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.send("x")
        await ws.close()

    async with server(handler) as (url, _):
        gc.collect()
        gc.disable()
        try:
            upstream = await connect(url)
            await drain(upstream)
            await upstream.aclose()
            shell = weakref.ref(upstream._shell)
            del upstream
            await asyncio.sleep(0.05)
            assert shell() is None
        finally:
            gc.enable()
