"""Kept-alive HTTP connections, per origin: a TLS handshake per turn would add a round trip or
two to every answer's first token. A connection goes back to the pool only when h11 says it can
take another request and its body was read to the end; idle ones close after a while."""

from __future__ import annotations

import asyncio
import ssl
import time

from chunkbridge.gateway.transports.http_connection import (
    DEFAULT_MAX_EVENT_BYTES,
    HttpConnection,
    Origin,
)

__all__ = ["HttpConnectionPool"]


class HttpConnectionPool:
    """Keep-alive connections per origin, for the turns of one gateway."""

    def __init__(
        self,
        max_idle_per_origin: int = 64,
        idle_timeout: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        self.max_idle = max_idle_per_origin
        self.max_event_bytes = max_event_bytes
        self.idle_timeout = idle_timeout
        self._idle: dict[Origin, list[HttpConnection]] = {}
        #: For https origins; the default verifies with the system's CAs (``SSL_CERT_FILE`` /
        #: ``SSL_CERT_DIR`` point elsewhere, e.g. a company proxy's CA).
        self._ssl = ssl_context

    async def connect(self, origin: Origin, connect_timeout: float) -> HttpConnection:
        loop = asyncio.get_running_loop()
        secure = origin.scheme == "https"
        if secure and self._ssl is None:
            self._ssl = ssl.create_default_context()
        async with asyncio.timeout(connect_timeout):
            _, shell = await loop.create_connection(
                lambda: HttpConnection(origin, self.max_event_bytes),
                origin.host,
                origin.port,
                ssl=self._ssl if secure else None,
                server_hostname=origin.host if secure else None,
            )
        return shell

    def take_idle(self, origin: Origin) -> HttpConnection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            shell = idle.pop()
            if not shell.lost.done() and now - shell.idle_since < self.idle_timeout:
                return shell
            shell.close()
        return None

    def release(self, shell: HttpConnection) -> None:
        """Back to the pool when the exchange ended cleanly, else closed."""
        if not shell.reusable:
            shell.close()
            return
        idle = self._idle.setdefault(shell.origin, [])
        if len(idle) >= self.max_idle:
            shell.close()
            return
        shell.recycle()
        idle.append(shell)

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for shell in idle:
                shell.close()
        self._idle.clear()
