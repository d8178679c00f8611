"""WebSocket upstreams (agent-ops-v2, open-harness, openai-chat over WebSocket)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedError, ConnectionClosedOK
from websockets.frames import Frame

from gateway.errors import UpstreamClosed
from gateway.transports.base import UpstreamEnded, map_upstream_errors

__all__ = ["WebSocketUpstream", "open_websocket"]

#: How long closing may take after the client left (the issue's "within 1 s").
CLOSE_TIMEOUT = 1.0


class WebSocketUpstream:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        # websockets' Assembler keeps received frames in ``recv_messages.frames.queue`` (a deque
        # it never replaces); a complete (FIN) first frame means recv() returns without waiting.
        # Without that attribute (another websockets version) :meth:`buffered` answers False and
        # the gateway simply does not coalesce.
        frames = getattr(getattr(ws, "recv_messages", None), "frames", None)
        self._received: deque[Frame] | None = getattr(frames, "queue", None)

    async def send(self, frame: dict[str, Any]) -> None:
        with map_upstream_errors("send"):
            await self.ws.send(orjson.dumps(frame).decode())

    async def recv(self) -> str | bytes:
        """The next message as bytes (no UTF-8 decoding: orjson parses bytes directly)."""
        try:
            return await self.ws.recv(decode=False)
        except ConnectionClosedOK as exc:
            raise UpstreamEnded from exc
        except ConnectionClosedError as exc:
            raise UpstreamClosed(detail=f"receive: {exc}") from exc

    def buffered(self) -> bool:
        queue = self._received
        return bool(queue) and queue[0].fin

    async def aclose(self, *, abort_frame: dict[str, Any] | None = None) -> None:
        """Close (sending ``abort_frame`` first, if given) within :data:`CLOSE_TIMEOUT`."""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(CLOSE_TIMEOUT):
                if abort_frame is not None:
                    await self.ws.send(orjson.dumps(abort_frame).decode())
                await self.ws.close()
        if self.ws.state.name != "CLOSED":
            self.ws.transport.abort()


async def open_websocket(
    url: str, *, headers: dict[str, str], connect_timeout: float, max_queue: int = 16
) -> WebSocketUpstream:
    """Connect and finish the handshake within ``connect_timeout``, or raise an UpstreamError."""
    with map_upstream_errors("connect"):
        async with asyncio.timeout(connect_timeout):
            ws = await connect(
                url,
                additional_headers=headers,
                open_timeout=None,
                close_timeout=CLOSE_TIMEOUT,
                compression=None,
                max_size=16 * 1024 * 1024,
                max_queue=max_queue,
                proxy=None,
                user_agent_header="chunkbridge",
            )
    return WebSocketUpstream(ws)
