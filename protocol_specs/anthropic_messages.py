"""Anthropic Messages streaming (dialect ``anthropic-messages``): the events and the request.

Source: Anthropic's API reference, "Streaming Messages" and "Messages" (``POST /v1/messages`` with
``"stream": true``, headers ``x-api-key`` and ``anthropic-version: 2023-06-01``). Over HTTP each
event is an SSE ``event: <type>`` / ``data: <json>`` pair; the ``data`` object repeats the type,
which is all the translator reads. One response is one message:

``message_start`` · (``content_block_start`` · ``content_block_delta``\\* ·
``content_block_stop``)\\* · ``message_delta`` · ``message_stop``, with ``ping`` anywhere and
``error`` (e.g. ``overloaded_error``) possibly mid-stream. Blocks are addressed by ``index`` and
their deltas may interleave.

Mapping (translator: ``translators/dialects/anthropic_messages/``), decisions and reasons:

==================================  ===============================================================
upstream                            UI chunks
==================================  ===============================================================
``message_start``                   ``start`` (``messageMetadata {model}``), ``start-step``
``text`` block                      a text part per block (``IndexedParts``: blocks interleave)
``citations_delta``                 kept for the block; ``web_search_result_location`` → nothing
                                    yet (the search results already gave ``source-url`` parts);
                                    ``char_location`` / ``page_location`` /
                                    ``content_block_location`` → ``source-document`` (title from
                                    the citation), ``search_result_location`` → ``source-url``.
                                    At the block's end: ``text-end`` with
                                    ``providerMetadata {anthropic: {citations}}`` (the raw list)
                                    and, for ai 7 targets, ``citations`` (gated away for 5 and 6)
``thinking`` block                  a reasoning part; ``signature_delta`` → ``providerMetadata
                                    {anthropic: {signature}}`` on ``reasoning-end`` (the AI SDK's
                                    key: ``convertToModelMessages`` sends it back)
``redacted_thinking`` block         a reasoning part with no text and ``providerMetadata
                                    {anthropic: {redactedData}}``
``tool_use`` block                  ``tool-input-start``; ``input_json_delta`` →
                                    ``tool-input-delta``; at ``content_block_stop``
                                    ``tool-input-available`` (``{}`` when empty) or
                                    ``tool-input-error`` with the raw text when not JSON. The
                                    gateway never runs the tool: the app does (or the next request
                                    carries its result)
``server_tool_use`` block           the same with ``providerExecuted: true`` (web search, web
                                    fetch, code execution… run by Anthropic)
``*_tool_result`` blocks            ``tool-output-available`` (``providerExecuted``) with the
                                    block's ``content``; a content whose ``type`` ends in
                                    ``_error`` → ``tool-output-error`` (its ``error_code``).
                                    ``web_search_tool_result``: the output is the result list in
                                    the AI SDK's shape (``url, title, pageAge, encryptedContent,
                                    type``) and each result is also a ``source-url``
``mcp_tool_use`` /                  a dynamic provider-executed tool call (input complete at
``mcp_tool_result``                 once) and its output
other block types                   the unknown-event policy, as ``data-<block type>``
``message_delta``                   ``stop_reason`` and ``usage`` kept for the end
``message_stop``                    open parts end, ``finish-step``, ``finish`` with the mapped
                                    reason (:data:`STOP_REASONS`) and ``messageMetadata {model,
                                    usage, stopReason, stopSequence?}``
``ping``                            nothing (counted)
``error``                           ``error`` with the provider's message (type prefixed), the
                                    closing discipline for open parts and calls
other event types                   the unknown-event policy (``data-<type>`` by default)
==================================  ===============================================================

Requests (the dialect's ``request.py``): the ``UIMessage`` history becomes ``messages``; system
messages join the configured system prompt. User text and files (images and PDFs as base64 from
data URLs or as ``url`` sources; ``text/plain`` as a text document). Assistant messages are cut at
``step-start``: each step's text (with its citations; a compaction summary as the ``compaction``
block it came from), thinking (only with its signature: Anthropic rejects unsigned thinking;
``redactedData`` → ``redacted_thinking``), a model fallback as its ``fallback`` block,
``tool_use`` blocks (input that was not JSON as ``{rawInvalidInput}``; after the step's other
blocks, as the API wants) with their ``caller``, and the tool results in a following user turn
(errors and denials with ``is_error``). Provider-executed calls go back as
``protocol_specs/anthropic_messages_tools.py`` says (``server_tool_use`` under the API's own
name + the tool's result block in the API's shape; MCP calls as ``mcp_tool_use`` +
``mcp_tool_result``). App calls without an answer yet are left out (the API rejects a
``tool_use`` without its ``tool_result``); a caller whose code execution call is no longer in
the history is dropped (the API rejects it). What differs from the AI SDK's requests:
:data:`AI_SDK_REQUEST_DIFFERENCES`.

The recordings in ``fixtures/anthropic-messages/`` were written from the event shapes of
Anthropic's API reference and the AI SDK provider's own schemas (this project's CI has no provider
key); the differential test holds them to what the AI SDK's provider accepts.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AI_SDK_DIFFERENCES",
    "AI_SDK_REQUEST_DIFFERENCES",
    "API_VERSION",
    "DEFAULT_PATH",
    "RETRY_STATUSES",
    "SDK_HELPER_EVENTS",
    "STOP_REASONS",
    "USAGE_FIELDS",
]

DEFAULT_PATH: Final = "/v1/messages"
API_VERSION: Final = "2023-06-01"
#: 529 is Anthropic's "overloaded"; retried like 429 and the usual 5xx before the first byte.
RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504, 529})
#: The events the ``anthropic`` SDK's ``messages.stream()`` helper yields besides the raw ones
#: (each repeats a raw event's delta with the text so far): skipped, the raw event says it.
SDK_HELPER_EVENTS: Final = frozenset({"text", "citation", "thinking", "signature", "input_json"})


#: Anthropic ``stop_reason`` → finishReason (the raw reason stays in ``stopReason``). The same
#: table as the AI SDK's provider: ``pause_turn`` (a long server-tool turn the app may resume by
#: sending the history back) ends the answer as ``stop``.
STOP_REASONS: Final[dict[str, str]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content-filter",
}

#: Anthropic ``usage`` → ``finish.messageMetadata.usage`` (our name → the path of its field).
#: ``input_tokens`` excludes the cached tokens, which are counted apart.
USAGE_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "inputTokens": ("input_tokens",),
    "outputTokens": ("output_tokens",),
    "cacheReadTokens": ("cache_read_input_tokens",),
    "cacheWriteTokens": ("cache_creation_input_tokens",),
}

#: Where chunkbridge and ``@ai-sdk/anthropic`` + ``streamText`` + ``toUIMessageStream`` end with
#: different ``UIMessage``\\s for the same stream (tests/test_provider_differential.py checks that
#: these are the only differences). difference → why ours is kept.
AI_SDK_DIFFERENCES: Final[dict[str, str]] = {
    "result-metadata-on-the-call": "the AI SDK repeats a call's metadata (the MCP server, the "
    "program that made the call) on its result as well; ours carries it on the call.",
    "spliced-message-start": "a second `message_start` in the middle of a tool call's input "
    "(the AI SDK's own test of a broken stream): the AI SDK ends with an error; chunkbridge "
    "ends the turn at the first message's end and reports the cut call's input as not JSON.",
    "message-start-custom-part": "ai 7's provider adds a `custom` part `anthropic.message_start` "
    "(message id, model, raw usage) to every message, which the app then stores and sends back "
    "in every later request. We put the model in `start.messageMetadata` and the usage in "
    "`finish.messageMetadata`, which ai 5, 6 and 7 all keep, and add no part.",
    "server-tool-error-text": "a server tool's error result: the AI SDK's `errorText` is its JSON "
    "(`{type, errorCode}`); ours is Anthropic's `error_code` itself (`url_not_accessible`), "
    "which is what a user can read.",
    "invalid-tool-input-text": "arguments that are not JSON: both end the call in `output-error` "
    "with the raw text as input; the wording of `errorText` differs.",
    "error-closes-parts": "an `error` event mid-stream: the AI SDK leaves the open text part "
    "`streaming` forever; we end open parts before the `error` chunk (the closing discipline), "
    "and the error text keeps Anthropic's error type (`overloaded_error: Overloaded`).",
    "truncation-is-an-error": "the body ends without `message_stop`: the AI SDK finishes with "
    "`interrupted` and leaves parts `streaming` / `input-streaming`, so the user sees a "
    "half answer as if it were complete; we end the parts, settle half-streamed calls as "
    "`output-error`, and send an `error` chunk that says the answer was cut off.",
    "unknown-events-forwarded": "an event type the AI SDK's schema does not know (Anthropic "
    "documents that new event types may be added) fails its whole stream with a validation "
    "error; we handle it with the unknown-event policy and carry on. The AI SDK is wrong here.",
    "document-citation-sources": "citations of documents (`char_location`, `page_location`): the "
    "AI SDK emits a `source-document` part only for documents in its own prompt; a gateway sees "
    "the citation alone and emits one from it (title from `document_title`). Both carry the "
    "citation in `text-end` for ai 7.",
}


#: Where the request chunkbridge builds from a ``UIMessage`` history differs from the one the AI
#: SDK builds (``convertToModelMessages`` + ``@ai-sdk/anthropic``) for the same history
#: (tests/test_provider_round_trip.py).
AI_SDK_REQUEST_DIFFERENCES: Final[dict[str, str]] = {
    "server-tool-error-code-kept": "a server tool that failed goes back with the `error_code` "
    "Anthropic gave it (`url_not_accessible`…); the AI SDK's own stream keeps the code in a "
    "JSON `errorText` it does not read back, and sends `unavailable`.",
}


# -- requests ------------------------------------------------------------------------------------
