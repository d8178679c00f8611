"""Kept-alive HTTP/1.1 connections per origin, and the one way a request is sent on them: for the
upstream turns (:mod:`~chunkbridge.gateway.transports.http_sse`) and the MCP servers
(:mod:`chunkbridge.gateway.tools.http_transport`) alike.

A TLS handshake per request would add a round trip or two to every answer's first token and to
every tool call. A connection goes back to the pool only when h11 says it can take another
request and its body was read to the end; at most :data:`MAX_IDLE_PER_ORIGIN` wait per origin,
each for :data:`IDLE_TIMEOUT` at most. A kept-alive connection the server closed before answering
(its own keep-alive timeout ran out as the request went) is replaced once, at once: nothing was
processed on it, so the request cannot have had an effect. Connections go through the proxy the
environment names (:mod:`~chunkbridge.gateway.transports.http_proxy`) and verify TLS by the one
policy (:mod:`~chunkbridge.gateway.transports.tls`).
"""

from __future__ import annotations

import asyncio
import ssl
import time
import weakref

import h11

from chunkbridge.gateway.errors import UpstreamClosed, UpstreamTimeout
from chunkbridge.gateway.transports.base import map_upstream_errors
from chunkbridge.gateway.transports.http_connection import (
    DEFAULT_MAX_EVENT_BYTES,
    ChooseDecoder,
    HttpConnection,
    Origin,
)
from chunkbridge.gateway.transports.http_proxy import Proxies, Proxy, open_tunnel
from chunkbridge.gateway.transports.tls import tls_context

__all__ = ["IDLE_TIMEOUT", "MAX_IDLE_PER_ORIGIN", "HttpConnectionPool"]

#: Idle connections kept per origin: enough for the turns (or tool calls) that end together.
MAX_IDLE_PER_ORIGIN = 64
#: Seconds an idle connection is kept.
IDLE_TIMEOUT = 30.0


class HttpConnectionPool:
    """Keep-alive connections per origin, for one user (the turns of a gateway, one MCP server).
    No limit on open connections: each exchange holds one for its whole body, and how many run
    at once is its user's to bound."""

    def __init__(
        self,
        tls: ssl.SSLContext | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        self.max_event_bytes = max_event_bytes
        self._idle: dict[Origin, list[HttpConnection]] = {}
        #: Connections handed out and not released yet: closed with the pool, so none outlives
        #: it when its user was torn down without closing every response (weak: a user may
        #: close one itself, which is then nobody's to keep).
        self._busy: weakref.WeakSet[HttpConnection] = weakref.WeakSet()
        #: For https origins; ``None``: the policy's default context, made when first needed.
        self._tls = tls
        self._proxies = Proxies()
        self._routes: dict[Origin, Proxy | None] = {}
        self._closed = False

    def _route(self, origin: Origin) -> Proxy | None:
        try:
            return self._routes[origin]
        except KeyError:
            proxy = self._routes[origin] = self._proxies.for_origin(origin)
            return proxy

    async def request(
        self,
        origin: Origin,
        head: h11.Request,
        body: bytes,
        choose_decoder: ChooseDecoder,
        *,
        connect_timeout: float | None,
        response_timeout: float | None,
    ) -> tuple[HttpConnection, h11.Response]:
        """Send ``head`` and ``body`` (its target in origin-form) on a kept-alive connection or
        a new one; the connection and the response head. Errors are ``UpstreamError``s, their
        ``detail`` starting with the phase (``connect:``, ``response:``); h11's refusal of the
        request is raised as it is."""
        proxy = self._route(origin)
        if proxy is not None and origin.scheme == "http":
            head = _absolute_form(head, origin, proxy)
        reused = self.take_idle(origin)
        for shell in (reused, None):
            if shell is None:
                with map_upstream_errors("connect"):
                    shell = await self.connect(origin, connect_timeout)
            try:
                shell.send(head, body, choose_decoder)
                async with asyncio.timeout(response_timeout):
                    response = await shell.response_ready
                self._busy.add(shell)
                return shell, response
            except TimeoutError:
                shell.close()
                raise UpstreamTimeout(detail="response: timed out") from None
            except UpstreamClosed:
                shell.close()
                if shell is reused and not shell.received_any:
                    continue  # closed by the server while idle: once more, on a new one
                raise
            except BaseException:
                shell.close()
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def connect(self, origin: Origin, connect_timeout: float | None) -> HttpConnection:
        """A new connection to ``origin`` (through its proxy, if any); raises ``TimeoutError``,
        ``OSError`` (TLS included) or an ``UpstreamError`` (a proxy's refusal)."""
        loop = asyncio.get_running_loop()
        secure = origin.scheme == "https"
        tls = self._tls_context() if secure else None
        proxy = self._route(origin)

        def shell() -> HttpConnection:
            return HttpConnection(origin, self.max_event_bytes)

        async with asyncio.timeout(connect_timeout):
            if proxy is not None and tls is not None:
                return await open_tunnel(proxy, origin, tls, shell)
            host, port = (origin.host, origin.port) if proxy is None else (proxy.host, proxy.port)
            _, connection = await loop.create_connection(
                shell, host, port, ssl=tls, server_hostname=origin.host if secure else None
            )
        return connection

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = tls_context()
        return self._tls

    def take_idle(self, origin: Origin) -> HttpConnection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            shell = idle.pop()
            if not shell.lost.done() and now - shell.idle_since < IDLE_TIMEOUT:
                return shell
            shell.close()
        return None

    def release(self, shell: HttpConnection) -> None:
        """Back to the pool when the exchange ended cleanly, else closed."""
        self._busy.discard(shell)
        if self._closed or not shell.reusable:
            shell.close()
            return
        idle = self._idle.setdefault(shell.origin, [])
        if len(idle) >= MAX_IDLE_PER_ORIGIN:
            shell.close()
            return
        shell.recycle()
        idle.append(shell)

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for shell in idle:
                shell.close()
        self._idle.clear()
        for shell in list(self._busy):
            shell.close()
        self._busy.clear()


def _absolute_form(head: h11.Request, origin: Origin, proxy: Proxy) -> h11.Request:
    """``head`` as a plain-HTTP proxy takes it: the whole URL as its target."""
    headers = list(head.headers)
    if proxy.authorization is not None:
        headers.append((b"proxy-authorization", proxy.authorization.encode()))
    target = f"http://{origin.host_header}".encode() + head.target
    return h11.Request(method=head.method, target=target, headers=headers)
