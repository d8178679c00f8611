"""The ``gemini`` dialect: the Gemini API's ``streamGenerateContent``, streamed over HTTP SSE.

Chunks → UI chunks (mapping and reasons: ``protocol_specs/gemini.py``), and the request:
``POST {upstream}/v1beta/models/{model}:streamGenerateContent?alt=sse``, built from the
``UIMessage`` history, the deployment's model, system instruction, tools and options.
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, HttpSseContract
from chunkbridge.protocol_specs import gemini as spec
from chunkbridge.translators.dialects.gemini.demo import demo_script
from chunkbridge.translators.dialects.gemini.request import (
    GeminiSettings,
    error_frame,
    http_request,
)
from chunkbridge.translators.dialects.gemini.translator import GeminiTranslator

__all__ = [
    "DIALECT",
    "GeminiSettings",
    "GeminiTranslator",
    "demo_script",
    "error_frame",
    "http_request",
]

DIALECT = Dialect(
    name="gemini",
    summary="Gemini API streams (HTTP SSE: models/<model>:streamGenerateContent)",
    translator=GeminiTranslator,
    http=HttpSseContract(request=http_request, error_frame=error_frame),
    settings=GeminiSettings,
    spec=spec.__name__,
    demo=demo_script,
    genai_provider="gcp.gemini",
)
