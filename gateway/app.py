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
import re
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any
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
from gateway.config import ConfigError, GatewayConfig
from gateway.connectors import Connector, connector_for
from gateway.dialects import UnknownDialect, get_dialect, registry
from gateway.driver import DriverSettings, TurnDriver
from gateway.errors import (
    BadRequest,
    GatewayError,
    NotFound,
    PayloadTooLarge,
    ServiceUnavailable,
    TurnInProgress,
    UnsupportedMediaType,
)
from gateway.logging import get_logger
from gateway.metrics import Metrics
from gateway.resume import MemoryResumeStore, ResumeResponse

if TYPE_CHECKING:
    from gateway.resume_redis import RedisResumeStore
from gateway.streaming import ChatStream
from protocol_specs.chat_request import ChatRequest
from translators.core.turn import Turn, TurnOptions
from translators.kit import (
    Dialect,
    RequestRejected,
    Translator,
    TranslatorOptions,
    TurnInput,
    UnknownEventPolicy,
)

__all__ = ["GatewayState", "create_app", "open_turn"]

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@~-]{0,127}")
_JSON_TYPES = ("application/json",)
#: ``Retry-After`` of the 503 a draining gateway answers, in seconds.
RETRY_AFTER_DRAINING = 5


class GatewayState:
    """Per-app state: config, dialect, connector, metrics, turn locks, open streams."""

    def __init__(self, config: GatewayConfig) -> None:
        self.metrics = Metrics()
        self.turns: Counter[str] = Counter()
        self.streams: set[ChatStream] = set()
        self.draining = False
        self.log = get_logger("chunkbridge.gateway")
        self._stream_closed = asyncio.Event()
        self.configure(config)

    def configure(self, config: GatewayConfig) -> None:
        """Use ``config`` for the next turns. Raises :class:`ConfigError` when the dialect is
        unknown, its settings are invalid, or it does not speak the upstream URL's transport."""
        if config.dialect is None:
            names = ", ".join(registry().dialects) or "none registered"
            raise ConfigError(f"no dialect: set one with --dialect NAME (available: {names})")
        try:
            dialect = get_dialect(config.dialect)
        except UnknownDialect as exc:
            raise ConfigError(str(exc)) from exc
        raw = config.dialect_settings.get(dialect.name, {})
        try:
            settings = dialect.settings.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"invalid settings for dialect {dialect.name}: {exc}") from exc
        self.config = config
        self.dialect: Dialect = dialect
        self.dialect_settings = settings
        self.connector: Connector = connector_for(dialect, config)
        if config.resume == "off":
            self.resume: MemoryResumeStore | RedisResumeStore | None = None
        elif getattr(self, "resume", None) is None:
            if config.resume == "redis":
                from gateway.resume_redis import RedisResumeStore

                self.resume = RedisResumeStore(
                    config.redis_url, config.resume_ttl, config.owner_lease, self.log
                )
            else:
                self.resume = MemoryResumeStore(config.resume_ttl)
        self.driver_settings = DriverSettings(
            first_event_timeout=config.first_event_timeout,
            idle_timeout=config.idle_timeout,
            total_timeout=config.total_timeout,
            keepalive_interval=config.keepalive_interval,
            flush_interval=config.flush_interval,
        )
        #: The same for every turn (one object, not one per turn).
        self.translator_options = TranslatorOptions(
            unknown_events=UnknownEventPolicy(config.unknown_events),
            dynamic_tools=config.dynamic_tools,
            settings=settings,
        )

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


