"""OpenAI chat-completion stream chunks (dialect ``openai-chat``), as real providers send them.

Source: ``shared/specs/seed-protocols.md`` §3 and the OpenAI ``chat.completion.chunk`` format as
served by OpenAI, Azure, DeepSeek, vLLM, OpenRouter and other compatible servers. Over HTTP the
payloads arrive as SSE ``data:`` lines ending with ``data: [DONE]``; over a WebSocket, one chunk per
text frame. The gateway never runs the tool calls: they end at ``tool-input-available`` for the
client (or the upstream) to run.

Mapping (translator: ``translators/dialects/openai_chat.py``), decisions and reasons:

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

from typing import Any, Final, Literal, NotRequired, TypedDict

import orjson

__all__ = [
    "AI_SDK_DIFFERENCES",
    "FINISH_REASONS",
    "TERMINAL_FRAME",
    "USAGE_FIELDS",
    "messages_from_ui",
]


class FunctionDelta(TypedDict, total=False):
    name: str
    arguments: str


class ToolCallDelta(TypedDict):
    index: int
    id: NotRequired[str]
    type: NotRequired[Literal["function"]]
    function: NotRequired[FunctionDelta]


class Delta(TypedDict, total=False):
    role: str
    content: str | None
    reasoning_content: str | None
    reasoning: str | None
    refusal: str | None
    tool_calls: list[ToolCallDelta]


class Choice(TypedDict):
    index: int
    delta: Delta
    finish_reason: NotRequired[str | None]


class ChatCompletionChunk(TypedDict):
    id: str
    object: Literal["chat.completion.chunk"]
    model: NotRequired[str]
    choices: list[Choice]
    usage: NotRequired[dict[str, Any] | None]


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


def _content(parts: list[Any]) -> str | list[dict[str, Any]]:
    """A user message's text and files as OpenAI content (a string when it is only text)."""
    items: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        if kind == "text":
            items.append({"type": "text", "text": part.text})
        elif kind == "file" and part.mediaType.startswith("image/"):
            items.append({"type": "image_url", "image_url": {"url": part.url}})
        elif kind == "file":
            items.append(
                {
                    "type": "file",
                    "file": {"file_data": part.url, "filename": part.filename or "file"},
                }
            )
    if all(item["type"] == "text" for item in items):
        return "\n\n".join(item["text"] for item in items)
    return items


def messages_from_ui(messages: list[Any]) -> list[dict[str, Any]]:
    """UIMessage history (``chunkbridge.protocol_specs.chat_request.UIMessage``) → chat-completions
    messages.

    Text and files of user and system messages; an assistant message becomes its text plus one
    ``tool_calls`` entry per tool part with input, followed by ``tool`` messages for the parts
    that have an output (or an error). Reasoning, sources and data parts are not sent back.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role != "assistant":
            out.append({"role": message.role, "content": _content(message.parts)})
            continue
        text = "".join(p.text for p in message.parts if getattr(p, "type", None) == "text")
        calls, results = [], []
        for part in message.parts:
            if not hasattr(part, "toolCallId") or part.state == "input-streaming":
                continue
            calls.append(
                {
                    "id": part.toolCallId,
                    "type": "function",
                    "function": {
                        "name": part.tool_name,
                        "arguments": orjson.dumps(part.input or {}).decode(),
                    },
                }
            )
            if part.state == "output-available":
                results.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.toolCallId,
                        "content": orjson.dumps(part.output).decode(),
                    }
                )
            elif part.state in ("output-error", "output-denied"):
                results.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.toolCallId,
                        "content": part.errorText or "The tool call was not run.",
                    }
                )
        entry: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            entry["tool_calls"] = calls
        out.append(entry)
        out.extend(results)
    return out
