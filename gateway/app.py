"""The Starlette app: ``POST /api/sessions/{session_id}/chat`` plus health, readiness and metrics.

Error policy (Starlette's ``response_started`` rule): everything that can fail before the first
byte — request shape, auth, the session's turn lock, connecting to the upstream and sending the
prompt — fails as a short plain-text HTTP error (the AI SDK shows the body to the user). Once
streaming, problems become an ``error`` chunk (see :mod:`gateway.driver`). Every request ends
with one structured log line (``request.rejected`` or ``stream.end``).

The app names no dialect: the configured one comes from the registry (:mod:`gateway.dialects`),
and its contract decides how a turn starts upstream (:mod:`gateway.connectors`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import orjson
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute

from gateway.auth import authenticate
from gateway.chat_socket import chat_socket
from gateway.config import GatewayConfig
from gateway.errors import (
    BadRequest,
    GatewayError,
    NotFound,
    PayloadTooLarge,
    ServiceUnavailable,
    UnsupportedMediaType,
)
from gateway.resume import ResumeResponse
from gateway.state import RETRY_AFTER_DRAINING, SESSION_ID, GatewayState
from gateway.turns import open_turn
from protocol_specs.chat_request import ChatRequest

__all__ = ["GatewayState", "create_app", "open_turn"]  # state and opening re-exported

_JSON_TYPES = ("application/json",)


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, or :class:`PayloadTooLarge` as soon as it is known to be over ``limit``. The
    rest of an oversized body is read and dropped by uvicorn after the 413 has gone out (while
    the connection is kept alive), so a client that sends its whole body before reading its
    response, as ``fetch`` does, gets the 413 rather than a reset connection (tested with
    both of uvicorn's HTTP implementations)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(detail=f"content-length {declared}")
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > limit:
            raise PayloadTooLarge(detail=f"more than {limit} bytes")
    return bytes(body)


def _parse_chat_request(body: bytes, max_messages: int) -> ChatRequest:
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest("The request body is not valid JSON.", detail=exc.msg) from exc
    if not isinstance(raw, dict):
        raise BadRequest("The request body must be a JSON object.")
    messages = raw.get("messages")
    if isinstance(messages, list) and len(messages) > max_messages:
        # Checked before validating them: 100,000 messages take a second of CPU to validate,
        # during which no other stream of this process moves.
        raise BadRequest(
            "The conversation has too many messages for this gateway.",
            detail=f"{len(messages)} messages, max_messages {max_messages}",
        )
    try:
        return ChatRequest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadRequest(
            f"The request body is not a chat request ({where}: {first['msg']}).",
            detail=f"{exc.error_count()} validation errors",
        ) from exc


async def chat(request: Request) -> Any:
    state: GatewayState = request.app.state.gateway
    config = state.config
    started = time.monotonic()
    request_id = request.headers.get("x-request-id") or uuid.uuid4().hex[:16]
    session_id = request.path_params["session_id"]
    log = state.log.bind(
        request_id=request_id, session_id=session_id[:128], dialect=state.dialect.name
    )
    try:
        if state.draining:
            raise ServiceUnavailable(RETRY_AFTER_DRAINING, detail="draining")
        if not SESSION_ID.fullmatch(session_id):
            raise BadRequest("The session id is not valid.")
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type not in _JSON_TYPES:
            raise UnsupportedMediaType(detail=content_type or "no content-type")
        body = await _read_body(request, config.max_body_bytes)
        chat_request = _parse_chat_request(body, config.max_messages)
        forward = authenticate(config, request.headers.get("authorization"), session_id)
        return await open_turn(state, chat_request, session_id, forward, request_id, started, log)
    except Exception as exc:
        return _rejected(state, log, exc, started)


def _rejected(state: GatewayState, log: Any, exc: Exception, started: float) -> Response:
    """The HTTP error for a request that failed before streaming, and its log line."""
    duration_ms = round((time.monotonic() - started) * 1000, 1)
    if not isinstance(exc, GatewayError):  # a bug of ours: a generic answer, the detail logged
        state.metrics.internal_errors.inc()
        log.error("request.failed", status=500, duration_ms=duration_ms, exc_info=exc)
        exc = GatewayError(detail=f"{type(exc).__name__}: {exc}")
    status = exc.status_hint
    state.metrics.requests.labels(str(status)).inc()
    if status >= 502:
        state.metrics.upstream_errors.labels(type(exc).__name__).inc()
    log.info(
        "request.rejected",
        status=status,
        error=type(exc).__name__,
        detail=exc.detail,
        duration_ms=duration_ms,
    )
    return PlainTextResponse(exc.client_message, status_code=status, headers=exc.headers)


def _resumable(request: Request) -> tuple[GatewayState, tuple[str, str]]:
    """The resume store's key for a resume or stop request, after the POST's own checks (session
    id, auth); the errors are GatewayErrors."""
    state: GatewayState = request.app.state.gateway
    session_id = request.path_params["session_id"]
    if not SESSION_ID.fullmatch(session_id):
        raise BadRequest("The session id is not valid.")
    authenticate(state.config, request.headers.get("authorization"), session_id)
    if state.resume is None:
        raise NotFound("Resumable streams are off (resume = off).")
    return state, (session_id, request.path_params["chat_id"])


async def resume_stream(request: Request) -> Any:
    """``GET …/chat/{chat_id}/stream``: the running (or recently finished) response, replayed from
    its first chunk and followed live; 204 when there is none."""
    started = time.monotonic()
    request_id = request.headers.get("x-request-id") or uuid.uuid4().hex[:16]
    state: GatewayState = request.app.state.gateway
    log = state.log.bind(request_id=request_id, session_id=request.path_params["session_id"][:128])
    try:
        state, key = _resumable(request)
        assert state.resume is not None
        bodies = await state.resume.reader(key)
    except Exception as exc:
        return _rejected(state, log, exc, started)
    if bodies is None:
        log.info("resume.none", status=204)
        return Response(status_code=204)
    log.info("resume.start", status=200)
    return ResumeResponse(bodies, request_id)


async def stop_turn(request: Request) -> Response:
    """``POST …/chat/{chat_id}/stop``: end the running turn, on whichever instance runs it, as a
    client abort would (with resume on, the client's own Stop only disconnects); 204 when
    nothing runs."""
    started = time.monotonic()
    state: GatewayState = request.app.state.gateway
    log = state.log.bind(session_id=request.path_params["session_id"][:128])
    try:
        state, key = _resumable(request)
        assert state.resume is not None
        stopped = await state.resume.stop(key)
    except Exception as exc:
        return _rejected(state, log, exc, started)
    if not stopped:
        return Response(status_code=204)
    log.info("turn.stopped", chat_id=key[1][:128])
    return PlainTextResponse("stopped", status_code=202)


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def readyz(request: Request) -> Response:
    """Ready when the upstream's host accepts TCP connections."""
    state: GatewayState = request.app.state.gateway
    if state.draining:
        return PlainTextResponse(
            "draining", status_code=503, headers={"retry-after": str(RETRY_AFTER_DRAINING)}
        )
    target = urlsplit(state.config.upstream.replace("{session_id}", "x"))
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

    state: GatewayState = request.app.state.gateway
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)


