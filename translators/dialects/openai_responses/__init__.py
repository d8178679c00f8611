"""The ``openai-responses`` dialect: OpenAI's Responses API, streamed over HTTP SSE.

Events → UI chunks (mapping and reasons: ``protocol_specs/openai_responses.py``), and the
request: ``POST {upstream}/v1/responses`` with ``stream: true``, built from the ``UIMessage``
history, the deployment's model, instructions, tools and options.
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, HttpSseContract
from chunkbridge.protocol_specs import openai_responses as spec
from chunkbridge.translators.dialects.openai_responses.demo import demo_script
from chunkbridge.translators.dialects.openai_responses.request import (
    OpenAIResponsesSettings,
    error_frame,
    http_request,
)
from chunkbridge.translators.dialects.openai_responses.translator import OpenAIResponsesTranslator

__all__ = [
    "DIALECT",
    "OpenAIResponsesSettings",
    "OpenAIResponsesTranslator",
    "demo_script",
    "error_frame",
    "http_request",
]

DIALECT = Dialect(
    name="openai-responses",
    summary="OpenAI Responses API streams (HTTP SSE: POST /v1/responses)",
    translator=OpenAIResponsesTranslator,
    http=HttpSseContract(request=http_request, error_frame=error_frame),
    settings=OpenAIResponsesSettings,
    spec=spec.__name__,
    demo=demo_script,
    genai_provider="openai",
)
