"""pydantic-ai's agent run events (dialect ``pydantic-ai``), in the host app's own process.

Source: ``pydantic-ai-slim`` 2.x, ``pydantic_ai.messages`` (``AgentStreamEvent``) and
``pydantic_ai.run.AgentRunResultEvent``: what ``async with agent.run_stream_events(...) as
events`` yields, read natively (not through pydantic-ai's AG-UI or Vercel AI adapters). Every
event has an ``event_kind``; a response part has a ``part_kind`` and a delta a
``part_delta_kind``. One run may call the model several times (a *response* each, its parts
indexed from 0), running the agent's tools in between; it ends with ``agent_run_result``, or the
iterator raises.

Recorded form (``fixtures/pydantic-ai/*.jsonl``): each event as pydantic's JSON form of the
dataclass (``pydantic_core.to_jsonable_python``) without its ``None`` fields and timestamps;
``agent_run_result`` keeps only what the translator reads of the result (``response.model_name``,
``response.finish_reason``, ``usage``). The iterator's end is the kit's ``STREAM_END`` frame, an
exception it raised ``stream_error`` (:mod:`chunkbridge.kit`).

Mapping (translator: ``translators/dialects/pydantic_ai/``), decisions and reasons:

====================================  ============================================================
event                                 UI chunks
====================================  ============================================================
the first event                       ``start``, ``start-step``
``part_start`` / ``part_delta`` /     per part index: ``text`` → a text part, ``thinking`` → a
``part_end``                          reasoning part (its ``signature``, ``id`` and
                                      ``provider_name`` in ``providerMetadata {pydanticAi}`` on
                                      ``reasoning-end``, for the round trip), ``tool-call`` →
                                      ``tool-input-start`` / ``-delta`` (``args`` and
                                      ``args_delta`` as JSON text) / ``-available`` at the part's
                                      end (``tool-input-error`` when the arguments are not JSON);
                                      ``builtin-tool-call`` / ``-return`` → the same with
                                      ``providerExecuted`` (the model provider ran it), the
                                      return as ``tool-output-available`` or, for an error
                                      outcome, ``tool-output-error``; their fields pydantic-ai
                                      sends back to that provider in ``providerMetadata
                                      {pydanticAi}``: the call's ``id``, ``providerName``,
                                      ``providerDetails``, ``toolKind`` on
                                      ``tool-input-available`` (``callProviderMetadata``, every
                                      major), the return's where they differ from the
                                      call's (``null``: the return lacks one) on its output
                                      chunk (``resultProviderMetadata``: ai 6 and 7 only, so
                                      what both share rides on the call); other part kinds (files,
                                      compaction, speech) → the unknown-event policy
                                      (``data-part-<kind>``)
a part event after tool events        the model is called again: ``finish-step``,
                                      ``start-step`` (one UI step per model response); a
                                      resumed run's tool events before its first response
                                      (the decided calls the history holds) end no step: their
                                      outputs update earlier parts, and an empty step would show
``function_tool_call`` /              the call was announced by its part; a call that never
``output_tool_call``                  streamed (resumed, deferred) is announced now
``function_tool_result`` /            ``success``/``interrupted`` → ``tool-output-available``
``output_tool_result``                (the content as JSON: a tool's own return value);
                                      ``failed``/``retried`` → ``tool-output-error`` with the
                                      feedback the model gets; ``denied`` →
                                      ``tool-output-denied``. Function tools run in the app, on
                                      the server: no ``providerExecuted``
``deferred_tool_requests``            each approval → ``tool-approval-request`` (``approvalId`` =
                                      the tool call id: ``DeferredToolResults.approvals`` is keyed
                                      by it; ai 5 gets the question form); external calls stay at
                                      ``input-available`` for the app to run
``custom``                            ``data-<name>`` with the event's own fields
``final_result``, ``*_delta`` of      nothing (counted): the stream already showed it; request
tools, capabilities, settings         bookkeeping is not the answer
``agent_run_result``                  open parts end, ``finish-step``, ``finish``: ``tool-calls``
                                      when calls wait for the app or an approval, else the last
                                      response's finish reason (:data:`FINISH_REASONS`, ``stop``
                                      when it has none); ``messageMetadata {model, usage}``
``STREAM_END`` without a result       the same finish (a run cut short by its own handle)
``stream_error``                      ``error`` with the exception's message; open parts and
                                      calls are closed by the stream guard
other event kinds                     the unknown-event policy (``data-<event_kind>``)
====================================  ============================================================

What is lost: part ``id``/``provider_details`` of text parts, ``provider_details`` of thinking
parts, citations, at ai 5 a native return's fields where they differ from its call's (its
output keeps no metadata there: the return comes back with its call's), and the run's output
object (the stream already showed it as text or as the output tool's call).

The request side (``history.py`` of the dialect): the ``UIMessage`` history → pydantic-ai's
``ModelMessage`` list for ``message_history`` (user text and files, system text, each assistant
step as a ``ModelResponse`` with its text, thinking, tool calls and the provider-run calls with
their returns — pydantic-ai sends those back to the provider that ran them —, then a
``ModelRequest`` with the answered calls' returns), and the app's answers to the last step's
deferred calls (approvals, external results) as ``DeferredToolResults``. The parts' fields are
read from ``providerMetadata {pydanticAi}`` or, for a chat stored by pydantic-ai's own
``VercelAIAdapter``, from its ``{pydantic_ai}`` form (:data:`ADAPTER_KEYS`).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ADAPTER_KEYS",
    "ADAPTER_PROVIDER",
    "ERROR_OUTCOMES",
    "FINISH_REASONS",
    "IGNORED_EVENTS",
    "PROVIDER",
    "RUN_EVENTS",
    "USAGE_FIELDS",
]

#: The key of pydantic-ai's entries in ``providerMetadata``.
PROVIDER: Final = "pydanticAi"

#: The key pydantic-ai's own ``VercelAIAdapter`` stores a part's fields under
#: (``pydantic_ai.ui.vercel_ai._utils.PROVIDER_METADATA_KEY``), read back so that a chat it stored
#: goes on through this dialect.
ADAPTER_PROVIDER: Final = "pydantic_ai"

#: Our ``providerMetadata`` keys → the adapter's (snake_case, the parts' own field names).
ADAPTER_KEYS: Final = {
    "signature": "signature",
    "id": "id",
    "providerName": "provider_name",
    "providerDetails": "provider_details",
    "toolKind": "tool_kind",
}

#: ``event_kind`` values the translator has a handler for (the run's own vocabulary).
RUN_EVENTS: Final = frozenset(
    {
        "part_start",
        "part_delta",
        "part_end",
        "function_tool_call",
        "output_tool_call",
        "function_tool_result",
        "output_tool_result",
        "deferred_tool_requests",
        "custom",
        "agent_run_result",
    }
)

#: Events that carry nothing for the UI (counted as ``no-content-event``).
IGNORED_EVENTS: Final = frozenset(
    {
        "final_result",
        "deferred_tool_results",
        "tool_availability_delta",
        "capability_load_delta",
        "model_settings_delta",
        "enqueued_messages",
    }
)

#: ``ModelResponse.finish_reason`` → the UI ``finishReason``.
FINISH_REASONS: Final = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content-filter",
    "tool_call": "tool-calls",
    "error": "error",
}

#: Tool return outcomes that reach the model as an error (pydantic-ai's ``ERROR_OUTCOMES``).
ERROR_OUTCOMES: Final = frozenset({"failed", "retried"})

#: ``RunUsage`` attribute → the usage key of ``messageMetadata``.
USAGE_FIELDS: Final = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "cacheReadTokens": "cache_read_tokens",
    "cacheWriteTokens": "cache_write_tokens",
}
