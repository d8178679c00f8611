"""The request side of an app's own stream: the client's chat request, and the conversation as
the app's SDK wants it.

:func:`parse_chat_request` is the gateway's intake (the same limits, the same 4xx texts);
:func:`request_body` is what the gateway itself would send upstream for that request with a
dialect — a model provider's request body built from the ``UIMessage`` history (``openai-chat``:
``messages``, tools, model; ``anthropic-messages``: ``system``, ``messages``…), an agent's
prompt frame — so an app hands its SDK the conversation as the gateway would:
``await client.chat.completions.create(**request_body(chat, dialect="openai-chat"))``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.errors import BadRequest
from chunkbridge.gateway.http import intake
from chunkbridge.gateway.registry import get_dialect
from chunkbridge.gateway.service import Gateway
from chunkbridge.kit import Dialect, RequestRejected, TurnInput
from chunkbridge.protocol_specs.chat_request import ChatRequest

__all__ = ["parse_chat_request", "request_body"]

_DEFAULTS = GatewayConfig()


def parse_chat_request(
    body: bytes | str | Mapping[str, Any],
    *,
    gateway: Gateway | None = None,
    max_messages: int | None = None,
    max_body_bytes: int | None = None,
) -> ChatRequest:
    """The validated chat request of a useChat POST body (the raw bytes or text, or the
    decoded JSON): ``id``, ``messages``, ``trigger``, ``messageId`` and the app's extra fields
    (``chat.extra_body``), the AI SDK's last-message-only body (``{id, message}``) included.

    The gateway's limits — ``gateway``'s, else the defaults (``max_messages`` 10,000,
    ``max_body_bytes`` 4 MiB), each overridable — and its refusals: raises
    :class:`~chunkbridge.gateway.errors.RequestError` (``BadRequest`` 400,
    ``PayloadTooLarge`` 413) whose ``client_message`` is the text the gateway answers and
    ``status_hint`` its status."""
    config = _DEFAULTS if gateway is None else gateway.config
    messages = config.max_messages if max_messages is None else max_messages
    if isinstance(body, bytes | bytearray | memoryview | str):
        limit = config.max_body_bytes if max_body_bytes is None else max_body_bytes
        size = len(body.encode() if isinstance(body, str) else body)
        intake.check_size(size, limit)
        return intake.parse_chat_body(bytes(body) if not isinstance(body, str) else body, messages)
    return intake.parse_chat_request(dict(body), messages)


def request_body(
    request: ChatRequest,
    *,
    dialect: str | Dialect,
    settings: BaseModel | Mapping[str, Any] | None = None,
    session_id: str = "default",
    history: Literal["latest", "full"] | None = None,
) -> dict[str, Any]:
    """What the gateway sends upstream for ``request`` with ``dialect`` and its ``settings``
    (model, system prompt, tools…; the dialect's defaults otherwise): a model provider's
    request body — ``stream: true`` included, so ``create(**body)`` streams — or an agent's
    prompt frame. ``history``: what an agent gets of the conversation (the dialect's default).
    Raises :class:`~chunkbridge.gateway.errors.BadRequest` where the gateway answers 400 (a
    file it cannot send, an answer to no question…), :class:`ValueError` for bad settings."""
    described = dialect if isinstance(dialect, Dialect) else get_dialect(dialect)
    if isinstance(settings, BaseModel):
        chosen: Any = settings
    else:
        try:
            chosen = described.settings.model_validate(dict(settings or {}))
        except ValidationError as exc:
            raise ValueError(f"invalid settings for dialect {described.name}: {exc}") from exc
    turn = TurnInput(request, session_id, uuid.uuid4().hex, chosen, history or described.history)
    if described.http is None and described.websocket is None:
        raise ValueError(
            f"dialect {described.name!r} runs in your app: the library's own history comes "
            "from its module (agent_input, graph_input…), not from request_body"
        )
    try:
        if described.http is not None:
            return described.http.request(turn).body
        assert described.websocket is not None
        return described.websocket.prompt_frame(turn)
    except RequestRejected as exc:
        raise BadRequest(exc.client_message) from exc
