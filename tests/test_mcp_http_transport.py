"""The HTTP/1.1 transport under the MCP client (:mod:`chunkbridge.gateway.tools.http_transport`),
through ``httpx2``'s client as the ``mcp`` SDK uses it, against servers on 127.0.0.1 written
here with asyncio's streams (each test says what its server does, byte for byte)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx2
import pytest
import trustme

from chunkbridge.gateway.tools.http_transport import mcp_http_client
from tests.test_http_client import clear_proxies, first_lines, http_proxy, origin
from tests.test_http_sse_transport import raw_server

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


@contextlib.asynccontextmanager
async def server(
    handler: Handler, tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[str, list[int]]]:
    """A server whose connections are handled by ``handler(reader, writer, n)`` (``n``: the
    connection's number); yields its base URL and the client ports it saw, in order."""
    ports: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ports.append(writer.get_extra_info("peername")[1])
        try:
            await handler(reader, writer, len(ports))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    listening = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield (f"https://localhost:{port}" if tls else f"http://127.0.0.1:{port}"), ports
    finally:
        listening.close()
        await asyncio.wait_for(listening.wait_closed(), 5)


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, dict[bytes, bytes], bytes]:
    """One request: its request line, headers (lower-case names) and body."""
    head = await reader.readuntil(b"\r\n\r\n")
    line, *lines = head[:-4].split(b"\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (x.split(b":", 1) for x in lines)}
    body = await reader.readexactly(int(headers.get(b"content-length", b"0")))
    return line, headers, body


def response(body: bytes, status: str = "200 OK", kind: bytes = b"application/json") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: ".encode()
        + kind
        + f"\r\ncontent-length: {len(body)}\r\n\r\n".encode()
        + body
    )


