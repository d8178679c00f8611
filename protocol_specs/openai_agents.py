"""The OpenAI Agents SDK's run stream (dialect ``openai-agents``), in the host app's process.

Source: ``openai-agents`` 0.24 (``agents.stream_events``): what ``Runner.run_streamed(agent,
input).stream_events()`` yields. Three kinds of event, by ``type``:

* ``raw_response_event``: one event of the model's own stream, ``data`` an OpenAI Responses API
  stream event (``response.created``, ``response.output_text.delta``,
  ``response.function_call_arguments.delta``, ``response.output_item.added/done``,
  ``response.reasoning_summary_text.delta``, ``response.completed``…); one run calls the model
  once per turn of the agent loop, each call a ``response.created`` … ``response.completed``;
* ``run_item_stream_event``: an item the run produced, by ``name`` (``tool_called``,
  ``tool_output``, ``handoff_requested``, ``handoff_occured`` — sic —,
  ``message_output_created``, ``reasoning_item_created``, ``mcp_*``, ``tool_search_*``), its
  ``item`` holding the ``raw_item`` (the Responses API item) and, for a tool's output, the
  tool's own return value as ``output``;
* ``agent_updated_stream_event``: the agent now running (``new_agent``), first at the start and
  again after each handoff.

The iterator ends when the run is complete and raises what failed the run (a model error,
``MaxTurnsExceeded``, a guardrail tripwire…).

Recorded form (``fixtures/openai-agents/*.jsonl``): ``{type, data}`` with ``data`` the Responses
API event as JSON (``model_dump(mode="json")`` without ``None`` fields); ``{type, name, item:
{type, raw_item, output?, agent?, source_agent?, target_agent?}}`` (agents by ``{name}``);
``{type, new_agent: {name}}``. The iterator's end is the kit's ``STREAM_END``, an exception
``stream_error``.

Mapping (translator: ``translators/dialects/openai_agents/``), decisions and reasons:

=====================================  ===========================================================
event                                  UI chunks
=====================================  ===========================================================
the first ``agent_updated``            ``start`` (``messageMetadata {agent}``), ``start-step``
``agent_updated`` (a handoff)          ``data-handoff {from, to}``; the finish's ``agent`` is the
                                       last one
``response.created``                   a model call: its ``model`` in the metadata; after the
                                       first, ``finish-step`` + ``start-step`` (a UI step per
                                       model call)
``response.output_text.delta``,        text by ``item_id`` (a refusal is text too), ended by the
``response.refusal.delta``             item's ``response.output_item.done``
``response.reasoning_summary_text.     reasoning by ``item_id`` and summary index, ended with the
delta``, ``response.reasoning_text.    item
delta``
``response.output_item.added``         ``tool-input-start`` (``toolCallId`` = ``call_id``); its
(``function_call``)                    ``function_call_arguments.delta``: ``tool-input-delta``;
                                       ``output_item.done``: ``tool-input-available``
                                       (``tool-input-error`` when not JSON). A handoff
                                       (``transfer_to_…``) is such a call too
``response.completed``                 its ``usage`` added to the run's
other raw events                       nothing (counted): the items say the rest
``tool_called`` (``function_call``)    nothing when its call streamed; else announced now
``tool_output``,  ``handoff_occured``  ``tool-output-available`` (the tool's own return value;
                                       for a handoff, its ``{"assistant": name}``). The SDK runs
                                       the tools in the app, on the server: no
                                       ``providerExecuted``
``message_output_created``,            nothing when streamed; else the item's text / summary
``reasoning_item_created``
``handoff_requested``                  nothing (the transfer call streamed)
other run items, hosted tools          the unknown-event policy (``data-<name>``)
``STREAM_END``                         open parts end, ``finish-step``, ``finish``: ``tool-calls``
                                       when a call got no output (it waits: an approval the run
                                       stopped for, ``result.interruptions``), else ``stop``;
                                       ``messageMetadata {agent, model, usage}``
``stream_error``                       ``error`` with the exception's message
=====================================  ===========================================================

What is lost: a tool's failure reads as its output (the SDK hands the model an error text as the
tool's result, and the stream says no more); approvals are not in the stream (the run stops with
the call pending: ``input-available``, finish ``tool-calls``; the app reads
``result.interruptions``); annotations, logprobs, hosted tools' own items (forwarded as data
parts).
"""

from __future__ import annotations

from typing import Final

__all__ = ["IGNORED_RAW", "RUN_ITEMS", "USAGE_FIELDS"]

#: Raw response events with nothing of their own for the UI (counted as ``no-content-event``).
IGNORED_RAW: Final = frozenset(
    {
        "response.in_progress",
        "response.queued",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.done",
        "response.function_call_arguments.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
    }
)

#: Run item event names the translator maps (the others: the unknown-event policy).
RUN_ITEMS: Final = frozenset(
    {
        "tool_called",
        "tool_output",
        "handoff_requested",
        "handoff_occured",
        "message_output_created",
        "reasoning_item_created",
    }
)

#: Our usage key → the Responses API ``usage`` field.
USAGE_FIELDS: Final = {"inputTokens": "input_tokens", "outputTokens": "output_tokens"}
