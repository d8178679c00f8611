"""OpenAI Responses API streaming (dialect ``openai-responses``): the events and the request.

Source: OpenAI's API reference, "Responses" and "Streaming events" (``POST /v1/responses`` with
``"stream": true`` and ``Authorization: Bearer``). Each SSE ``data:`` is an event object with a
``type`` and a ``sequence_number``. A response is a list of output *items* (``message``,
``reasoning``, ``function_call``, ``web_search_call``, …) addressed by ``output_index``; each is
announced by ``response.output_item.added``, filled by its own delta events (which name it by
``item_id``), and settled by ``response.output_item.done`` carrying the whole item. The stream
ends with ``response.completed``, ``response.incomplete`` or ``response.failed``; an ``error``
event may come instead.

Mapping (translator: ``translators/dialects/openai_responses/``), decisions and reasons:

====================================  ============================================================
upstream                              UI chunks
====================================  ============================================================
``response.created``                  ``start`` (``messageMetadata {model}``), ``start-step``
``message`` item                      a text part per item: ``text-start`` with
                                      ``providerMetadata {openai: {itemId}}``,
                                      ``output_text.delta`` → ``text-delta``, at the item's end
                                      ``text-end`` with ``{itemId, annotations?}`` and, for ai 7,
                                      ``citations`` from the annotations
``refusal.delta``                     text into the same part (the refusal is the answer the user
                                      should read); the finish reason becomes ``content-filter``
``reasoning`` item                    a reasoning part per summary part (``reasoning_summary_*``),
                                      or one empty part when the item has no summary, so that
                                      its ``encrypted_content`` (requested with ``include:
                                      ["reasoning.encrypted_content"]``) rides in
                                      ``providerMetadata {openai: {itemId,
                                      reasoningEncryptedContent}}`` (``null`` without it, as
                                      the AI SDK has it) and goes back next turn;
                                      ``reasoning_text.delta`` (raw reasoning) as text of the part
``function_call`` item                ``tool-input-start``; ``function_call_arguments.delta`` →
                                      ``tool-input-delta``; at the item's end
                                      ``tool-input-available`` (the item's full ``arguments``,
                                      ``providerMetadata {openai: {itemId}}``) or
                                      ``tool-input-error`` when not JSON
``web_search_call`` item              a ``providerExecuted`` tool call named ``web_search`` with
                                      input ``{}``; at its end ``tool-output-available`` with
                                      ``{action, sources?}`` (the AI SDK's shape) and a
                                      ``source-url`` per ``action.sources`` URL; a status other
                                      than ``completed`` → ``tool-output-error``
``custom_tool_call``,                 a tool call the app runs, announced whole at the item's end
``computer_call``,                    (its input is free text or an action, not JSON text):
``local_shell_call``                  ``tool-input-available`` with ``input`` / ``action``
``mcp_approval_request`` item         the provider asks before it calls a remote MCP tool: a
                                      dynamic ``providerExecuted`` tool ``mcp.<name>`` (its
                                      arguments as input) and ``tool-approval-request``
                                      (``approvalId`` = the request id, also the call's id; ai 5:
                                      the question form); the answer goes back in the next request
``mcp_call`` item                     the dynamic ``providerExecuted`` tool ``mcp.<name>`` with the
                                      AI SDK's output ``{type: "call", serverLabel, name,
                                      arguments, output?, error?}``; a call made after an approval
                                      (``approval_request_id``) lands on the approval's part.
                                      ``mcp_list_tools``: nothing
other ``*_call`` items                a ``providerExecuted`` tool call named after the item type
(``file_search_call``,                (``file_search``, ``code_interpreter``…); at its end the
``code_interpreter_call``…)           item's fields (without ``id``/``type``) as the output
``url_citation`` annotations          ``source-url`` parts at the end of the response, unless the
                                      web search already listed its sources (as the AI SDK does);
                                      file citations → ``source-document`` at once
``response.completed`` /              open parts end, ``finish-step``, ``finish`` with the reason
``response.incomplete``               from :data:`INCOMPLETE_REASONS` (``tool-calls`` after a
                                      function call, ``content-filter`` after a refusal, else
                                      ``stop``), ``messageMetadata {model, responseId, usage,
                                      incompleteReason?}``
``response.failed``, ``error``        ``error`` with OpenAI's message (code prefixed), the closing
                                      discipline for open parts and calls
``response.in_progress``, ``*.done``  nothing (the deltas and the item events carry everything)
/ ``*.added`` of content parts,
``web_search_call.searching`` …,
deltas of code / MCP arguments /
custom tool input, partial images
other event types and item types      the unknown-event policy (``data-<type>``)
====================================  ============================================================

Requests (the dialect's ``request.py``): the ``UIMessage`` history becomes ``input`` items, whole
(not ``item_reference`` items: they work with ``store`` on or off); system messages join the
configured ``instructions``. User text, images (``input_image`` with the data URL or http URL) and
other files (``input_file``: ``file_data`` for data URLs, ``file_url`` else); each assistant text
part as an assistant message with its ``phase``; reasoning parts that carry
``reasoningEncryptedContent`` as ``reasoning`` items (others are not sent: without ``store`` the API
cannot resolve a bare item id); a compaction as its ``compaction`` item. The app's calls go back as
``function_call`` items (``namespace``, a program's ``caller``), custom tools as
``custom_tool_call``, and the built-in tools the deployment declares in their own items (shell,
local shell, apply patch, client tool search: ``protocol_specs/openai_responses_tools.py``); the
step's outputs follow its calls (a failure as ``{"error": …}``, a refusal as a sentence). Tools
OpenAI ran go back whole where the API has an input form for them (web search, hosted shell, hosted
tool search, programs and their outputs); code interpreter, file search, image generation and MCP
calls are not sent (the text that followed stands for them). Calls without an answer yet are left
out. The user's decision on an MCP approval request goes back as the AI SDK sends it:
``item_reference`` to the stored request, then ``mcp_approval_response {approval_request_id,
approve, reason?}`` (so it needs ``store``, the API's default). What differs from the AI SDK's
requests: :data:`AI_SDK_REQUEST_DIFFERENCES`.

The recordings in ``fixtures/openai-responses/`` were written from the event shapes of OpenAI's API
reference and the AI SDK provider's own schemas (this project's CI has no provider key); the
differential test holds them to what the AI SDK's provider accepts.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AI_SDK_DIFFERENCES",
    "AI_SDK_REQUEST_DIFFERENCES",
    "DEFAULT_PATH",
    "INCOMPLETE_REASONS",
    "USAGE_FIELDS",
]

DEFAULT_PATH: Final = "/v1/responses"

#: ``incomplete_details.reason`` → finishReason (the raw reason stays in ``incompleteReason``).
INCOMPLETE_REASONS: Final[dict[str, str]] = {
    "max_output_tokens": "length",
    "content_filter": "content-filter",
}

#: OpenAI ``usage`` → ``finish.messageMetadata.usage`` (our name → the path of its field).
USAGE_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "inputTokens": ("input_tokens",),
    "outputTokens": ("output_tokens",),
    "totalTokens": ("total_tokens",),
    "cachedInputTokens": ("input_tokens_details", "cached_tokens"),
    "reasoningTokens": ("output_tokens_details", "reasoning_tokens"),
}

#: Where chunkbridge and ``@ai-sdk/openai`` (Responses) + ``streamText`` + ``toUIMessageStream``
#: end with different ``UIMessage``\\s for the same stream (tests/test_provider_differential.py).
AI_SDK_DIFFERENCES: Final[dict[str, str]] = {
    "raw-reasoning-text-kept": "`reasoning_text.delta` (raw reasoning, as LM Studio streams it): "
    "the AI SDK's provider reads only reasoning summaries and leaves the part empty; ours shows "
    "the text.",
    "hosted-tool-status-text": "a hosted tool item that ends in another status (Azure's web "
    "search still `searching`): both end the part in `output-error`; the AI SDK's `errorText` "
    "is the status as JSON, ours a sentence naming it.",
    "app-run-tools-finish-tool-calls": "a shell command (`shell_call` without a hosted "
    "environment), a `local_shell_call` or a client-side `tool_search_call` waits for the app "
    "to run it: ours finishes `tool-calls`, the AI SDK's provider `stop`. A `useChat` client "
    "answers and continues either way (`sendAutomaticallyWhen`'s helpers read the message's "
    "parts, never the finish reason), so the reason is what the app itself reads — "
    "`onFinish({finishReason})`, the message metadata, an agent loop — and there `stop` says "
    "the answer is complete while a call waits for the app. The AI SDK's provider counts "
    "function, custom, computer and patch calls, app-run tools like these, as `tool-calls`; "
    "leaving these three out is its omission.",
    "ai-sdk-rejects-real-stream": "real streams the AI SDK's provider fails on: xAI's "
    "`url_citation` annotations without `start_index`/`end_index`/`title` (the provider's "
    "strict schema ends the stream with `Type validation failed`). chunkbridge keeps the "
    "answer and its sources.",
    "mcp-call-on-approval-part": "an `mcp_call` made after an approval (`approval_request_id`) "
    "is the call the user approved: we give it the approval's id, so its output lands on the "
    "approved part. The AI SDK shows it as a second part (the item id), also when the "
    "continuation carries the approval, and leaves the approved part `approval-responded`, "
    "waiting forever.",
    "error-closes-parts": "`response.failed` or an `error` event mid-stream: the AI SDK leaves "
    "the open text part `streaming` forever; we end open parts before the `error` chunk (the "
    "closing discipline), and the error text keeps OpenAI's code (`server_error: …`).",
    "incomplete-closes-parts": "`response.incomplete` (content filter, max tokens) before the "
    "message item's `output_item.done`: the AI SDK finishes but leaves the text part "
    "`streaming`; we end it, as the response is over.",
    "invalid-tool-input-text": "arguments that are not JSON: both end the call in `output-error` "
    "with the raw text as input; the wording of `errorText` differs.",
    "truncation-is-an-error": "the body ends without `response.completed`: the AI SDK finishes "
    "with `interrupted` and leaves parts `streaming` / `input-streaming`; we end the parts, "
    "settle half-streamed calls as `output-error`, and send an `error` chunk that says the "
    "answer was cut off.",
}


#: Where the ``input`` chunkbridge builds from a ``UIMessage`` history differs from the one the AI
#: SDK builds (``convertToModelMessages`` + ``@ai-sdk/openai`` with ``store: false``, the mode
#: that sends items rather than references) for the same history
#: (tests/test_provider_round_trip.py).
AI_SDK_REQUEST_DIFFERENCES: Final[dict[str, str]] = {
    "empty-text-not-sent": "a message item that streamed no text (beside an image generation "
    "call): the AI SDK sends an assistant message with empty content; we send nothing.",
    "approval-request-by-reference": "the continuation that carries the user's decision on an "
    "MCP approval: ours refers to the approval request OpenAI keeps (`item_reference`, as the "
    "AI SDK does with the API's default `store`) before the `mcp_approval_response`; the AI "
    "SDK with `store: false` sends the response alone, and after a denial a "
    "`function_call_output` for the approval's id as well, which no function call in the "
    "input has.",
    "decided-approval-sent-once": "an MCP approval the user decided in an earlier request: the "
    "AI SDK sends its `mcp_approval_response` again with every later request, before the "
    "assistant's items and without the approval request it answers (which `store: false` "
    "does not keep); chunkbridge sends the decision once, in the continuation that carries "
    "it, after which the call's result and the text that followed stand for it.",
}


# -- requests ------------------------------------------------------------------------------------
