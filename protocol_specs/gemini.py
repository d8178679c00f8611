"""Gemini API streaming (dialect ``gemini``): the chunks and the request.

Source: Google's Gemini API reference, "Generating content" (``POST
/v1beta/models/{model}:streamGenerateContent?alt=sse`` with ``x-goog-api-key``). Each SSE
``data:`` is a whole ``GenerateContentResponse``: ``candidates[0].content.parts`` carry the new
pieces (``text``, ``text`` with ``thought: true``, ``functionCall``, ``executableCode``,
``codeExecutionResult``, ``inlineData``), ``thoughtSignature`` may sit on any part, the last chunk
carries ``finishReason`` and ``usageMetadata``, and the body simply ends (there is no terminal
event). Grounding (Google Search) arrives as ``groundingMetadata`` on the candidate. A refused
prompt has no candidates and a ``promptFeedback.blockReason``; an error mid-stream is a chunk
``{"error": {code, message, status}}``.

Mapping (translator: ``translators/dialects/gemini/``), decisions and reasons:

====================================  ============================================================
upstream                              UI chunks
====================================  ============================================================
first chunk                           ``start`` (``messageMetadata {model}`` from
                                      ``modelVersion``), ``start-step``
``text`` parts                        one text part until something else comes (thinking, a tool
                                      call), as the stream has no block boundaries
``text`` + ``thought: true``          a reasoning part, likewise
``thoughtSignature`` on a part        ``providerMetadata {google: {thoughtSignature}}`` on that
                                      part's delta (text, reasoning) or on the tool call: Gemini
                                      wants it back on the same part next turn, and the request
                                      builder sends it; an empty text part that only carries a
                                      signature becomes an empty part with it
``functionCall``                      ``tool-input-start`` / ``tool-input-delta`` (the JSON of
                                      ``args``) / ``tool-input-available``, id from ``id`` or
                                      generated. Streamed arguments (``partialArgs``, Gemini 3's
                                      ``streamFunctionCallArguments``): ``tool-input-start`` when
                                      the call is named, the values accumulated by JSON path, and
                                      ``tool-input-available`` when nothing more will come (no
                                      partial input on screen meanwhile)
``executableCode`` /                  a ``providerExecuted`` ``code_execution`` tool call (input
``codeExecutionResult``               ``{language, code}``) and its output ``{outcome, output}``
``inlineData``                        a ``file`` part (data URL)
``groundingMetadata.groundingChunks`` ``source-url`` per web (or image / http retrieved-context)
                                      source, once per URL; other retrieved documents →
                                      ``source-document``
``finishReason``                      :data:`FINISH_REASONS`; ``STOP`` after a function call is
                                      ``tool-calls``; ``MALFORMED_FUNCTION_CALL`` is ``error``
                                      (the model produced a call it could not encode: there is no
                                      answer); ``finish`` goes out when the body ends, or at once
                                      when usage came with the reason, with ``messageMetadata
                                      {model, usage, finishReason (raw), finishMessage?}``
``promptFeedback.blockReason``        ``finish`` with ``content-filter`` (the raw reason kept)
``{"error": …}``                      ``error`` with Google's message (status prefixed), the
                                      closing discipline
other part kinds, extra fields        the unknown-event policy as ``data-gemini-part``; extra
                                      fields are ignored
====================================  ============================================================

Requests (the dialect's ``request.py``): the ``UIMessage`` history becomes ``contents`` (roles
``user`` and ``model``); system messages join ``systemInstruction``. User text and files
(``inlineData`` from data URLs, ``fileData`` with the URL else); assistant text and reasoning
with their ``thoughtSignature``; the app's tool calls as ``functionCall`` parts (with their
signature) followed by a ``user`` turn of ``functionResponse`` parts (errors as
``{error: …}``). Provider-executed code execution is not sent back; calls without an answer
yet are left out.

The recordings in ``fixtures/gemini/`` were written from the event shapes of Google's API reference
and the AI SDK provider's own schemas (this project's CI has no provider key); the differential
test holds them to what the AI SDK's provider accepts.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AI_SDK_DIFFERENCES",
    "FINISH_REASONS",
    "USAGE_FIELDS",
    "stream_path",
]

#: Gemini ``finishReason`` → finishReason (the raw reason stays in ``finishReason`` metadata).
FINISH_REASONS: Final[dict[str, str]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content-filter",
    "RECITATION": "content-filter",
    "BLOCKLIST": "content-filter",
    "PROHIBITED_CONTENT": "content-filter",
    "SPII": "content-filter",
    "IMAGE_SAFETY": "content-filter",
    "MALFORMED_FUNCTION_CALL": "error",
}

#: Gemini ``usageMetadata`` → ``finish.messageMetadata.usage``.
USAGE_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "inputTokens": ("promptTokenCount",),
    "outputTokens": ("candidatesTokenCount",),
    "totalTokens": ("totalTokenCount",),
    "reasoningTokens": ("thoughtsTokenCount",),
    "cachedInputTokens": ("cachedContentTokenCount",),
}

#: Where chunkbridge and ``@ai-sdk/google`` + ``streamText`` + ``toUIMessageStream`` end with
#: different ``UIMessage``\\s for the same stream (tests/test_provider_differential.py).
AI_SDK_DIFFERENCES: Final[dict[str, str]] = {
    "error-closes-parts": "an error chunk mid-stream: the AI SDK leaves the open text part "
    "`streaming` forever; we end open parts before the `error` chunk (the closing discipline), "
    "and the error text keeps Google's status (`UNAVAILABLE: …`).",
    "truncation-is-an-error": "the body ends without a `finishReason`: the AI SDK finishes with "
    "`interrupted`, which the user cannot tell from a complete answer; we send an `error` chunk "
    "that says the answer was cut off.",
    "text-split-at-provider-tools": "text after a code execution: the AI SDK appends it to the "
    "text part from before the tool call (the user reads the result's explanation above the "
    "code); we end the text part at the tool call and start a new one after it, in stream order.",
}


def stream_path(model: str) -> str:
    """The streaming endpoint of ``model`` under the API's base URL."""
    name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
    return f"/v1beta/{name}:streamGenerateContent?alt=sse"
