"""A gateway app answers only while its gateway runs: never silently half-on.

Starlette runs the lifespan of the app it serves, not of the apps mounted in it: a gateway app
mounted in a host app (``Mount("/chat", create_app(gateway))``) whose gateway's
:meth:`~chunkbridge.gateway.service.Gateway.lifespan` nobody runs would serve turns without
its stores, its tool servers or its telemetry. :class:`RequireStarted` answers every request
of such an app with a 503 that says what to do (a WebSocket is closed with the same reason).
"""

from __future__ import annotations

import weakref
from typing import Any

from starlette.responses import PlainTextResponse

from chunkbridge.gateway.service import NOT_STARTED, Gateway

__all__ = ["RequireStarted", "not_started"]

#: The gateways whose 503 was logged (once each).
_TOLD: weakref.WeakSet[Gateway] = weakref.WeakSet()
#: WebSocket close code: try again later (the 503 of the socket).
_TRY_AGAIN_LATER = 1013


def not_started(gateway: Gateway) -> PlainTextResponse:
    """The 503 a request gets while ``gateway`` is not started (logged once per gateway)."""
    if gateway not in _TOLD:
        _TOLD.add(gateway)
        gateway.log.error("gateway.not_started", hint=NOT_STARTED)
    return PlainTextResponse(NOT_STARTED, status_code=503)


class RequireStarted:
    """ASGI middleware: requests pass while the gateway is started, else a 503."""

    def __init__(self, app: Any, gateway: Gateway) -> None:
        self.app = app
        self.gateway = gateway

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.gateway.started or scope["type"] == "lifespan":
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            not_started(self.gateway)
            reason = NOT_STARTED[:120]  # a close frame's reason is at most 123 bytes
            await send({"type": "websocket.close", "code": _TRY_AGAIN_LATER, "reason": reason})
        else:
            await not_started(self.gateway)(scope, receive, send)
