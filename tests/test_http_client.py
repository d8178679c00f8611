"""The gateway's one HTTP/1.1 client (:mod:`chunkbridge.gateway.transports.http_pool` and its
connection, proxy and TLS modules), through the upstream side: the TLS policy (system CAs plus
``SSL_CERT_FILE``, a client certificate for mTLS), the environment's proxies (absolute-form for
http, ``CONNECT`` for https, ``NO_PROXY``) and the one retry of a kept-alive connection. Servers,
proxies and CAs are made here, on 127.0.0.1 (the MCP side: ``test_mcp_http_transport``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections.abc import Callable
from pathlib import Path

import pytest
import trustme

from chunkbridge.gateway.config import ConfigError, GatewayConfig
from chunkbridge.gateway.errors import UpstreamClosed, UpstreamUnavailable
from chunkbridge.gateway.transports.http_connection import Origin
from chunkbridge.gateway.transports.http_pool import HttpConnectionPool
from chunkbridge.gateway.transports.http_proxy import Proxies, Proxy
from chunkbridge.gateway.transports.tls import client_tls, tls_context
from tests import test_http_sse_transport as raw

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
#: ``Proxy-Authorization`` for ``user:p%40ss@`` in the proxy's URL (user:p@ss in base64).
AUTH = "Basic dXNlcjpwQHNz"


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test names its own proxies (none from the machine's environment)."""
    clear_proxies(monkeypatch)


def clear_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def sse_server(state: raw.RawServer) -> raw.Handler:
    """Answers every request on a connection with one event naming the connection's number."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = state.connections
        while True:
            await state.read_request(reader)
            writer.write(raw.SSE_HEAD + raw.chunked(b"data: connection %d\n\n" % number))
            await writer.drain()

    return serve


def server_context(ca: trustme.CA, host: str = "localhost") -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(host).configure_cert(context)
    return context


def system_ca_count() -> int:
    """How many CAs the system's own file holds (OpenSSL's built-in path, not the variables)."""
    system_file = ssl.get_default_verify_paths().openssl_cafile
    if not os.path.isfile(system_file):
        pytest.skip("no system CA file to compare with")
    system = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    system.load_verify_locations(system_file)
    return len(system.get_ca_certs())


def http_proxy(answer: bytes, refuse: bool = False) -> Callable[[raw.RawServer], raw.Handler]:
    """A proxy (for :func:`raw.raw_server`): ``CONNECT host:port`` tunnels to 127.0.0.1:port
    whatever the host (or is refused with 407); any other request is answered ``answer`` by the
    proxy itself. The requests it got are its server's ``requests``."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    def handler(state: raw.RawServer) -> raw.Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while not (request := await state.read_request(reader)).startswith(b"CONNECT "):
                writer.write(answer)
            if refuse:
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
                await writer.drain()
                return
            port = int(request.split(b" ")[1].rsplit(b":", 1)[1])
            tunnel_reader, tunnel_writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await asyncio.gather(pipe(reader, tunnel_writer), pipe(tunnel_reader, writer))
            finally:
                tunnel_writer.close()

        return serve

    return handler


def origin(url: str) -> str:
    return url.split("/v1/", 1)[0]


def first_lines(state: raw.RawServer) -> list[bytes]:
    return [request.split(b"\r\n")[0] for request in state.requests]


