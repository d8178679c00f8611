"""Every limit is answered (issue 22, items 4 and 5): a client that sends its whole body before
reading — as browsers do with a large attachment — gets the 413 with its reason, for
Content-Length and chunked bodies, with the gateway's memory flat; the WebSocket entrance applies
the same limits with the same messages, metrics and log lines."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.gateway_harness import ScriptedUpstream, free_port, post, running_gateway
from tests.raw_http import RawResponse, read_response, request_head
from tests.test_gateway_process import process

MIB = 1024 * 1024
PATH = "/api/sessions/s1/chat"
TOO_LARGE = b"The request body is too large."


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")  # pragma: no cover


def history_body(messages: int) -> bytes:
    one = {"id": "m", "role": "user", "parts": [{"type": "text", "text": "hello there"}]}
    return orjson.dumps({"id": "c", "messages": [one] * messages, "trigger": "submit-message"})


def body_pieces(total: int, piece: int = MIB) -> AsyncIterator[bytes]:
    async def pieces() -> AsyncIterator[bytes]:
        sent = 0
        while sent < total:
            size = min(piece, total - sent)
            sent += size
            yield b"x" * size

    return pieces()


async def send_then_read(port: int, head: bytes, body: AsyncIterator[bytes], chunked: bool
                         ) -> RawResponse:  # fmt: skip
    """Write the whole request, then read the answer (a reset while writing fails the test)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head)
        async for piece in body:
            writer.write(b"%x\r\n%b\r\n" % (len(piece), piece) if chunked else piece)
            await writer.drain()
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return await read_response(reader)
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def read_while_writing(port: int, head: bytes, body: AsyncIterator[bytes]) -> RawResponse:
    """Read the answer while still writing: the 413 comes before the body is done."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def write() -> None:
        with contextlib.suppress(ConnectionError):
            writer.write(head)
            async for piece in body:
                writer.write(piece)
                await writer.drain()

    writing = asyncio.create_task(write())
    try:
        return await read_response(reader)
    finally:
        writing.cancel()
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


@pytest.fixture(scope="module")
def gateway() -> Iterator[tuple[int, int]]:
    """``chunkbridge serve`` as its own process (its port, its pid): what a browser talks to."""
    port = free_port()
    upstream = "ws://127.0.0.1:9/sessions/{session_id}/ws"  # never reached: every request fails
    args = ("serve", "--dialect", "agent-ops-v2", "--port", str(port), "--upstream", upstream)
    with process(*args, ready_url=f"http://127.0.0.1:{port}/healthz") as proc:
        yield port, proc.pid


@pytest.fixture
def gateway_port(gateway: tuple[int, int]) -> int:
    return gateway[0]


@pytest.mark.parametrize("close", [False, True], ids=["keep-alive", "connection-close"])
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_client_that_writes_50_mib_before_reading_gets_the_413(
    gateway: tuple[int, int], gateway_port: int, chunked: bool, close: bool
) -> None:
    total = 50 * MIB
    extra = {"connection": "close"} if close else None
    head = request_head(PATH, length=None if chunked else total, extra=extra)
    before = rss_mib(gateway[1])
    loop = asyncio.get_running_loop()
    started = loop.time()
    response = await asyncio.wait_for(
        send_then_read(gateway_port, head, body_pieces(total), chunked), 10
    )
    took = loop.time() - started
    assert response.status == 413 and response.body == TOO_LARGE
    assert took < 2
    assert rss_mib(gateway[1]) - before < 32  # the body was read and dropped, not kept


async def test_a_100000_message_history_gets_the_413(gateway_port: int) -> None:
    body = history_body(100_000)
    assert len(body) > 4 * MIB
    head = request_head(PATH, length=len(body))

    async def whole() -> AsyncIterator[bytes]:
        yield body

    response = await asyncio.wait_for(send_then_read(gateway_port, head, whole(), False), 10)
    assert response.status == 413 and response.body == TOO_LARGE


async def test_a_client_that_reads_while_writing_gets_the_413_before_it_is_done(
    gateway_port: int,
) -> None:
    total = 50 * MIB
    head = request_head(PATH, length=total)
    response = await asyncio.wait_for(
        read_while_writing(gateway_port, head, body_pieces(total)), 10
    )
    assert response.status == 413 and response.body == TOO_LARGE


async def test_the_rest_of_a_refused_body_is_read_only_up_to_the_bound() -> None:
    async with ScriptedUpstream() as upstream:
        async with running_gateway(upstream=upstream.url, lingering_bytes=2 * MIB) as (gw, _):
            port = int(gw.rsplit(":", 1)[1])
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            total = 200 * MIB
            writer.write(request_head(PATH, length=total))
            accepted = 0

            async def write() -> None:
                nonlocal accepted
                piece = b"x" * (256 * 1024)
                with contextlib.suppress(ConnectionError):
                    while accepted < total:
                        writer.write(piece)
                        await writer.drain()
                        accepted += len(piece)

            writing = asyncio.create_task(write())
            response = await asyncio.wait_for(read_response(reader), 10)
            assert response.status == 413 and response.body == TOO_LARGE
            assert response.headers["connection"] == "close"
            await asyncio.wait_for(writing, 10)  # the gateway closed: the writes failed
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
    assert accepted < 64 * MIB  # the bound (plus what the kernel buffers), not the 200 MiB


# -- the WebSocket entrance: the same limits, messages, metrics and log lines (item 5) -----------


def send_frame(request_id: str, messages: list[dict[str, Any]], pad: int = 0) -> str:
    frame = {"type": "send", "requestId": request_id, "id": "c1", "messages": messages}
    if pad:
        frame["body"] = {"padding": "x" * pad}
    return orjson.dumps(frame).decode()


async def socket_replies(gw: str, *frames: str, count: int) -> list[dict[str, Any]]:
    url = gw.replace("http://", "ws://") + "/api/sessions/s1/chat/ws"
    replies = []
    async with connect(url, max_size=None) as ws:
        for frame in frames:
            await ws.send(frame)
        while len(replies) < count:
            replies.append(orjson.loads(await asyncio.wait_for(ws.recv(), 10)))
    return replies


async def test_the_socket_applies_the_posts_limits_with_its_messages_and_metrics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    one = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]
    async with ScriptedUpstream() as upstream:
        settings = {"max_body_bytes": 64 * 1024, "max_messages": 3}
        async with running_gateway(upstream=upstream.url, **settings) as (gw, app):
            replies = await socket_replies(
                gw,
                send_frame("big", one, pad=70 * 1024),
                send_frame("many", one * 4),
                send_frame("shape", [{"role": "user"}]),
                count=3,
            )
            http_big = await post(gw, "s1", content=b'{"x":"' + b"x" * 70 * 1024 + b'"}')
            http_many = await post(gw, "s1", {"id": "c1", "messages": one * 4})
            app.state.gateway.draining = True
            (draining,) = await socket_replies(gw, send_frame("late", one), count=1)
            metrics = app.state.gateway.metrics.render().decode()
    errors = {r["requestId"]: r["errorText"] for r in replies if r["type"] == "error"}
    assert errors["big"] == http_big.text == "The request body is too large."
    assert errors["many"] == http_many.text
    assert "too many messages" in errors["many"]
    assert errors["shape"].startswith("The request body is not a chat request")
    assert draining == {
        "type": "error",
        "requestId": "late",
        "errorText": "The server is restarting; please try again.",
    }
    assert not upstream.received  # nothing went upstream
    assert 'chunkbridge_requests_total{status="413"} 2.0' in metrics
    assert 'chunkbridge_requests_total{status="400"} 3.0' in metrics
    logged = capsys.readouterr().out + capsys.readouterr().err
    assert logged.count("request.rejected") >= 6 and "transport=websocket" in logged


async def test_a_socket_frame_far_over_the_limit_closes_the_socket_with_1009() -> None:
    async with ScriptedUpstream() as upstream:
        async with running_gateway(upstream=upstream.url, max_body_bytes=64 * 1024) as (gw, _):
            url = gw.replace("http://", "ws://") + "/api/sessions/s1/chat/ws"
            async with connect(url, max_size=None) as ws:
                one = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]
                await ws.send(send_frame("huge", one, pad=2 * MIB))
                with pytest.raises(ConnectionClosed) as closed:
                    await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
