"""Running the app under uvicorn, with a drain on SIGTERM/SIGINT.

uvicorn stops accepting connections on a signal and then waits for open responses; a chat stream
would only end when its upstream does. :class:`DrainingServer` first tells every open stream to
finish (each ends with a valid ``error`` + ``finish`` + ``[DONE]``) and gives them
``drain_timeout`` seconds, then uvicorn's own shutdown runs.
"""

from __future__ import annotations

import asyncio
import gc
import socket
from types import FrameType
from typing import Any

import uvicorn

from gateway.app import GatewayState

__all__ = ["DrainingServer", "run_app"]


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, state: GatewayState | None) -> None:
        super().__init__(config)
        self.state = state
        self._drain_task: asyncio.Task[None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # What exists now (modules, config, the app) lives as long as the process: move it out of
        # the cyclic collector's reach, so full collections under load scan only request objects.
        gc.freeze()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._drain_task is None and self.state is not None:
            loop = asyncio.get_event_loop()
            self._drain_task = loop.create_task(self.state.drain(self.state.config.drain_timeout))
        super().handle_exit(sig, frame)


def run_app(app: Any, host: str, port: int, log_level: str = "info") -> None:
    """Serve ``app`` until a signal; a gateway app (``app.state.gateway``) drains first."""
    state: GatewayState | None = getattr(app.state, "gateway", None)
    drain_timeout = state.config.drain_timeout if state is not None else 0
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning" if log_level == "info" else log_level,
        access_log=False,
        lifespan="on",
        ws="none",  # the gateway serves no WebSockets: do not load uvicorn's WS protocol
        timeout_graceful_shutdown=int(drain_timeout) + 2,
        server_header=False,
    )
    DrainingServer(config, state).run()
