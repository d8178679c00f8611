"""Running the app under uvicorn, with a drain on SIGTERM/SIGINT.

uvicorn stops accepting connections on a signal and then waits for open responses; a chat stream
would only end when its upstream does. :class:`DrainingServer` first tells every open stream to
finish (each ends with a valid ``error`` + ``finish`` + ``[DONE]``) and gives them
``drain_timeout`` seconds, then uvicorn's own shutdown runs.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import os
import pickle
import signal
import socket
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.service import Gateway

__all__ = ["DrainingServer", "drain_on_signals", "run_app", "run_workers", "worker_config"]

#: The environment variable that hands the parent's configuration to ``--workers`` processes.
WORKER_CONFIG = "CHUNKBRIDGE_WORKER_CONFIG"


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, gateway: Gateway | None) -> None:
        super().__init__(config)
        self.gateway = gateway
        self._drain_task: asyncio.Task[None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # What exists now (modules, config, the app) lives as long as the process: move it out of
        # the cyclic collector's reach, so full collections under load scan only request objects.
        gc.freeze()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._drain_task is None and self.gateway is not None:
            loop = asyncio.get_event_loop()
            self._drain_task = loop.create_task(
                self.gateway.drain(self.gateway.config.drain_timeout)
            )
        super().handle_exit(sig, frame)


#: What a WebSocket ``send`` frame may hold beyond the request body it carries (its envelope):
#: a frame over ``max_body_bytes`` by less is answered with the 413's message; a larger one
#: closes the socket (1009), as the protocol must bound what it buffers.
WS_FRAME_SLACK = 1024 * 1024


def server_limits(config: GatewayConfig) -> dict[str, Any]:
    """uvicorn settings that follow the gateway's own limits."""
    return {"ws_max_size": config.max_body_bytes + WS_FRAME_SLACK}


def _uvicorn_config(
    app: Any, host: str, port: int, log_level: str, drain_timeout: float, **extra: Any
) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning" if log_level == "info" else log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(drain_timeout) + 2,
        server_header=False,
        **extra,
    )


def run_app(app: Any, host: str, port: int, log_level: str = "info") -> None:
    """Serve ``app`` until a signal; a gateway app (``app.state.gateway``) drains first."""
    gateway: Gateway | None = getattr(app.state, "gateway", None)
    drain_timeout = gateway.config.drain_timeout if gateway is not None else 0
    limits = server_limits(gateway.config) if gateway is not None else {}
    uv = _uvicorn_config(app, host, port, log_level, drain_timeout, **limits)
    DrainingServer(uv, gateway).run()


def run_workers(config: GatewayConfig, workers: int, factory: str) -> None:
    """``serve --workers N``: N processes on one listening socket (uvicorn's supervisor), each
    building the app with ``factory`` (``module:function``, which reads :func:`worker_config`)
    and draining on SIGTERM as one process does (:func:`drain_on_signals`). Turns and their
    per-session rule are per process unless ``resume = redis``."""
    os.environ[WORKER_CONFIG] = base64.b64encode(pickle.dumps(config)).decode()
    uv = _uvicorn_config(
        factory,
        config.host,
        config.port,
        config.log_level,
        config.drain_timeout,
        factory=True,
        workers=workers,
        **server_limits(config),
    )
    sock = uv.bind_socket()
    Multiprocess(uv, sockets=[sock]).run()


def worker_config() -> GatewayConfig:
    """In a ``--workers`` process: the configuration the parent passed on."""
    config: GatewayConfig = pickle.loads(base64.b64decode(os.environ[WORKER_CONFIG]))
    return config


async def drain_on_signals(gateway: Gateway) -> None:
    """In a worker, uvicorn's own server handles the signals: put the drain in front of its
    handlers (installed before the app starts), as :class:`DrainingServer` does in one process."""
    loop = asyncio.get_running_loop()
    drained: list[asyncio.Task[None]] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
            if not drained:
                drained.append(loop.create_task(gateway.drain(gateway.config.drain_timeout)))
            if callable(previous):
                previous(signum, frame)

        signal.signal(sig, handler)
