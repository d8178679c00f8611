"""One request intake for both entrances: the HTTP POST and the WebSocket transport's ``send``.

The same checks in the same order, with the same messages, metrics and log lines: draining
(503), the session id (400), the body's size (``max_body_bytes``: 413), JSON, a chat request,
``max_messages`` (400, counted before the messages are validated: 100,000 messages take a second
of CPU), and a refusal's log line (``request.rejected``; ``request.failed`` with the traceback
and the internal-error metric for a bug of ours).

A refusal sent before the request body was read answers at once and then reads and drops the
rest of the body — up to ``lingering_bytes`` or ``lingering_time`` — before the response is
complete and the connection closes (:class:`LingeringRefusal`): a client that writes its whole
body before reading, as a browser uploading an attachment does, would otherwise meet a reset
connection instead of the 413 (closing a socket with unread data resets it).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.errors import BadRequest, GatewayError, PayloadTooLarge, ServiceUnavailable
from chunkbridge.gateway.http.auth import authenticate
from chunkbridge.gateway.metrics import Metrics
from chunkbridge.protocol_specs.chat_request import ChatRequest

__all__ = [
    "RETRY_AFTER_DRAINING",
    "SESSION_ID",
    "LingeringRefusal",
    "authorized_session",
    "check_session",
    "check_size",
    "parse_chat_body",
    "parse_chat_request",
    "refusal",
    "rejected",
]


#: What a session id may be (it goes into upstream URLs and store keys).
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@~-]{0,127}")
#: ``Retry-After`` of the 503 a draining gateway answers, in seconds.
RETRY_AFTER_DRAINING = 5


def check_session(draining: bool, session_id: str) -> None:
    """What is refused before anything else: a draining gateway, a bad session id."""
    if draining:
        raise ServiceUnavailable(RETRY_AFTER_DRAINING, detail="draining")
    if not SESSION_ID.fullmatch(session_id):
        raise BadRequest("The session id is not valid.")


def authorized_session(config: GatewayConfig, request: Request) -> str:
    """The session id of a request to one of a session's other routes (resume, stop, stored
    chats), checked as the chat POST checks it: its form (400), then the caller's right to it
    (401, 403)."""
    session_id: str = request.path_params["session_id"]
    if not SESSION_ID.fullmatch(session_id):
        raise BadRequest("The session id is not valid.")
    authenticate(config, request.headers.get("authorization"), session_id)
    return session_id


def check_size(size: int, limit: int) -> None:
    if size > limit:
        raise PayloadTooLarge(detail=f"{size} bytes, max_body_bytes {limit}")


def parse_chat_body(body: bytes | str, max_messages: int) -> ChatRequest:
    """A request body (JSON) as a chat request."""
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest("The request body is not valid JSON.", detail=exc.msg) from exc
    return parse_chat_request(raw, max_messages)


def parse_chat_request(raw: Any, max_messages: int) -> ChatRequest:
    """A decoded request body as a chat request."""
    if not isinstance(raw, dict):
        raise BadRequest("The request body must be a JSON object.")
    if "messages" not in raw and isinstance(raw.get("message"), dict):
        # the AI SDK's "send only the last message" body ({id, message}): history = stored
        raw = {k: v for k, v in raw.items() if k != "message"} | {"messages": [raw["message"]]}
    messages = raw.get("messages")
    if isinstance(messages, list) and len(messages) > max_messages:
        # Before validating them: validation would cost a second of CPU for 100,000, during
        # which no other stream of this process moves.
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


def rejected(
    metrics: Metrics, log: Any, exc: Exception, started: float, transport: str = "http"
) -> GatewayError:
    """Count and log a refused request; the :class:`GatewayError` to answer with (a bug of
    ours becomes a generic 500, its detail logged with the traceback)."""
    duration_ms = round((time.monotonic() - started) * 1000, 1)
    if not isinstance(exc, GatewayError):
        metrics.internal_errors.inc()
        log.error(
            "request.failed", status=500, transport=transport, duration_ms=duration_ms, exc_info=exc
        )
        exc = GatewayError(detail=f"{type(exc).__name__}: {exc}")
    status = exc.status_hint
    metrics.requests.labels(str(status)).inc()
    if status >= 502:
        metrics.upstream_errors.labels(type(exc).__name__).inc()
    log.info(
        "request.rejected",
        status=status,
        transport=transport,
        error=type(exc).__name__,
        detail=exc.detail,
        duration_ms=duration_ms,
    )
    return exc


def refusal(error: GatewayError, lingering: tuple[int, float] | None = None) -> Response:
    """The HTTP answer to a refused request: plain text; ``lingering`` (bytes, seconds) when
    the request's body is still unread (:class:`LingeringRefusal`)."""
    if lingering is None:
        return PlainTextResponse(error.client_message, error.status_hint, headers=error.headers)
    return LingeringRefusal(error, *lingering)


class LingeringRefusal(PlainTextResponse):
    """A refusal sent before the request body was read: the whole answer at once (with
    ``Content-Length``, so the client has all of it), then the rest of the body read and
    dropped, up to ``limit`` bytes or ``seconds``, and only then the response's end, after which
    the connection closes (``connection: close``: what is left unread is not ours to parse)."""

    def __init__(self, error: GatewayError, limit: int, seconds: float) -> None:
        headers = {**(error.headers or {}), "connection": "close"}
        super().__init__(error.client_message, error.status_hint, headers=headers)
        self.limit = limit
        self.seconds = seconds
        #: Bytes read and dropped (for tests and logs).
        self.discarded = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        await send({"type": "http.response.body", "body": self.body, "more_body": True})
        try:
            async with asyncio.timeout(self.seconds):
                while self.discarded <= self.limit:
                    message = await receive()
                    if message["type"] != "http.request":
                        break  # the client went away
                    self.discarded += len(message.get("body", b""))
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            pass
        await send({"type": "http.response.body", "body": b"", "more_body": False})
