"""Anthropic Messages streaming (dialect ``anthropic-messages``): the events and the request.

Source: Anthropic's API reference, "Streaming Messages" and "Messages" (``POST /v1/messages`` with
``"stream": true``, headers ``x-api-key`` and ``anthropic-version: 2023-06-01``). Over HTTP each
event is an SSE ``event: <type>`` / ``data: <json>`` pair; the ``data`` object repeats the type,
which is all the translator reads. One response is one message:

``message_start`` · (``content_block_start`` · ``content_block_delta``\\* ·
``content_block_stop``)\\* · ``message_delta`` · ``message_stop``, with ``ping`` anywhere and
``error`` (e.g. ``overloaded_error``) possibly mid-stream. Blocks are addressed by ``index`` and
their deltas may interleave.

Mapping (translator: ``translators/dialects/anthropic_messages.py``), decisions and reasons:

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

Requests (:func:`messages_from_ui`): the ``UIMessage`` history becomes ``messages``; system
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

from typing import Any, Final, Literal, NotRequired, TypedDict

import orjson

from chunkbridge.protocol_specs import anthropic_messages_tools as tools_spec

__all__ = [
    "AI_SDK_DIFFERENCES",
    "AI_SDK_REQUEST_DIFFERENCES",
    "API_VERSION",
    "DEFAULT_PATH",
    "RETRY_STATUSES",
    "STOP_REASONS",
    "USAGE_FIELDS",
    "messages_from_ui",
]

DEFAULT_PATH: Final = "/v1/messages"
API_VERSION: Final = "2023-06-01"
#: 529 is Anthropic's "overloaded"; retried like 429 and the usual 5xx before the first byte.
RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504, 529})


class MessageStart(TypedDict):
    type: Literal["message_start"]
    message: dict[str, Any]  # {id, model, role, content: [], usage: {input_tokens, …}}


class ContentBlockStart(TypedDict):
    type: Literal["content_block_start"]
    index: int
    content_block: dict[str, Any]  # {type: text | thinking | tool_use | server_tool_use | …}


class ContentBlockDelta(TypedDict):
    type: Literal["content_block_delta"]
    index: int
    #: text_delta {text} | thinking_delta {thinking} | signature_delta {signature} |
    #: input_json_delta {partial_json} | citations_delta {citation}
    delta: dict[str, Any]


class ContentBlockStop(TypedDict):
    type: Literal["content_block_stop"]
    index: int


class MessageDelta(TypedDict):
    type: Literal["message_delta"]
    delta: dict[str, Any]  # {stop_reason, stop_sequence}
    usage: NotRequired[dict[str, Any]]


class StreamError(TypedDict):
    type: Literal["error"]
    error: dict[str, Any]  # {type: overloaded_error | api_error | …, message}


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
    "provider-tool-input-kept": "for `code_execution` the AI SDK rewrites the call's input into "
    "its own schema (adds `type: programmatic-tool-call`); we keep the input Anthropic sent, "
    "which is also what has to go back in the history.",
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
    "ai-sdk-rejects-real-stream": "a follow-up response carrying the result of a server tool "
    "that waited on the app's tools (programmatic tool calling, deferred tool search): the AI "
    "SDK's stream fails on a result for a call it did not see; chunkbridge shows the answer "
    "(the result lands on the waiting part when the history holds it, else as a data part).",
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

FileSource = Any  # DataUrl | None, from chunkbridge.kit.provider (spec modules import no kit)


def _file_block(media_type: str, url: str, inline: Any) -> dict[str, Any]:
    """A user file as a content block; ``inline`` is the parsed data URL or ``None``."""
    if media_type.startswith("image/"):
        if inline is not None:
            source = {"type": "base64", "media_type": inline.media_type, "data": inline.base64}
        else:
            source = {"type": "url", "url": url}
        return {"type": "image", "source": source}
    if media_type == "application/pdf":
        if inline is not None:
            source = {"type": "base64", "media_type": "application/pdf", "data": inline.base64}
        else:
            source = {"type": "url", "url": url}
        return {"type": "document", "source": source}
    if media_type == "text/plain" and inline is not None:
        source = {"type": "text", "media_type": "text/plain", "data": inline.text()}
        return {"type": "document", "source": source}
    raise ValueError(f"Files of type {media_type} cannot be sent to Anthropic.")


def _tool_result_content(output: Any) -> str:
    return output if isinstance(output, str) else orjson.dumps(output).decode()


def _text_block(part: Any) -> dict[str, Any] | None:
    """A text part → a ``text`` block with its citations, or the ``compaction`` block it came
    from (a summary the API wrote of the conversation so far, which it wants back in place)."""
    meta = (part.providerMetadata or {}).get("anthropic") or {}
    if not part.text:
        return None
    if meta.get("type") == "compaction":
        block = {"type": "compaction", "content": part.text}
        if isinstance(meta.get("signature"), str):
            block["signature"] = meta["signature"]
        return block
    block = {"type": "text", "text": part.text}
    if meta.get("citations") is not None:
        block["citations"] = meta["citations"]
    return block


def _fallback_block(part: Any) -> dict[str, Any] | None:
    """The custom part of a server-side model fallback → the ``fallback`` block it came from."""
    meta = ((getattr(part, "providerMetadata", None) or {}).get("anthropic")) or {}
    if part.kind != "anthropic.fallback" or not isinstance(meta.get("from"), dict):
        return None
    return {"type": "fallback", "from": meta["from"], "to": meta.get("to")}


def _tool_input(part: Any) -> dict[str, Any]:
    """A call's input as the API takes it: an object; input that was not JSON (a failed call's
    ``rawInput``) wrapped as ``{rawInvalidInput}``, so the model sees what it wrote."""
    value = part.input
    if value is None and part.state == "output-error":
        value = part.rawInput
    if isinstance(value, dict):
        return value
    return {} if value is None else {"rawInvalidInput": value}


def _tool_uses_last(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``tool_use`` blocks after the other blocks of their stretch between thinking blocks: the
    API wants a client tool call to end its turn, after the server tools it ran alongside."""
    out: list[dict[str, Any]] = []
    stretch: list[dict[str, Any]] = []
    for block in [*content, None]:
        if block is None or block["type"] in ("thinking", "redacted_thinking"):
            out += [b for b in stretch if b["type"] != "tool_use"]
            out += [b for b in stretch if b["type"] == "tool_use"]
            stretch = []
            if block is not None:
                out.append(block)
        else:
            stretch.append(block)
    return out