def answering(body: bytes) -> Handler:
    """A server that answers every request of a connection with ``body``."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            await read_request(reader)
            writer.write(response(body))

    return serve


async def test_requests_go_out_whole_and_a_connection_is_kept_for_the_next() -> None:
    seen: list[tuple[bytes, dict[bytes, bytes], bytes]] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            request = await read_request(reader)
            seen.append(request)
            status = "404 Not Found" if request[2] == b"missing" else "200 OK"
            writer.write(response(b'{"got":"' + request[2] + b'"}', status))

    async with (
        server(echo) as (base, ports),
        mcp_http_client({"x-api-key": "k1"}) as client,
    ):
        first = await client.post(f"{base}/mcp?x=1", content=b"one")
        second = await client.post(f"{base}/mcp", content=b"missing")
        third = await client.get(f"{base}/other")
    assert (first.status_code, first.json()) == (200, {"got": "one"})
    assert (second.status_code, second.json()) == (404, {"got": "missing"})  # its body, too
    assert third.status_code == 200 and third.http_version == "HTTP/1.1"
    assert [line for line, _, _ in seen] == [
        b"POST /mcp?x=1 HTTP/1.1",
        b"POST /mcp HTTP/1.1",
        b"GET /other HTTP/1.1",
    ]
    headers = seen[0][1]
    assert headers[b"host"] == base.removeprefix("http://").encode()
    assert headers[b"x-api-key"] == b"k1" and headers[b"content-length"] == b"3"
    assert len(ports) == 1  # one connection, kept alive for all three


async def test_a_body_arrives_as_it_is_sent() -> None:
    """A stream (an SSE response, the SDK's GET stream): each piece is handed over when it
    arrives, not when the response ends; a large body arrives whole."""
    go_on = asyncio.Event()
    big = bytes(range(256)) * 4096  # 1 MiB

    async def stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
        writer.write(b"transfer-encoding: chunked\r\n\r\n")
        writer.write(b"6\r\ndata: \r\n")
        await writer.drain()
        await go_on.wait()
        writer.write(b"%x\r\n" % len(big) + big + b"\r\n0\r\n\r\n")
        await writer.drain()

    async with server(stream) as (base, _), mcp_http_client() as client:
        async with client.stream("GET", f"{base}/mcp") as streamed:
            pieces = streamed.aiter_bytes()
            first = await asyncio.wait_for(anext(pieces), 5)  # before the rest is sent
            go_on.set()
            rest = b"".join([piece async for piece in pieces])
    assert first == b"data: " and rest == big


async def test_a_kept_connection_the_server_closed_is_replaced_once() -> None:
    """The server closes a kept-alive connection as the next request arrives (its keep-alive
    timeout): the request goes again on a new connection; nothing was processed on the old."""

    async def one_each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(response(b'{"n":%d}' % n))
        await writer.drain()
        await read_request(reader)  # the next request on this connection: closed, unanswered
        writer.transport.abort()

    async with server(one_each) as (base, ports), mcp_http_client() as client:
        first = await client.post(f"{base}/mcp", content=b"a")
        second = await client.post(f"{base}/mcp", content=b"b")
    assert (first.json(), second.json()) == ({"n": 1}, {"n": 2})
    assert len(ports) == 2


async def test_failures_are_httpx_errors() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        await reader.read()  # until the client gives up

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf")
        await writer.drain()
        writer.transport.abort()

    async with mcp_http_client() as client:
        with pytest.raises(httpx2.ConnectError):
            await client.get("http://127.0.0.1:1/mcp")
        async with server(silent) as (base, _):
            with pytest.raises(httpx2.ReadTimeout):
                await client.get(f"{base}/mcp", timeout=httpx2.Timeout(5.0, read=0.2))
        async with server(hang_up) as (base, _):  # as httpx's own transport says it
            with pytest.raises(httpx2.RemoteProtocolError, match="without sending complete"):
                await client.get(f"{base}/mcp")


async def test_a_response_left_unread_closes_its_connection() -> None:
    """A caller that stops reading (a cancelled call, an abandoned stream) gives back no
    half-read connection: the next request opens a new one, and the server sees the first go."""
    gone = asyncio.Event()

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        if n == 1:
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            try:
                while True:
                    writer.write(b"5\r\nhello\r\n")
                    await writer.drain()
                    await asyncio.sleep(0.01)
            except ConnectionError:
                gone.set()
                raise
        writer.write(response(b"{}"))
        await writer.drain()

    async with server(endless) as (base, ports), mcp_http_client() as client:

        async def read_forever() -> None:
            async with client.stream("GET", f"{base}/mcp") as streamed:
                async for _ in streamed.aiter_bytes():
                    pass

        reading = asyncio.create_task(read_forever())
        await asyncio.sleep(0.1)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        await asyncio.wait_for(gone.wait(), 5)
        after = await client.get(f"{base}/mcp")
    assert after.status_code == 200 and len(ports) == 2


async def test_https_is_verified_by_the_gateways_tls_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TLS with a test CA: trusted through ``SSL_CERT_FILE`` the request goes through, SNI and
    verification included; a server of a CA nobody trusts is refused (as httpx says it)."""
    ca, stranger = trustme.CA(), trustme.CA()
    trusted, untrusted = (ssl.create_default_context(ssl.Purpose.CLIENT_AUTH) for _ in "ab")
    ca.issue_cert("localhost").configure_cert(trusted)
    stranger.issue_cert("localhost").configure_cert(untrusted)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))

    secure = answering(b'{"secure":true}')
    async with mcp_http_client() as client:
        async with server(secure, trusted) as (base, ports):
            answers = [(await client.post(f"{base}/mcp", content=b"{}")).json() for _ in "ab"]
        async with server(secure, untrusted) as (base, _):
            with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.post(f"{base}/mcp", content=b"{}")
    assert answers == [{"secure": True}] * 2 and len(ports) == 1


async def test_the_environments_proxies_are_gone_through_as_for_upstreams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP client's connections are the upstreams' (``test_http_client``): ``HTTP_PROXY``
    gets absolute-form requests, ``HTTPS_PROXY`` a ``CONNECT`` tunnel with TLS to the server
    inside, and ``NO_PROXY`` sends a server's requests straight to it."""
    clear_proxies(monkeypatch)
    ca = trustme.CA()
    trusted = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("mcp.test").configure_cert(trusted)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))

    answer = answering(b'{"via":"server"}')
    async with (
        raw_server(http_proxy(response(b'{"via":"proxy"}'))) as (proxy, heard),
        server(answer) as (plain, _),
        server(answer, trusted) as (secure, _),
    ):
        monkeypatch.setenv("HTTP_PROXY", origin(proxy))
        monkeypatch.setenv("HTTPS_PROXY", origin(proxy))
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with mcp_http_client() as client:
            proxied = await client.post("http://mcp.test/mcp", content=b"{}")
            direct = await client.post(plain + "/mcp", content=b"{}")
            tunnelled = await client.post(secure.replace("localhost", "mcp.test") + "/mcp")
    assert proxied.json() == {"via": "proxy"}
    assert direct.json() == tunnelled.json() == {"via": "server"}
    port = secure.rsplit(":", 1)[1]
    assert first_lines(heard) == [
        b"POST http://mcp.test/mcp HTTP/1.1",
        f"CONNECT mcp.test:{port} HTTP/1.1".encode(),
    ]
