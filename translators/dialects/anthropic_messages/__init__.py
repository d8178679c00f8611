"""The ``anthropic-messages`` dialect: Anthropic's Messages API, streamed over HTTP SSE.

Events → UI chunks (mapping and reasons: ``protocol_specs/anthropic_messages.py``), and the
request: ``POST {upstream}/v1/messages`` with ``stream: true``, built from the ``UIMessage``
history, the deployment's model, system prompt, tools and options.
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, HttpSseContract
from chunkbridge.protocol_specs import anthropic_messages as spec
from chunkbridge.translators.dialects.anthropic_messages.demo import demo_script
from chunkbridge.translators.dialects.anthropic_messages.request import (
    AnthropicSettings,
    error_frame,
    http_request,
)
from chunkbridge.translators.dialects.anthropic_messages.translator import (
    AnthropicMessagesTranslator,
)

__all__ = [
    "DIALECT",
    "AnthropicMessagesTranslator",
    "AnthropicSettings",
    "demo_script",
    "error_frame",
    "http_request",
]

DIALECT = Dialect(
    name="anthropic-messages",
    summary="Anthropic Messages API streams (HTTP SSE: POST /v1/messages)",
    translator=AnthropicMessagesTranslator,
    http=HttpSseContract(
        request=http_request, error_frame=error_frame, retry_statuses=spec.RETRY_STATUSES
    ),
    settings=AnthropicSettings,
    spec=spec.__name__,
    demo=demo_script,
    genai_provider="anthropic",
)