def _drop_orphan_callers(messages: list[dict[str, Any]]) -> None:
    """A call made by a program whose code execution call is not in the history (an earlier
    response the client no longer sends) loses its ``caller``: the API rejects a caller that
    names a tool it cannot find. The last assistant turn keeps them (its program runs on)."""
    runs = {
        block["id"]
        for message in messages
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "server_tool_use" and block["name"] == "code_execution"
    }
    users = [i for i, message in enumerate(messages) if message["role"] == "user"]
    for message in messages[: users[-1] if users else 0]:
        for block in message["content"]:
            caller = block.get("caller") if message["role"] == "assistant" else None
            if caller and caller["type"] != "direct" and caller.get("tool_id") not in runs:
                del block["caller"]


def _mcp_blocks(part: Any, server: Any) -> list[dict[str, Any]]:
    """An MCP call Anthropic made (``mcp_tool_use``) and its ``mcp_tool_result``."""
    call = {
        "type": "mcp_tool_use",
        "id": part.toolCallId,
        "name": part.tool_name,
        "input": part.input if isinstance(part.input, dict) else {},
        "server_name": server,
    }
    if part.state == "output-available":
        content = part.output
        is_error = False
    elif part.state == "output-error":
        content, is_error = (
            [{"type": "text", "text": part.errorText or "The MCP tool failed."}],
            True,
        )
    else:
        return [call]
    result = {"type": "mcp_tool_result", "tool_use_id": part.toolCallId, "is_error": is_error}
    result["content"] = (
        content if isinstance(content, (str, list)) else _tool_result_content(content)
    )
    return [call, result]


def _assistant_step(parts: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One model step: (assistant content, tool results for the next user turn)."""
    content: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        if kind in ("text", "custom"):
            block = _text_block(part) if kind == "text" else _fallback_block(part)
            if block is not None:
                content.append(block)
            continue
        if kind == "reasoning":
            meta = (part.providerMetadata or {}).get("anthropic") or {}
            if isinstance(meta.get("signature"), str):
                content.append(
                    {"type": "thinking", "thinking": part.text, "signature": meta["signature"]}
                )
            elif isinstance(meta.get("redactedData"), str):
                content.append({"type": "redacted_thinking", "data": meta["redactedData"]})
            continue
        if not hasattr(part, "toolCallId"):
            continue  # sources, files, data parts: the model does not need them back
        state = part.state
        if part.providerExecuted:
            if state in ("input-streaming", "output-denied"):
                continue
            call_meta = getattr(part, "callProviderMetadata", None) or {}
            anthropic = call_meta.get("anthropic") if isinstance(call_meta, dict) else None
            if isinstance(anthropic, dict) and anthropic.get("type") == "mcp-tool-use":
                content += _mcp_blocks(part, anthropic.get("serverName"))
            else:
                content += tools_spec.server_tool_blocks(part)
            continue
        if state not in ("output-available", "output-error", "output-denied"):
            continue  # no answer yet: the API rejects a tool_use without its tool_result
        call = {"type": "tool_use", "id": part.toolCallId, "name": part.tool_name}
        call["input"] = _tool_input(part)
        caller = tools_spec.api_caller(getattr(part, "callProviderMetadata", None))
        if caller is not None:
            call["caller"] = caller
        content.append(call)
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.toolCallId}
        if state == "output-available":
            result["content"] = _tool_result_content(part.output)
        else:
            result["content"] = part.errorText or "The user denied this tool call."
            result["is_error"] = True
        results.append(result)
    return _tool_uses_last(content), results


def messages_from_ui(messages: list[Any], steps: Any, parse_data_url: Any) -> list[dict[str, Any]]:
    """``UIMessage`` history → Anthropic ``messages`` (see the module docstring).

    ``steps(message)`` cuts an assistant message at ``step-start``; ``parse_data_url(url)`` reads
    a data URL (both from :mod:`chunkbridge.kit.provider`). Consecutive turns of one role are
    merged: the API wants user and assistant to alternate. Raises ``ValueError`` for a file the
    API cannot take.
    """
    out: list[dict[str, Any]] = []

    def add(role: str, content: list[dict[str, Any]]) -> None:
        if not content:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(content)
        else:
            out.append({"role": role, "content": content})

    for message in messages:
        if message.role == "system":
            continue  # joined into the system prompt
        if message.role == "user":
            content = []
            for part in message.parts:
                kind = getattr(part, "type", None)
                if kind == "text" and part.text:
                    content.append({"type": "text", "text": part.text})
                elif kind == "file":
                    content.append(_file_block(part.mediaType, part.url, parse_data_url(part.url)))
            add("user", content)
            continue
        for step in steps(message):
            content, results = _assistant_step(step)
            add("assistant", content)
            add("user", results)
    _drop_orphan_callers(out)
    return out
