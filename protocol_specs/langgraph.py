"""A LangGraph graph's stream (dialect ``langgraph``), in the host app's process.

Source: ``langgraph`` 1.2 with ``langchain-core`` 1.8: what ``graph.astream(input, config,
stream_mode=["messages", "updates", "custom"])`` yields — ``(mode, payload)`` tuples, or
``(namespace, mode, payload)`` with ``subgraphs=True``:

* ``messages``: ``(message, metadata)``: a chat model's ``AIMessageChunk`` as it streams
  (``content`` text or content blocks, ``tool_call_chunks`` ``{name, args, id, index}``,
  ``usage_metadata``, ``response_metadata {model_name, finish_reason}``, ``chunk_position
  "last"`` on the last one), or a whole message a node returned (a ``ToolMessage`` from
  ``ToolNode``: ``tool_call_id``, ``content``, ``status``); ``metadata`` names the node
  (``langgraph_node``, ``langgraph_step``);
* ``updates``: ``{node: update}`` after each node, or ``{"__interrupt__": [Interrupt(value,
  id)]}`` when the graph stopped at ``interrupt(value)``;
* ``custom``: what a node wrote with ``get_stream_writer()``.

The iterator ends when the graph finishes or stops at an interrupt, and raises what failed it.

Recorded form (``fixtures/langgraph/*.jsonl``): the tuple as a JSON array, messages and
interrupts as pydantic's JSON form without ``None`` fields, the metadata as ``{langgraph_node,
langgraph_step}``. Message ids and interrupt ids are random per run (the tests compare runs with
them aligned). The iterator's end is the kit's ``STREAM_END``, an exception ``stream_error``.

Mapping (translator: ``translators/dialects/langgraph/``), decisions and reasons:

=====================================  ===========================================================
event                                  UI chunks
=====================================  ===========================================================
the first event                        ``start``, ``start-step``
``messages``: an AI chunk              text (``content`` text, ``text`` blocks) and reasoning
                                       (``reasoning``/``thinking`` blocks,
                                       ``additional_kwargs.reasoning_content``) parts; each
                                       ``tool_call_chunks`` entry by its ``index``:
                                       ``tool-input-start`` / ``-delta``, and
                                       ``tool-input-available`` when the message ends (its last
                                       chunk, its node's update, or the next message); a new
                                       message id after an AI message: ``finish-step`` +
                                       ``start-step`` (a UI step per model call);
                                       ``usage_metadata`` summed, ``model_name`` kept
``messages``: a ``ToolMessage``        ``tool-output-available`` (``content``, parsed when it is a
                                       JSON object or array), ``tool-output-error`` for
                                       ``status: "error"``. The graph runs the tools in the app,
                                       on the server: no ``providerExecuted``
``messages``: other messages           nothing (counted): a node echoing input is not the answer
``updates`` ``{node: …}``              the node's message ended (its calls complete); a transient
                                       ``data-node-update {node, step?}``
``updates`` ``__interrupt__``          each interrupt is a question: the client-side ``ask_user``
                                       call, ``toolCallId`` = the interrupt id, input
                                       ``{question, …}`` (a string value is the question; an
                                       object's ``question``/``message``/``text`` is, its other
                                       fields ride along); finish ``tool-calls``
                                       (``protocol_specs/human_in_the_loop.py``)
``custom``                             a transient ``data-custom`` with the value
other modes (``values``, ``debug``…)   the unknown-event policy (``data-<mode>``)
``STREAM_END``                         open parts end, ``finish``: ``tool-calls`` when a call
                                       got no output or a question waits, else ``stop``;
                                       ``messageMetadata {model?, usage?}``
``stream_error``                       ``error`` with the exception's message
=====================================  ===========================================================

What is lost: the state in ``updates`` (the messages already showed it), a subgraph's namespace,
``artifact`` of tool messages, the metadata beyond the node.

The request side (``request.py`` of the dialect): the chat's answers to the graph's questions as
``Command(resume={interrupt id: answer})``, else the newest user message (a graph with a
checkpointer keeps the thread) or the whole history, as LangChain messages.
"""

from __future__ import annotations

from typing import Final

__all__ = ["INTERRUPT", "QUESTION_KEYS", "USAGE_FIELDS"]

#: The ``updates`` key of a graph that stopped at ``interrupt()``.
INTERRUPT: Final = "__interrupt__"
#: Where an interrupt's object value holds its question, in order.
QUESTION_KEYS: Final = ("question", "message", "text", "prompt")
#: Our usage key → ``usage_metadata``'s.
USAGE_FIELDS: Final = {"inputTokens": "input_tokens", "outputTokens": "output_tokens"}