def create_app(
    config: GatewayConfig,
    *,
    extra_routes: list[Route] | None = None,
    on_startup: Callable[[GatewayState], Awaitable[None]] | None = None,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
) -> Starlette:
    """The app for ``config``. Raises :class:`ConfigError` when the dialect cannot serve it."""
    state = GatewayState(config)
    middleware = []
    if config.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=config.cors_origins,
                allow_methods=["POST", "GET", "OPTIONS"],
                allow_headers=["authorization", "content-type", "x-request-id"],
                expose_headers=["x-request-id"],
            )
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if on_startup is not None:
            await on_startup(state)
        if state.resume is not None:
            await state.resume.start()  # redis: fails the start-up when Redis is not there
        yield
        await state.drain(state.config.drain_timeout)
        await state.connector.aclose()
        if state.resume is not None:
            await state.resume.aclose()
        if on_shutdown is not None:
            await on_shutdown()

    app = Starlette(
        routes=[
            Route("/api/sessions/{session_id:str}/chat", chat, methods=["POST"]),
            WebSocketRoute("/api/sessions/{session_id:str}/chat/ws", chat_socket),
            Route(
                "/api/sessions/{session_id:str}/chat/{chat_id:path}/stream",
                resume_stream,
                methods=["GET"],
            ),
            Route(
                "/api/sessions/{session_id:str}/chat/{chat_id:path}/stop",
                stop_turn,
                methods=["POST"],
            ),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics_endpoint, methods=["GET"]),
            *(extra_routes or []),
        ],
        middleware=middleware,
        lifespan=lifespan,
    )
    app.state.gateway = state
    return app
