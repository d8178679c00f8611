"""OpenAI chat-completion stream chunks (dialect ``openai-chat``), as real providers send them.

Source: ``shared/specs/seed-protocols.md`` §3 and the OpenAI ``chat.completion.chunk`` format as
served by OpenAI, Azure, DeepSeek, vLLM, OpenRouter and other compatible servers. Over HTTP the
payloads arrive as SSE ``data:`` lines ending with ``data: [DONE]``; over a WebSocket, one chunk per
text frame. The gateway never runs the tool calls: they end at ``tool-input-available`` for the
client (or the upstream) to run.

Mapping (translator: ``translators/dialects/openai_chat/``), decisions and reasons:

===================================  ==============================================================
upstream                             UI chunks
===================================  ==============================================================
first chunk                          ``start`` with ``messageMetadata {model}``, ``start-step``
``delta.content``                    text part (an open reasoning part ends first); ``""`` is
                                     ignored
``delta.reasoning_content`` /        reasoning part (DeepSeek, vLLM / OpenRouter styles), ended
``delta.reasoning``                  before text or tools start
``delta.refusal``                    a text part with ``providerMetadata {openai: {refusal:
                                     true}}``
``delta.tool_calls[]``               per ``index``: ``tool-input-start`` once the name is known (it
                                     may come late: arguments are buffered until then), then
                                     ``tool-input-delta``; parallel calls interleave by index. When
                                     the choice finishes, the arguments are parsed:
                                     ``tool-input-available`` (``{}`` for empty arguments), or
                                     ``tool-input-error`` with the raw text when they are not JSON.
                                     Missing ids are generated
``finish_reason``                    ``stop``→stop, ``length``→length,
                                     ``tool_calls``/``function_call`` →tool-calls,
                                     ``content_filter``→content-filter, anything else→other;
                                     ``finish`` is sent at ``[DONE]``, at the usage chunk, or when
                                     the stream ends, so the usage can ride along
``usage`` (the ``choices: []`` chun  ``finish.messageMetadata.usage`` ``{promptTokens,
requested with include_usage)        completionTokens, totalTokens, reasoningTokens?,
                                     cachedTokens?}``
``citations`` (Perplexity: the URLs  a ``source-url`` part per URL, the first time it is listed
``[1]``… refer to, on every chunk)   (the list repeats on every chunk)
a chunk after a finished choice      a new step (multi-step agent hubs chain completions)
``{"error": {...}}`` mid-stream      ``error`` (the provider's message), ``finish`` (error)
Azure ``prompt_filter_results``     provider noise: ignored (counted), never an error nor a data
(``"object": ""``, no choices),      part, and it does not start the message
empty deltas, extra fields
choices with ``index`` > 0           not rendered (one message per response; counted)
===================================  ==============================================================
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AI_SDK_DIFFERENCES",
    "FINISH_REASONS",
    "SDK_CHUNK_EVENT",
    "SDK_HELPER_EVENTS",
    "TERMINAL_FRAME",
    "USAGE_FIELDS",
]

#: The ``openai`` SDK's ``chat.completions.stream()`` helper: its ``chunk`` event carries each
#: raw chunk (``.chunk``); the others repeat what a chunk said, with the text so far (skipped).
SDK_CHUNK_EVENT: Final = "chunk"
SDK_HELPER_EVENTS: Final = frozenset(
    {
        "content.delta",
        "content.done",
        "refusal.delta",
        "refusal.done",
        "tool_calls.function.arguments.delta",
        "tool_calls.function.arguments.done",
        "logprobs.content.delta",
        "logprobs.content.done",
        "logprobs.refusal.delta",
        "logprobs.refusal.done",
    }
)


#: Where chunkbridge and ``@ai-sdk/openai-compatible`` (or ``@ai-sdk/openai``'s chat model for
#: OpenAI and Azure) + ``streamText`` + ``toUIMessageStream`` end with different ``UIMessage``\\s
#: for the same recorded stream (tests/test_provider_differential.py).
AI_SDK_DIFFERENCES: Final[dict[str, str]] = {
    "citations-as-sources": "Perplexity's `citations` (the URLs its `[1]`, `[2]`… refer to): "
    "the AI SDK's `openai-compatible` provider drops them (only `@ai-sdk/perplexity` reads "
    "them); ours are `source-url` parts, so a `useChat` app shows where the answer comes from.",
}

FINISH_REASONS: Final[dict[str, str]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
}

TERMINAL_FRAME: Final = "[DONE]"


#: OpenAI ``usage`` → the usage object the hub's clients expect in ``finish.messageMetadata``:
#: our name → the path of OpenAI's field (in this order).
USAGE_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "promptTokens": ("prompt_tokens",),
    "completionTokens": ("completion_tokens",),
    "totalTokens": ("total_tokens",),
    "reasoningTokens": ("completion_tokens_details", "reasoning_tokens"),
    "cachedTokens": ("prompt_tokens_details", "cached_tokens"),
}
