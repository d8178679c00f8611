"""The HTTP SSE transport (h11 in a thin asyncio protocol) against raw servers on 127.0.0.1 that
answer with exactly the bytes each test needs: framing, keep-alive, failures, flow control."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import trustme

from chunkbridge.gateway.errors import UpstreamClosed, UpstreamTimeout, UpstreamUnavailable
from chunkbridge.gateway.transports.base import UpstreamEnded
from chunkbridge.gateway.transports.http_pool import HttpConnectionPool
from chunkbridge.gateway.transports.http_sse import HttpSseUpstream, open_http_sse
from chunkbridge.kit import HttpRequest, HttpSseContract
from tests.helpers import stalled

pytestmark = pytest.mark.asyncio

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
CONTRACT = HttpSseContract(request=lambda turn: HttpRequest("/", {}), error_frame=None)


class RawServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self.closed = asyncio.Event()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            self.closed.set()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        body = await reader.readexactly(length)
        self.requests.append(head + body)
        return head + body


def replies(raw: bytes) -> Callable[[RawServer], Handler]:
    """A server that reads the request, answers ``raw`` as it is, and closes the connection."""

    def handler(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await state.read_request(reader)
            writer.write(raw)
            await writer.drain()

        return serve

    return handler


@contextlib.asynccontextmanager
async def raw_server(
    handler: Callable[[RawServer], Handler], tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[str, RawServer]]:
    """Serves ``handler`` on 127.0.0.1 (over TLS with ``tls``: its URL then names localhost)."""
    state = RawServer(lambda r, w: asyncio.sleep(0))
    state.handler = handler(state)
    server = await asyncio.start_server(state._serve, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    base = f"https://localhost:{port}" if tls else f"http://127.0.0.1:{port}"
    try:
        yield f"{base}/v1/stream?x=1", state
    finally:
        server.close()


async def open_(
    pool: HttpConnectionPool,
    url: str,
    contract: HttpSseContract = CONTRACT,
    *,
    retries: int = 0,
    first_byte_timeout: float = 2,
) -> HttpSseUpstream:
    return await open_http_sse(
        pool,
        url,
        HttpRequest("/", {"q": 1}, {"x-api-key": "k"}),
        contract,
        headers={},
        retries=retries,
        connect_timeout=2,
        first_byte_timeout=first_byte_timeout,
    )


async def drain(upstream: HttpSseUpstream) -> list[str]:
    frames = []
    async with asyncio.timeout(5):
        while True:
            try:
                frame = await upstream.recv()
            except UpstreamEnded:
                return frames
            if frame is not None:
                frames.append(frame)


def chunked(*pieces: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)


@pytest.mark.parametrize("terminator_apart", [False, True], ids=["together", "apart"])
async def test_chunked_events_split_anywhere_and_the_connection_is_kept_alive(
    terminator_apart: bool,
) -> None:
    def handler(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                await state.read_request(reader)
                writer.write(SSE_HEAD)
                body = chunked(b'event: a\ndata: {"n"', b":1}\n\ndata: caf\xc3", b"\xa9\n\n")
                if terminator_apart:  # the last chunk, "0\r\n\r\n", in a segment of its own
                    writer.write(body[:-5])
                    await writer.drain()
                    await asyncio.sleep(0.05)
                    body = body[-5:]
                writer.write(body)
                await writer.drain()

        return serve

    pool = HttpConnectionPool()
    async with raw_server(handler) as (url, state):
        for _ in range(3):
            upstream = await open_(pool, url)
            assert await drain(upstream) == ['{"n":1}', "café"]
            await upstream.aclose()
        await pool.aclose()
    assert state.connections == 1  # kept alive and reused
    head = state.requests[0].split(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"post /v1/stream?x=1 http/1.1")
    assert b"x-api-key: k" in head and b"accept: text/event-stream" in head
    assert state.requests[0].endswith(b'{"q":1}')


async def test_a_kept_alive_connection_the_server_closed_is_replaced_once() -> None:
    body = b"data: x\n\n"
    # then the server drops the idle connection (its keep-alive timeout)
    handler = replies(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))

    pool = HttpConnectionPool()
    async with raw_server(handler) as (url, state):
        upstream = await open_(pool, url)
        assert await drain(upstream) == ["x"]
        await upstream.aclose()
        await asyncio.sleep(0.05)  # the server has closed it by now
        upstream = await open_(pool, url)
        assert await drain(upstream) == ["x"]
        await upstream.aclose()
        await pool.aclose()
    assert state.connections == 2


async def test_a_body_cut_off_mid_event_is_an_error_not_an_end() -> None:
    def handler(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await state.read_request(reader)
            writer.write(SSE_HEAD + b"9\r\ndata: a\n\n\r\n5\r\ndata:")
            await writer.drain()

        return serve

    pool = HttpConnectionPool()
    async with raw_server(handler) as (url, _):
        upstream = await open_(pool, url)
        assert await upstream.recv() == "a"
        with pytest.raises(UpstreamClosed):
            async with asyncio.timeout(5):
                while True:
                    await upstream.recv()
        await upstream.aclose()
        await pool.aclose()


async def test_retries_honour_retry_after_then_the_answer_streams() -> None:
    def handler(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                await state.read_request(reader)
                if len(state.requests) == 1:
                    writer.write(
                        b"HTTP/1.1 529 Overloaded\r\nretry-after: 0\r\ncontent-length: 2\r\n\r\n{}"
                    )
                else:
                    writer.write(SSE_HEAD + chunked(b"data: ok\n\n"))
                await writer.drain()

        return serve

    pool = HttpConnectionPool()
    contract = HttpSseContract(request=CONTRACT.request, retry_statuses=frozenset({529}))
    async with raw_server(handler) as (url, state):
        upstream = await open_(pool, url, contract, retries=2)
        assert await drain(upstream) == ["ok"]
        await upstream.aclose()
        await pool.aclose()
    assert len(state.requests) == 2


async def test_an_error_answer_becomes_the_dialects_frame() -> None:
    def handler(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await state.read_request(reader)
            writer.write(b"HTTP/1.1 400 Bad Request\r\ntransfer-encoding: chunked\r\n\r\n")
            writer.write(chunked(b'{"error": ', b'"too long"}'))
            await writer.drain()

        return serve

    seen = []

    def error_frame(status: int, body: bytes) -> str:
        seen.append((status, body))
        return "frame"

    contract = HttpSseContract(request=CONTRACT.request, error_frame=error_frame)
    pool = HttpConnectionPool()
    async with raw_server(handler) as (url, _):
        upstream = await open_(pool, url, contract)
        assert await drain(upstream) == ["frame"]
        await pool.aclose()
    assert seen == [(400, b'{"error": "too long"}')]


async def test_garbage_compression_silence_and_refusal_are_upstream_errors() -> None:
    garbage = replies(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
    gzip = replies(b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 0\r\n\r\n")

    def silent(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await state.read_request(reader)
            await asyncio.sleep(10)

        return serve

    pool = HttpConnectionPool()
    for handler, error in ((garbage, UpstreamClosed), (gzip, UpstreamUnavailable)):
        async with raw_server(handler) as (url, _):
            with pytest.raises(error):
                await open_(pool, url)
    async with raw_server(silent) as (url, _):
        with pytest.raises(UpstreamTimeout):
            await open_(pool, url, first_byte_timeout=0.2)
    async with raw_server(gzip) as (url, _):
        pass  # closed: nothing listens on that port any more
    with pytest.raises(UpstreamUnavailable):
        await open_(pool, url)
    await pool.aclose()


async def test_a_slow_reader_stops_reading_and_closing_mid_body_aborts() -> None:
    sent = 0

    def handler(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal sent
            await state.read_request(reader)
            writer.write(SSE_HEAD)
            event = b"data: " + b"x" * 1000 + b"\n\n"
            for _ in range(100_000):  # 100 MB if nothing pushed back
                writer.write(chunked(event)[:-5])  # one chunk, no terminator
                await writer.drain()
                sent += len(event)

        return serve

    pool = HttpConnectionPool()
    async with raw_server(handler) as (url, state):
        upstream = await open_(pool, url)
        assert (await upstream.recv() or "").startswith("xxx")
        held = await stalled(lambda: sent, quiet=0.3, within=10)
        assert held < 8 * 1024 * 1024  # kernel buffers plus our 64 K high-water mark, not 100 MB
        await upstream.aclose()
        async with asyncio.timeout(2):
            await state.closed.wait()  # the provider saw the request go away
        await pool.aclose()


async def test_https_upstreams_are_verified_and_kept_alive() -> None:
    """TLS with a test CA (trustme): the request goes through, SNI and verification included;
    a pool that does not trust the CA refuses the server."""
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)

    def handler(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                await state.read_request(reader)
                writer.write(SSE_HEAD + chunked(b"data: secure\n\n"))
                await writer.drain()

        return serve

    state = RawServer(lambda r, w: asyncio.sleep(0))
    state.handler = handler(state)
    server = await asyncio.start_server(state._serve, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    url = f"https://localhost:{port}/v1/stream"
    try:
        pool = HttpConnectionPool(client_context)
        for _ in range(2):
            upstream = await open_(pool, url)
            assert await drain(upstream) == ["secure"]
            await upstream.aclose()
        await pool.aclose()
        assert state.connections == 1
        assert b"host: localhost:%d" % port in state.requests[0].lower()
        with pytest.raises(UpstreamUnavailable):
            await open_(HttpConnectionPool(), url)  # the system CAs do not know the test CA
    finally:
        server.close()


async def test_a_newline_delimited_json_body_is_read_one_frame_per_line() -> None:
    def handler(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await state.read_request(reader)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson; charset=utf-8\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            writer.write(
                chunked(b'{"type": "a"}\n\n{"type"', b': "caf\xc3', b'\xa9"}\n{"last": 1}')
            )
            await writer.drain()

        return serve

    pool = HttpConnectionPool()
    async with raw_server(handler) as (url, _):
        upstream = await open_(pool, url)
        assert await drain(upstream) == ['{"type": "a"}', '{"type": "café"}', '{"last": 1}']
        await upstream.aclose()
        await pool.aclose()
