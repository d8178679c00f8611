"""HTTP proxies for the gateway's HTTP client, as the environment names them: ``HTTP_PROXY``,
``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY`` (either case; read as :mod:`urllib.request` reads
them), for networks whose only way out is a proxy.

An ``http://`` origin is reached by sending the proxy absolute-form requests
(``POST http://host/path``); an ``https://`` one through a ``CONNECT host:port`` tunnel, in which
TLS to the origin is then started (verified as a direct connection is, end to end: the proxy sees
only ciphertext). Credentials in the proxy's URL are sent as ``Proxy-Authorization: Basic``.
Only ``http://`` proxies are supported (not TLS to the proxy itself, not SOCKS).
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit
from urllib.request import getproxies_environment

import h11

from chunkbridge.gateway.errors import UpstreamUnavailable
from chunkbridge.gateway.transports.http_connection import HttpConnection, Origin

__all__ = ["Proxies", "Proxy", "open_tunnel"]


@dataclass(frozen=True, slots=True)
class Proxy:
    host: str
    port: int
    #: The ``Proxy-Authorization`` value for credentials in the proxy's URL.
    authorization: str | None = None

    @classmethod
    def parse(cls, url: str) -> Proxy:
        """The proxy ``url`` names (``host:port`` alone means ``http://host:port``). Raises
        :class:`UpstreamUnavailable` for a kind of proxy this client does not speak."""
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme != "http" or not parts.hostname:
            raise UpstreamUnavailable(detail=f"connect: unsupported proxy {parts.scheme}://")
        authorization = None
        if parts.username is not None:
            user_pass = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(user_pass.encode()).decode()
        return cls(parts.hostname, parts.port or 80, authorization)


class Proxies:
    """The environment's proxies, read when a pool is made (a pool keeps its routes).

    ``NO_PROXY`` is a comma-separated list: ``*`` (no proxy at all), host names (``example.com``
    also covers its subdomains; a leading dot is the same), IP addresses, each optionally with
    ``:port`` to exempt only that port."""

    def __init__(self) -> None:
        named = getproxies_environment()
        self._named = named
        self._exempt = [e.strip().lstrip(".").lower() for e in named.get("no", "").split(",")]

    def for_origin(self, origin: Origin) -> Proxy | None:
        """The proxy to reach ``origin`` through, or ``None`` (none named, or ``NO_PROXY``)."""
        url = self._named.get(origin.scheme) or self._named.get("all")
        if not url or self._exempted(origin):
            return None
        return Proxy.parse(url)

    def _exempted(self, origin: Origin) -> bool:
        host = origin.host.lower()
        with_port = _authority(origin).lower()
        for entry in self._exempt:
            if entry == "*":
                return True
            if entry and (host == entry or host.endswith("." + entry) or with_port == entry):
                return True
        return False


class _Tunnel(asyncio.Protocol):
    """The ``CONNECT`` exchange with the proxy, before the connection becomes the tunnel."""

    def __init__(self, request: h11.Request) -> None:
        self.conn = h11.Connection(h11.CLIENT)
        self.request = request
        self.answered: asyncio.Future[h11.Response] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        conn = self.conn
        head = (conn.send(self.request) or b"") + (conn.send(h11.EndOfMessage()) or b"")
        transport.write(head)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        self.conn.receive_data(data)
        try:
            event = self.conn.next_event()
        except h11.RemoteProtocolError as exc:
            self._fail(f"the proxy's answer: {exc}")
            return
        if isinstance(event, h11.Response) and not self.answered.done():
            self.answered.set_result(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(f"the proxy closed the connection: {exc}" if exc else "the proxy closed it")

    def _fail(self, detail: str) -> None:
        if not self.answered.done():
            self.answered.set_exception(UpstreamUnavailable(detail=f"connect: {detail}"))
            self.answered.exception()  # retrieved: the opener may be gone


async def open_tunnel(
    proxy: Proxy, origin: Origin, tls: ssl.SSLContext, connection: Callable[[], HttpConnection]
) -> HttpConnection:
    """A connection to the ``https`` ``origin`` through ``proxy``'s ``CONNECT`` tunnel, TLS
    started inside it. The caller bounds the time; raises :class:`UpstreamUnavailable` when the
    proxy refuses, ``OSError`` (TLS included) as a direct connection does."""
    loop = asyncio.get_running_loop()
    authority = (
        f"[{origin.host}]:{origin.port}" if ":" in origin.host else (f"{origin.host}:{origin.port}")
    )
    headers = [("host", authority)]
    if proxy.authorization is not None:
        headers.append(("proxy-authorization", proxy.authorization))
    request = h11.Request(method="CONNECT", target=authority, headers=headers)
    transport, tunnel = await loop.create_connection(
        lambda: _Tunnel(request), proxy.host, proxy.port
    )
    try:
        answer = await tunnel.answered
        if not 200 <= answer.status_code < 300:
            raise UpstreamUnavailable(
                detail=f"connect: the proxy answered CONNECT with {answer.status_code}"
            )
        shell = connection()
        secured = await loop.start_tls(transport, shell, tls, server_hostname=origin.host)
    except BaseException:
        transport.abort()
        raise
    if secured is None:  # pragma: no cover - only a transport that cannot do TLS says so
        raise UpstreamUnavailable(detail="connect: TLS could not be started in the tunnel")
    shell.connection_made(secured)
    return shell


def _authority(origin: Origin) -> str:
    """``host:port``, as ``CONNECT`` names its target and ``NO_PROXY`` may name an origin."""
    host = f"[{origin.host}]" if ":" in origin.host else origin.host
    return f"{host}:{origin.port}"
