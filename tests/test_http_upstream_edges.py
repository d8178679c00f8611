"""HTTP upstream edges (issue 22, item 7): a large error body answered promptly, h11 protocol
errors as upstream errors (never internal ones), one event capped by ``max_event_bytes``, a
body split at every byte offset, a partial event in flow control. (The chunked terminator in a
segment of its own: ``test_http_sse_transport``.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import h11
import pytest

from chunkbridge.gateway.errors import UpstreamClosed, UpstreamEventTooLarge, UpstreamUnavailable
from chunkbridge.gateway.transports.base import UpstreamEnded
from chunkbridge.gateway.transports.http_connection import HttpConnection, Origin
from chunkbridge.gateway.transports.http_pool import HttpConnectionPool
from chunkbridge.gateway.transports.http_sse import upstream_body
from chunkbridge.kit import HttpRequest, HttpSseContract
from tests.gateway_harness import post, running_gateway, user_body
from tests.helpers import decode_sse
from tests.test_http_sse_transport import (
    CONTRACT,
    SSE_HEAD,
    Handler,
    RawServer,
    chunked,
    drain,
    open_,
    raw_server,
    replies,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


async def test_an_error_body_over_64_kib_is_answered_at_once() -> None:
    def handler(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await state.read_request(reader)
            writer.write(b"HTTP/1.1 400 Bad Request\r\ntransfer-encoding: chunked\r\n\r\n")
            await writer.drain()
            await asyncio.sleep(0.1)  # the head alone first: the gateway is waiting for the body
            body = b'{"error": "' + b"x" * 200_000 + b'"}'
            writer.write(b"%x\r\n%s\r\n" % (len(body), body))  # and never ends it
            await writer.drain()
            await asyncio.sleep(30)

        return serve

    seen: list[int] = []

    def error_frame(status: int, body: bytes) -> str:
        seen.append(len(body))
        return "frame"

    contract = HttpSseContract(request=CONTRACT.request, error_frame=error_frame)
    pool = HttpConnectionPool()
    async with raw_server(handler) as (url, _):
        loop = asyncio.get_running_loop()
        started = loop.time()
        upstream = await open_(pool, url, contract, first_byte_timeout=20)
        took = loop.time() - started
        assert await drain(upstream) == ["frame"]
        await pool.aclose()
    assert took < 2
    assert 64 * 1024 <= seen[0] < 300_000


async def test_h11_protocol_errors_are_upstream_errors() -> None:
    pool = HttpConnectionPool()
    # A request h11 refuses to write (a header value with a line break: a key from a bad env).
    bad = HttpRequest("/", {}, {"x-api-key": "k\r\nx-injected: 1"})
    with pytest.raises(UpstreamUnavailable) as refused:
        await open_http_sse_with(pool, "http://127.0.0.1:9/v1", bad)
    assert "protocol error" in str(refused.value.detail)

    # A response h11 cannot read.
    async with raw_server(replies(b"HTTP/1.1 200 OK\r\ncontent-length: nope\r\n\r\n")) as (url, _):
        with pytest.raises((UpstreamClosed, UpstreamUnavailable)):
            await open_(pool, url)
    await pool.aclose()


async def open_http_sse_with(pool: HttpConnectionPool, url: str, request: HttpRequest) -> None:
    from chunkbridge.gateway.transports.http_sse import open_http_sse

    await open_http_sse(
        pool, url, request, CONTRACT, headers={}, retries=0, connect_timeout=1, first_byte_timeout=1
    )


@pytest.mark.parametrize("framing", ["sse", "ndjson"])
async def test_an_event_that_never_ends_is_capped_by_max_event_bytes(framing: str) -> None:
    def handler(state: RawServer) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await state.read_request(reader)
            kind = b"text/event-stream" if framing == "sse" else b"application/x-ndjson"
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: "
                + kind
                + b"\r\ntransfer-encoding: chunked\r\n\r\n"
            )
            first = b'data: {"n":1}\n\n' if framing == "sse" else b'{"n":1}\n'
            writer.write(b"%x\r\n%s\r\n" % (len(first), first))
            start = b"data: " if framing == "sse" else b""
            piece = start + b"x" * 65_536
            for _ in range(200):  # 13 MB of one line, unless the reader gives up
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
                piece = b"x" * 65_536

        return serve

    pool = HttpConnectionPool(max_event_bytes=256 * 1024)
    async with raw_server(handler) as (url, state):
        upstream = await open_(pool, url)
        frames = []
        with pytest.raises(UpstreamEventTooLarge):
            async with asyncio.timeout(5):
                while True:
                    frame = await upstream.recv()
                    if frame is not None:
                        frames.append(frame)
        await upstream.aclose()
        await pool.aclose()
    assert frames == ['{"n":1}']  # what came before is delivered


@pytest.mark.conformance
async def test_the_gateway_ends_the_turn_with_a_clear_error_for_an_oversized_event(
    real_clients,
) -> None:
    from tests.gateway_harness import http_upstream, sse_response

    def endless(request: object) -> object:
        start = b'{"choices":[{"delta":{"content":"Hi"}}]}'
        return sse_response([start, b"x" * 300_000], pause=0)

    async with http_upstream("/v1/chat/completions", endless) as base:
        async with running_gateway(
            dialect="openai-chat", upstream=base, max_event_bytes=64 * 1024
        ) as (gw, _):
            response = await post(gw, "s1", user_body("hi"))
    chunks = decode_sse(response.content)
    errors = [c for c in chunks if c["type"] == "error"]
    assert errors and "larger than this gateway accepts" in errors[0]["errorText"]
    assert chunks[-1]["type"] == "finish"
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.error_text == errors[0]["errorText"], (major, verdict)
        assert verdict.text() == "Hi"  # what came before the oversized event is kept


class FakeTransport:
    """What a connection shell writes to and pauses, without a socket: reads are fed by hand."""

    def __init__(self) -> None:
        #: ``True`` per pause_reading, ``False`` per resume_reading.
        self.paused: list[bool] = []

    def write(self, data: bytes) -> None:
        pass

    def pause_reading(self) -> None:
        self.paused.append(True)

    def resume_reading(self) -> None:
        self.paused.append(False)

    def abort(self) -> None:
        pass


def requested_shell(transport: FakeTransport) -> HttpConnection:
    """A connection shell that has sent a request and waits for the response."""
    shell = HttpConnection(Origin("http", "127.0.0.1", 80))
    shell.connection_made(transport)  # type: ignore[arg-type]
    headers = [("host", "x"), ("content-length", "2")]
    shell.send(h11.Request(method="POST", target="/", headers=headers), b"{}", upstream_body)
    return shell


def feed_response(parts: list[bytes]) -> tuple[list[str], Exception | None]:
    """A fresh connection shell fed ``parts`` as successive reads: its frames and how it ended."""

    async def run() -> tuple[list[str], Exception | None]:
        shell = requested_shell(FakeTransport())
        for part in parts:
            shell.data_received(part)
        return list(shell.frames), shell.end

    return asyncio.run(run())


def test_a_recorded_body_split_at_every_byte_offset_gives_the_same_frames() -> None:
    recording = FIXTURES / "anthropic-messages" / "tool-use-streamed-input.jsonl"
    if not recording.exists():
        recording = sorted((FIXTURES / "anthropic-messages").glob("*.jsonl"))[0]
    payloads = [line for line in recording.read_bytes().split(b"\n") if line.strip()]
    body = b"".join(b"event: x\ndata: " + p + b"\r\n\r\n" for p in payloads)
    response = SSE_HEAD + chunked(body[: len(body) // 2], body[len(body) // 2 :])
    expected, end = feed_response([response])
    assert expected == [p.decode() for p in payloads] and isinstance(end, UpstreamEnded)
    for offset in range(1, len(response)):
        frames, end = feed_response([response[:offset], response[offset:]])
        assert frames == expected, offset
        assert isinstance(end, UpstreamEnded), offset


async def test_a_partial_event_counts_towards_the_read_high_water_mark() -> None:
    transport = FakeTransport()
    shell = requested_shell(transport)
    # One small complete event and a large partial one: together over the high-water mark.
    body = b'data: {"n":1}\n\ndata: ' + b"x" * 70_000
    shell.data_received(SSE_HEAD + b"%x\r\n%s\r\n" % (len(body), body))
    assert list(shell.frames) == ['{"n":1}'] and transport.paused == [True]
    shell.frames.popleft()
    shell.taken(len('{"n":1}'))
    assert transport.paused == [True, False]  # nothing left to take: the partial must complete
