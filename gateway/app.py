"""The Starlette app: ``POST /api/sessions/{session_id}/chat`` plus health, readiness and metrics.

Error policy (Starlette's ``response_started`` rule): everything that can fail before the first
byte — request shape, auth, the session's turn lock, connecting to the upstream and sending the
prompt — fails as a short plain-text HTTP error (the AI SDK shows the body to the user). Once
streaming, problems become an ``error`` chunk (see :mod:`gateway.streaming`). Every request ends
with one structured log line (``request.rejected`` or ``stream.end``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import quote, urlsplit

import orjson
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from gateway.auth import authenticate
from gateway.config import GatewayConfig
from gateway.dialects import create_translator
from gateway.errors import (
    BadRequest,
    GatewayError,
    PayloadTooLarge,
    TurnInProgress,
    UnsupportedMediaType,
)
from gateway.frames import build_frames
from gateway.logging import get_logger
from gateway.metrics import Metrics
from gateway.streaming import ChatStream, StreamSettings
from gateway.transports import open_websocket
from gateway.transports.base import Upstream
from protocol_specs.chat_request import ChatRequest
from translators.base import TranslatorOptions, UnknownEventPolicy

__all__ = ["create_app", "GatewayState"]

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@~-]{0,127}")
_JSON_TYPES = ("application/json",)


class GatewayState:
    """Per-app state: config, metrics, turn locks, open streams (for the SIGTERM drain)."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        #: The same for every turn (the config does not change while the app runs).
        self.stream_settings = StreamSettings(
            first_event_timeout=config.first_event_timeout,
            idle_timeout=config.idle_timeout,
            total_timeout=config.total_timeout,
            keepalive_interval=config.keepalive_interval,
            flush_interval=config.flush_interval,
            on_disconnect=config.on_disconnect,
        )
        self.metrics = Metrics()
        self.turns: Counter[str] = Counter()
        self.streams: set[ChatStream] = set()
        self.http: Any = None  # an httpx.AsyncClient once an HTTP upstream is used
        self.draining = False
        self.log = get_logger("chunkbridge.gateway")
        self._stream_closed = asyncio.Event()

    def acquire_turn(self, session_id: str) -> None:
        if self.turns[session_id] >= self.config.max_turns_per_session:
            raise TurnInProgress(detail=f"{self.turns[session_id]} active")
        self.turns[session_id] += 1

    def release_turn(self, session_id: str) -> None:
        self.turns[session_id] -= 1
        if self.turns[session_id] <= 0:
            del self.turns[session_id]

    def forget_stream(self, stream: ChatStream) -> None:
        self.streams.discard(stream)
        self._stream_closed.set()

    async def drain(self, grace: float) -> None:
        """End every open stream with a valid ending; wait up to ``grace`` seconds for them."""
        self.draining = True
        for stream in list(self.streams):
            stream.shutdown()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                while self.streams:
                    self._stream_closed.clear()
                    await self._stream_closed.wait()


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(detail=f"content-length {declared}")
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > limit:
            raise PayloadTooLarge(detail=f"more than {limit} bytes")
    return bytes(body)


def _parse_chat_request(body: bytes) -> ChatRequest:
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest("The request body is not valid JSON.", detail=exc.msg) from exc
    if not isinstance(raw, dict):
        raise BadRequest("The request body must be a JSON object.")
    try:
        return ChatRequest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadRequest(
            f"The request body is not a chat request ({where}: {first['msg']}).",
            detail=f"{exc.error_count()} validation errors",
        ) from exc


async def _open_upstream(
    state: GatewayState, session_id: str, headers: dict[str, str], prompt: dict[str, Any]
) -> Upstream:
    config = state.config
    if config.upstream_kind == "openai":
        import httpx

        from gateway.transports.openai_http import open_openai_http

        if state.http is None:
            state.http = httpx.AsyncClient(trust_env=False)
        return await open_openai_http(
            state.http,
            config.upstream,
            prompt,
            api_key=config.openai_api_key,
            max_retries=config.openai_max_retries,
            connect_timeout=config.connect_timeout,
        )
    url = config.upstream.replace("{session_id}", quote(session_id, safe=""))
    upstream = await open_websocket(url, headers=headers, connect_timeout=config.connect_timeout)
    try:
        await upstream.send(prompt)
    except BaseException:
        await upstream.aclose()
        raise
    return upstream