async def open_turn(
    state: GatewayState,
    chat_request: ChatRequest,
    session_id: str,
    forward: dict[str, str],
    request_id: str,
    started: float,
    log: Any,
) -> ChatStream:
    """Start one turn upstream (the session's turn held, the upstream opened, the chunk log
    begun when resume is on) and the :class:`ChatStream` that delivers it, over HTTP or a
    WebSocket. Raises before anything is streamed: the caller answers the error."""
    config = state.config
    state.acquire_turn(session_id)
    resume = state.resume if chat_request.id else None  # no chat id: nothing to resume by
    member = ""
    try:
        if resume is not None:  # the rule across instances (redis); a no-op in one process
            member = await resume.acquire_turn(session_id, config.max_turns_per_session)
        run_id = uuid.uuid4().hex
        turn_input = TurnInput(
            chat_request, session_id, run_id, state.dialect_settings, config.history.value
        )
        try:
            upstream = await state.connector.open(turn_input, forward)
        except RequestRejected as exc:
            raise BadRequest(exc.client_message) from exc
    except BaseException:
        state.release_turn(session_id)
        if resume is not None:
            await resume.release_turn(session_id, member)
        raise

    message_id = chat_request.response_message_id() or f"msg_{run_id[:24]}"
    translator = state.dialect.translator(state.translator_options)
    turn = Turn(
        translator,
        TurnOptions(target=config.target, message_id=message_id, mask_errors=config.mask_errors),
    )
    driver = TurnDriver(
        upstream, turn, state.driver_settings, started=started, counters=state.metrics
    )
    state.metrics.requests.labels("200").inc()
    state.metrics.active_streams.inc()

    key = (session_id, chat_request.id)

    async def finished(stream: ChatStream) -> None:
        # Takes the stream as an argument: a closure over it would make stream and callback a
        # reference cycle, keeping every finished turn (upstream socket, translator, buffers)
        # alive until the cyclic garbage collector happens to run.
        if resume is not None and stream.log is not None:
            resume.finished(key, stream.log)  # type: ignore[arg-type]  # its own log kind
        state.forget_stream(stream)
        state.release_turn(session_id)
        if resume is not None:
            await resume.release_turn(session_id, member)
        _log_stream_end(state, log, stream, translator, started)

    stream = ChatStream(
        driver=driver,
        # with resume on, a client that goes away detaches: the turn runs on into its log
        on_disconnect="detach" if resume is not None else config.on_disconnect,
        request_id=request_id,
        on_done=finished,
    )
    if resume is not None:
        stream.log = resume.begin(key, stream)
    state.streams.add(stream)
    return stream


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


def _log_stream_end(
    state: GatewayState, log: Any, stream: ChatStream, translator: Translator, started: float
) -> None:
    driver = stream.driver
    turn = driver.turn
    duration = time.monotonic() - started
    metrics = state.metrics
    metrics.active_streams.dec()
    metrics.stream_duration.observe(duration)
    close_reason = turn.close_reason.value if turn.close_reason is not None else "unfinished"
    metrics.stream_outcomes.labels(close_reason).inc()
    if driver.upstream_error is not None:
        metrics.upstream_errors.labels(type(driver.upstream_error).__name__).inc()
    error = str(driver.upstream_error) if driver.upstream_error is not None else None
    if turn.internal_error is not None:
        metrics.internal_errors.inc()
        error = f"{type(turn.internal_error).__name__}: {turn.internal_error}"[:500]
        log.error("turn.internal_error", exc_info=turn.internal_error)
    unknown = sum(v for k, v in translator.stats.items() if k.startswith("unknown-event:"))
    metrics.unknown_events.inc(unknown)
    if driver.first_write_at is not None:
        metrics.time_to_first_chunk.observe(driver.first_write_at - started)
    log.info(
        "stream.end",
        status=200,
        close_reason=close_reason,
        finish_reason=turn.finish_reason,
        timeout=driver.timeout.value if driver.timeout is not None else None,
        duration_ms=round(duration * 1000, 1),
        upstream_events=turn.events,
        chunks=driver.events_out,
        bytes=driver.bytes_out,
        unknown_events=unknown,
        malformed_events=translator.stats.get("malformed-event", 0),
        guard_repairs=sum(turn.guard.repairs.values()),
        conversions=sum(turn.guard.gate.conversions.values()),
        client_disconnected=stream.client_disconnected,
        error=error,
    )


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
