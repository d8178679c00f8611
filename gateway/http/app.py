"""The Starlette app: ``POST {prefix}/sessions/{session_id}/chat`` (``/api`` by default), its
resume, stop and stored-chat routes, plus health, readiness and metrics.

Error policy (Starlette's ``response_started`` rule): everything that can fail before the first byte
— request shape, auth, the session's turn lock, connecting to the upstream and sending the prompt —
fails as a short plain-text HTTP error (the AI SDK shows the body to the user). Once streaming,
problems become an ``error`` chunk (see :mod:`chunkbridge.gateway.turn.driver`). Every request ends
with one structured log line (``request.rejected`` or ``stream.end``).

The app names no dialect: the configured one comes from the registry
(:mod:`chunkbridge.gateway.registry`), and its contract decides how a turn starts upstream
(:mod:`chunkbridge.gateway.transports.connectors`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Route, WebSocketRoute

from chunkbridge.gateway.config import ConfigError, GatewayConfig
from chunkbridge.gateway.errors import NotFound, UnsupportedMediaType
from chunkbridge.gateway.http.auth import authenticate
from chunkbridge.gateway.http.chat_socket import chat_socket
from chunkbridge.gateway.http.intake import (
    RETRY_AFTER_DRAINING,
    authorized_session,
    check_session,
    check_size,
    parse_chat_body,
    refusal,
    rejected,
)
from chunkbridge.gateway.http.sse import QueuedResponse, ResumeResponse, TurnResponse
from chunkbridge.gateway.http.started import RequireStarted
from chunkbridge.gateway.http.transcripts import chat_list, chat_messages, delete_chat
from chunkbridge.gateway.service import NO_UPSTREAM, Gateway, require_dialect
from chunkbridge.gateway.stores import ResumeStore
from chunkbridge.gateway.telemetry import TRACE_COMMENT, Telemetry
from chunkbridge.gateway.telemetry_sdk import server_middleware
from chunkbridge.gateway.turn.busy import Queued

__all__ = ["create_app"]

_JSON_TYPES = ("application/json",)


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, or :class:`PayloadTooLarge` as soon as it is known to be over ``limit`` (the
    rest is then read and dropped by the lingering refusal, :mod:`chunkbridge.gateway.http.intake`).
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit():
        check_size(int(declared), limit)
    body = bytearray()
    async for part in request.stream():
        body += part
        check_size(len(body), limit)
    return bytes(body)


async def chat(request: Request) -> Any:
    gateway: Gateway = request.app.state.gateway
    config = gateway.config
    started = time.monotonic()
    request_id = request.headers.get("x-request-id") or uuid.uuid4().hex[:16]
    session_id = request.path_params["session_id"]
    log = gateway.log.bind(
        request_id=request_id, session_id=session_id[:128], dialect=gateway.dialect.name
    )
    body_read = False
    try:
        check_session(gateway.draining, session_id)
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type not in _JSON_TYPES:
            raise UnsupportedMediaType(detail=content_type or "no content-type")
        body = await _read_body(request, config.max_body_bytes)
        body_read = True
        chat_request = parse_chat_body(body, config.max_messages)
        forward = authenticate(config, request.headers.get("authorization"), session_id)
        place = await gateway.line_up(chat_request, session_id, request_id=request_id)
        if isinstance(place, Queued):  # it waits for the session's turn (busy)
            log.info("busy.queued", position=place.position, kind=place.waiter.kind.value)
            opener = functools.partial(
                gateway.open_queued, place, chat_request=chat_request, forward=forward,
                request_id=request_id, started=started, log=log,
            )  # fmt: skip
            return QueuedResponse(place, opener, request_id, log)
        run = await gateway.open_turn(
            chat_request, session_id, forward, request_id, started, log, seat=place
        )
        return TurnResponse(run)
    except Exception as exc:
        lingering = None if body_read else (config.lingering_bytes, config.lingering_time)
        return refusal(rejected(gateway.metrics, log, exc, started), lingering)


def _rejected(gateway: Gateway, log: Any, exc: Exception, started: float) -> Response:
    """The HTTP error for a request that failed before streaming (it has no body to read)."""
    return refusal(rejected(gateway.metrics, log, exc, started))


def _resumable(request: Request) -> tuple[ResumeStore, tuple[str, str]]:
    """The resume store and its key for a resume or stop request, after the POST's own checks
    (session id, auth); the errors are GatewayErrors."""
    gateway: Gateway = request.app.state.gateway
    session_id = authorized_session(gateway.config, request)
    if gateway.stores.resume is None:
        raise NotFound("Resumable streams are off (resume = off).")
    return gateway.stores.resume, (session_id, request.path_params["chat_id"])


async def resume_stream(request: Request) -> Any:
    """``GET …/chat/{chat_id}/stream``: the running (or recently finished) response, replayed from
    its first chunk and followed live; 204 when there is none."""
    started = time.monotonic()
    request_id = request.headers.get("x-request-id") or uuid.uuid4().hex[:16]
    gateway: Gateway = request.app.state.gateway
    log = gateway.log.bind(
        request_id=request_id, session_id=request.path_params["session_id"][:128]
    )
    try:
        resume, key = _resumable(request)
        bodies = await resume.reader(key)
    except Exception as exc:
        return _rejected(gateway, log, exc, started)
    if bodies is None:
        log.info("resume.none", status=204)
        return Response(status_code=204)
    log.info("resume.start", status=200)
    if gateway.telemetry is not None:
        bodies = await _traced_read(gateway.telemetry, bodies, key)
    return ResumeResponse(bodies, request_id)


async def _traced_read(
    telemetry: Telemetry, bodies: AsyncIterator[bytes], key: tuple[str, str]
) -> AsyncIterator[bytes]:
    """``bodies`` in a ``chunkbridge.resume`` span linked to the turn they are the log of (the
    log opens with ``TRACE_COMMENT``, dropped here; a store may join it to the next bodies)."""
    first = await anext(bodies, None)
    traceparent = None
    if first is not None and first.startswith(TRACE_COMMENT):
        comment, _, first = first.partition(b"\n\n")
        traceparent = comment[len(TRACE_COMMENT) :].strip().decode("ascii", "replace")
    span = telemetry.resume_read(key[0], key[1], traceparent)

    async def read() -> AsyncIterator[bytes]:
        count = 0
        try:
            if first:
                count += 1
                yield first
            async for body in bodies:
                count += 1
                yield body
        finally:
            span.set_attribute("chunkbridge.bodies", count)
            span.end()

    return read()


async def stop_turn(request: Request) -> Response:
    """``POST …/chat/{chat_id}/stop``: end the running turn, on whichever instance runs it, as a
    client abort would (with resume on, the client's own Stop only disconnects); 204 when
    nothing runs."""
    started = time.monotonic()
    gateway: Gateway = request.app.state.gateway
    log = gateway.log.bind(session_id=request.path_params["session_id"][:128])
    try:
        resume, key = _resumable(request)
        stopped = await resume.stop(key)
    except Exception as exc:
        return _rejected(gateway, log, exc, started)
    if not stopped:
        return Response(status_code=204)
    log.info("turn.stopped", chat_id=key[1][:128])
    return PlainTextResponse("stopped", status_code=202)


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def readyz(request: Request) -> Response:
    """Ready when the upstream's host accepts TCP connections."""
    gateway: Gateway = request.app.state.gateway
    if gateway.draining:
        return PlainTextResponse(
            "draining", status_code=503, headers={"retry-after": str(RETRY_AFTER_DRAINING)}
        )
    if gateway.dialect is NO_UPSTREAM:  # it serves the app's own streams: nothing to reach
        return PlainTextResponse("ready")
    target = urlsplit(gateway.config.upstream.replace("{session_id}", "x"))
    port = target.port or (443 if target.scheme in ("wss", "https") else 80)
    try:
        async with asyncio.timeout(2):
            _, writer = await asyncio.open_connection(target.hostname, port)
        writer.close()
    except (OSError, TimeoutError):
        return PlainTextResponse("upstream unreachable", status_code=503)
    return PlainTextResponse("ready")


async def metrics_endpoint(request: Request) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST

    gateway: Gateway = request.app.state.gateway
    return Response(gateway.metrics.render(), media_type=CONTENT_TYPE_LATEST)


def _route_of(routes: list[BaseRoute]) -> Callable[[Any], tuple[str, dict[str, Any]]]:
    """The server span's name and ``http.route`` for a request: its route's template
    (``POST /api/sessions/{session_id}/chat``), never the path with its ids in it."""

    def details(scope: Any) -> tuple[str, dict[str, Any]]:
        method = scope.get("method") or "WS"
        for route in routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                template = getattr(route, "path_format", "")
                return f"{method} {template}", {"http.route": template}
        return method, {}

    return details


def _routes(prefix: str) -> list[BaseRoute]:
    """The gateway's routes: a session's under ``prefix`` (an app adds its ``extra_routes``
    after them), health, readiness and metrics at the app's root."""
    chat_path = prefix + "/sessions/{session_id:str}/chat"
    return [
        Route(chat_path, chat, methods=["POST"]),
        WebSocketRoute(chat_path + "/ws", chat_socket),
        Route(chat_path + "/{chat_id:path}/stream", resume_stream, methods=["GET"]),
        Route(chat_path + "/{chat_id:path}/stop", stop_turn, methods=["POST"]),
        Route(chat_path + "/{chat_id:path}/messages", chat_messages, methods=["GET"]),
        Route(prefix + "/sessions/{session_id:str}/chats", chat_list, methods=["GET"]),
        Route(chat_path + "/{chat_id:path}", delete_chat, methods=["DELETE"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
    ]


def _lifespan(
    gateway: Gateway,
    on_startup: Callable[[Gateway], Awaitable[None]] | None,
    on_shutdown: Callable[[], Awaitable[None]] | None,
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """The app's start-up and shut-down: the gateway's :meth:`~Gateway.lifespan`, when the app
    is served on its own (mounted in another app, that app's lifespan runs it)."""

    def lifespan(app: Starlette) -> contextlib.AbstractAsyncContextManager[None]:
        return gateway.lifespan(on_startup=on_startup, on_shutdown=on_shutdown)

    return lifespan


def create_app(
    config: GatewayConfig | Gateway,
    *,
    prefix: str = "/api",
    extra_routes: list[Route] | None = None,
    on_startup: Callable[[Gateway], Awaitable[None]] | None = None,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
) -> Starlette:
    """The gateway's Starlette app, for ``config`` (a new :class:`Gateway`) or ``gateway``.

    Its routes are ``{prefix}/sessions/{session_id}/chat`` and the rest of a session's,
    relative to wherever the app is mounted, plus ``/healthz``, ``/readyz`` and ``/metrics``;
    the gateway is ``app.state.gateway``. Served on its own (``uvicorn``), the app's lifespan
    runs the gateway's (:meth:`Gateway.lifespan`, with ``on_startup`` and ``on_shutdown``);
    mounted in another app, that app runs it, or every request is answered 503. Raises
    :class:`ConfigError` when the dialect cannot serve the configuration, or ``config`` has
    none (a :class:`Gateway` without one serves the app's own streams: their resume, stop
    and stored-chat routes)."""
    if prefix and (not prefix.startswith("/") or prefix.endswith("/")):
        raise ConfigError(f"prefix {prefix!r}: start it with '/' and end it without one")
    if not isinstance(config, Gateway):
        require_dialect(config)
    gateway = config if isinstance(config, Gateway) else Gateway(config)
    settings = gateway.config
    routes: list[BaseRoute] = [*_routes(prefix), *(extra_routes or [])]
    middleware = []
    if settings.telemetry != "off":  # outermost: the server span covers the whole request
        middleware.append(server_middleware(_route_of(routes)))
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=settings.cors_origins,
                allow_methods=["POST", "GET", "DELETE", "OPTIONS"],
                allow_headers=["authorization", "content-type", "x-request-id"],
                expose_headers=["x-request-id"],
            )
        )
    middleware.append(Middleware(RequireStarted, gateway=gateway))
    lifespan = _lifespan(gateway, on_startup, on_shutdown)
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.gateway = gateway
    return app