async def chat(request: Request) -> Any:
    state: GatewayState = request.app.state.gateway
    config = state.config
    started = time.monotonic()
    request_id = request.headers.get("x-request-id") or uuid.uuid4().hex[:16]
    session_id = request.path_params["session_id"]
    log = state.log.bind(request_id=request_id, session_id=session_id[:128], dialect=config.dialect)
    turn_held = False
    try:
        if state.draining:
            raise GatewayError("The server is restarting; please try again.")
        if not SESSION_ID.fullmatch(session_id):
            raise BadRequest("The session id is not valid.")
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type not in _JSON_TYPES:
            raise UnsupportedMediaType(detail=content_type or "no content-type")
        chat_request = _parse_chat_request(await _read_body(request, config.max_body_bytes))
        forward = authenticate(config, request.headers.get("authorization"), session_id)
        state.acquire_turn(session_id)
        turn_held = True
        run_id = uuid.uuid4().hex
        frames = build_frames(config, chat_request, session_id, run_id)
        upstream = await _open_upstream(state, session_id, forward, frames.prompt)
    except GatewayError as exc:
        if turn_held:
            state.release_turn(session_id)
        status = getattr(exc, "status_hint", 500)
        state.metrics.requests.labels(str(status)).inc()
        if status >= 502:
            state.metrics.upstream_errors.labels(type(exc).__name__).inc()
        log.info(
            "request.rejected",
            status=status,
            error=type(exc).__name__,
            detail=exc.detail,
            duration_ms=round((time.monotonic() - started) * 1000, 1),
        )
        return PlainTextResponse(exc.client_message, status_code=status)

    message_id = chat_request.response_message_id() or f"msg_{run_id[:24]}"
    translator = create_translator(
        config.dialect,
        TranslatorOptions(
            target=config.target,
            unknown_events=UnknownEventPolicy(config.unknown_events),
            message_id=message_id,
            dynamic_tools=config.dynamic_tools,
            mask_errors=config.mask_errors,
        ),
    )
    state.metrics.requests.labels("200").inc()
    state.metrics.active_streams.inc()

    async def finished(stream: ChatStream) -> None:
        # Takes the stream as an argument: a closure over it would make stream and callback a
        # reference cycle, keeping every finished turn (upstream socket, translator, buffers)
        # alive until the cyclic garbage collector happens to run.
        outcome = stream.outcome
        state.forget_stream(stream)
        state.release_turn(session_id)
        duration = time.monotonic() - started
        metrics = state.metrics
        metrics.active_streams.dec()
        metrics.stream_duration.observe(duration)
        reason = outcome.reason or translator.guard.finish_reason or "completed"
        reason_name = reason.value if hasattr(reason, "value") else str(reason)
        metrics.stream_outcomes.labels(reason_name).inc()
        unknown = sum(v for k, v in translator.stats.items() if k.startswith("unknown-event:"))
        metrics.unknown_events.inc(unknown)
        if outcome.first_chunk_at is not None:
            metrics.time_to_first_chunk.observe(outcome.first_chunk_at - started)
        log.info(
            "stream.end",
            status=200,
            outcome=reason_name,
            finish_reason=translator.guard.finish_reason,
            duration_ms=round(duration * 1000, 1),
            upstream_events=translator.events,
            chunks=outcome.events_out,
            bytes=outcome.bytes_out,
            unknown_events=unknown,
            malformed_events=translator.stats.get("malformed-event", 0),
            guard_repairs=sum(translator.guard.repairs.values()),
            conversions=sum(translator.guard.gate.conversions.values()),
            client_disconnected=outcome.client_disconnected,
            error=outcome.error_detail,
        )

    stream = ChatStream(
        upstream=upstream,
        translator=translator,
        abort_frame=frames.abort,
        settings=state.stream_settings,
        metrics=state.metrics,
        request_id=request_id,
        started=started,
        on_done=finished,
    )
    state.streams.add(stream)
    return stream


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def readyz(request: Request) -> Response:
    """Ready when the upstream's host accepts TCP connections."""
    state: GatewayState = request.app.state.gateway
    if state.draining:
        return PlainTextResponse("draining", status_code=503)
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
        yield
        await state.drain(state.config.drain_timeout)
        if state.http is not None:
            await state.http.aclose()
        if on_shutdown is not None:
            await on_shutdown()

    app = Starlette(
        routes=[
            Route("/api/sessions/{session_id:str}/chat", chat, methods=["POST"]),
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
