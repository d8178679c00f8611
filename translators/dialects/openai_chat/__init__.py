"""The ``openai-chat`` dialect: OpenAI-compatible ``chat.completion.chunk`` streams.

Chunks → UI chunks (mapping and reasons: ``protocol_specs/openai_chat.py``), and the request:
``POST {upstream}/v1/chat/completions`` with ``stream: true`` over HTTP, or the same body as the
first frame over a WebSocket.
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, HttpSseContract, WebSocketContract
from chunkbridge.protocol_specs import openai_chat as spec
from chunkbridge.translators.dialects.openai_chat.request import (
    OpenAIChatSettings,
    error_frame,
    http_request,
    request_body,
)
from chunkbridge.translators.dialects.openai_chat.translator import OpenAIChatTranslator

__all__ = [
    "DIALECT",
    "OpenAIChatSettings",
    "OpenAIChatTranslator",
    "error_frame",
    "http_request",
    "request_body",
]

DIALECT = Dialect(
    name="openai-chat",
    summary="OpenAI-compatible chat.completion.chunk streams (HTTP SSE or WebSocket)",
    translator=OpenAIChatTranslator,
    websocket=WebSocketContract(
        prompt_frame=request_body, abort_frame=lambda turn: {"type": "abort"}
    ),
    http=HttpSseContract(request=http_request, error_frame=error_frame),
    settings=OpenAIChatSettings,
    spec=spec.__name__,
    genai_provider="openai",
)