async def test_https_trusts_the_system_cas_and_those_ssl_cert_file_adds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CA added through ``SSL_CERT_FILE`` is trusted beside the system's (OpenSSL alone would
    trust it instead of them); a server of a CA nobody trusts is refused."""
    ca, stranger = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    assert len(tls_context().get_ca_certs()) == system_ca_count() + 1
    pool = HttpConnectionPool()
    async with raw.raw_server(sse_server, server_context(ca)) as (url, _):
        for _ in range(2):
            upstream = await raw.open_(pool, url)
            assert await raw.drain(upstream) == ["connection 1"]  # verified, and kept alive
            await upstream.aclose()
    async with raw.raw_server(sse_server, server_context(stranger)) as (url, _):
        with pytest.raises(UpstreamUnavailable, match="CERTIFICATE_VERIFY_FAILED"):
            await raw.open_(pool, url)
    await pool.aclose()


async def test_a_server_that_requires_a_client_certificate_gets_the_configured_one(
    tmp_path: Path,
) -> None:
    ca = trustme.CA()
    required = server_context(ca)
    required.verify_mode = ssl.CERT_REQUIRED
    ca.configure_trust(required)  # the clients' certificates are of the same CA here
    client = ca.issue_cert("gateway.client.test")
    client.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    client.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    config = GatewayConfig(
        tls_client_cert=tmp_path / "cert.pem", tls_client_key=tmp_path / "key.pem"
    )
    with_certificate = client_tls(config)
    assert with_certificate is not None
    without = tls_context()
    for context in (with_certificate, without):
        context.load_verify_locations(str(tmp_path / "ca.pem"))
    async with raw.raw_server(sse_server, required) as (url, state):
        pool = HttpConnectionPool(with_certificate)
        upstream = await raw.open_(pool, url)
        assert await raw.drain(upstream) == ["connection 1"]
        await pool.aclose()
        with pytest.raises((UpstreamClosed, UpstreamUnavailable)):  # refused in or after TLS
            await raw.open_(HttpConnectionPool(without), url)
    assert len(state.requests) == 1


def test_client_certificate_settings_that_cannot_be_used_are_configuration_errors(
    tmp_path: Path,
) -> None:
    (tmp_path / "junk.pem").write_text("not a certificate")
    assert client_tls(GatewayConfig()) is None
    with pytest.raises(ConfigError, match="tls_client_cert"):
        client_tls(GatewayConfig(tls_client_cert=tmp_path / "junk.pem"))
    with pytest.raises(ConfigError, match="tls_client_key needs tls_client_cert"):
        client_tls(GatewayConfig(tls_client_key=tmp_path / "junk.pem"))


async def test_http_goes_to_the_proxy_in_absolute_form_unless_no_proxy_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = raw.SSE_HEAD + raw.chunked(b"data: from the proxy\n\n")
    async with (
        raw.raw_server(http_proxy(answer)) as (proxy, heard),
        raw.raw_server(sse_server) as (direct, state),
    ):
        monkeypatch.setenv("HTTP_PROXY", origin(proxy).replace("http://", "http://user:p%40ss@"))
        monkeypatch.setenv("NO_PROXY", "127.0.0.1, .internal.test")
        pool = HttpConnectionPool()
        for _ in range(2):
            upstream = await raw.open_(pool, "http://provider.test:8080/v1/stream?x=1")
            assert await raw.drain(upstream) == ["from the proxy"]
            await upstream.aclose()
        upstream = await raw.open_(pool, direct)
        assert await raw.drain(upstream) == ["connection 1"]
        await pool.aclose()
        proxies = Proxies()  # the other forms NO_PROXY takes, without connecting
        routes = [
            proxies.for_origin(Origin("http", host, 80))
            for host in ("a.internal.test", "internal.test", "xinternal.test")
        ]
    assert first_lines(heard) == [b"POST http://provider.test:8080/v1/stream?x=1 HTTP/1.1"] * 2
    assert b"host: provider.test:8080" in heard.requests[0].lower()
    assert b"proxy-authorization: " + AUTH.encode() in heard.requests[0]
    assert state.connections == 1  # 127.0.0.1: straight there
    port = int(origin(proxy).rsplit(":", 1)[1])
    assert routes[:2] == [None, None] and routes[2] == Proxy("127.0.0.1", port, AUTH)


async def test_https_goes_through_a_connect_tunnel_and_is_verified_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    async with (
        raw.raw_server(sse_server, server_context(ca, "provider.test")) as (url, state),
        raw.raw_server(http_proxy(b"")) as (proxy, heard),
    ):
        monkeypatch.setenv("HTTPS_PROXY", origin(proxy))
        port = int(origin(url).rsplit(":", 1)[1])
        pool = HttpConnectionPool()
        for _ in range(2):
            upstream = await raw.open_(pool, f"https://provider.test:{port}/v1")
            assert await raw.drain(upstream) == ["connection 1"]  # one tunnel, kept alive
            await upstream.aclose()
        with pytest.raises(UpstreamUnavailable, match="CERTIFICATE_VERIFY_FAILED"):
            await raw.open_(pool, f"https://other.test:{port}/v1")  # not the certificate's name
        await pool.aclose()
    assert first_lines(heard) == [
        b"CONNECT provider.test:%d HTTP/1.1" % port,
        b"CONNECT other.test:%d HTTP/1.1" % port,
    ]
    assert b"host: provider.test:%d" % port in state.requests[0].lower()


async def test_a_proxy_that_refuses_the_tunnel_is_an_unavailable_upstream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with raw.raw_server(http_proxy(b"", refuse=True)) as (proxy, heard):
        monkeypatch.setenv("https_proxy", origin(proxy))
        with pytest.raises(UpstreamUnavailable, match="407"):
            await raw.open_(HttpConnectionPool(), "https://provider.test/v1")
    assert first_lines(heard) == [b"CONNECT provider.test:443 HTTP/1.1"]


async def test_a_kept_connection_closed_unanswered_is_replaced_once_not_twice() -> None:
    """The server answers the first request, then closes every connection a request comes on
    unanswered: the second request is tried on the kept connection and on one new one, then
    fails (a fresh connection closed unanswered is the server's answer, not a stale one)."""
    answered = b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\ndata: x\n\n"

    def handler(state: raw.RawServer) -> raw.Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await state.read_request(reader)
            if len(state.requests) == 1:
                writer.write(answered)
                await writer.drain()
                await state.read_request(reader)

        return serve

    pool = HttpConnectionPool()
    async with raw.raw_server(handler) as (url, state):
        upstream = await raw.open_(pool, url)
        assert await raw.drain(upstream) == ["x"]
        await upstream.aclose()
        with pytest.raises(UpstreamClosed):
            await raw.open_(pool, url)
        await pool.aclose()
    assert state.connections == 2 and len(state.requests) == 3
