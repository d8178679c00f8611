"""AG-UI 1.0 (dialect ``ag-ui``): the events an agent streams and the ``RunAgentInput`` it takes.

Source: ``@ag-ui/core`` 1.0 / the ``ag-ui-protocol`` 1.0 Python package (``ag_ui.core``), as
emitted by pydantic-ai's ``AGUIAdapter``, LangGraph, CrewAI, Mastra, Agno, AWS AgentCore and
TanStack AI (``shared/specs/ecosystem-notes.md`` §2). Over HTTP the client POSTs a
``RunAgentInput`` (camelCase JSON) with ``Accept: text/event-stream`` and reads one event per SSE
``data:``; over a WebSocket (AgentCore) the ``RunAgentInput`` is the first frame and each event
is one frame. One request is one run: ``RUN_STARTED`` … ``RUN_FINISHED`` or ``RUN_ERROR``. Every
event may carry ``timestamp``, ``rawEvent`` and ``metadata`` (ignored here).

Mapping (translator: ``translators/dialects/ag_ui/``), decisions and reasons:

=====================================  ===========================================================
upstream                               UI chunks
=====================================  ===========================================================
``RUN_STARTED``                        ``start`` (``messageMetadata {threadId, runId}``),
                                       ``start-step``
``TEXT_MESSAGE_START/CONTENT/END``     a text part per ``messageId``, opened by its first
                                       content (an agent may announce a message and send nothing:
                                       no empty part), with ``providerMetadata {agUi:
                                       {messageId}}``; several messages may interleave
``TEXT_MESSAGE_CHUNK``                 the same, the message implied by ``messageId`` (or the
                                       previous chunk's); it ends when another kind of event comes
``REASONING_*``, ``REASONING_MESSAGE_  a reasoning part per ``messageId`` (``providerMetadata
CHUNK``, legacy ``THINKING_*``         {agUi: {messageId}}``); ``REASONING_ENCRYPTED_VALUE`` rides
                                       in it too (``encryptedValue``); 0.x
                                       ``THINKING_TEXT_MESSAGE_*`` (no id) are one reasoning part
                                       per ``THINKING_START``
``TOOL_CALL_START/ARGS/END``,          ``tool-input-start`` / ``-delta`` / ``-available`` with
``TOOL_CALL_CHUNK``                    ``providerMetadata {agUi: {parentMessageId}}`` when the
                                       call names its message (kept as the part's
                                       ``callProviderMetadata``), or ``tool-input-error`` when the
                                       arguments are not JSON (the raw text is the chunk's
                                       ``input``: ai 7's part ``input``, ai 5/6's ``rawInput``).
                                       A tool the request declared (``tools``: the frontend's)
                                       is the app's to run: it ends at ``input-available`` and
                                       the finish reason is ``tool-calls``. Any other tool is the
                                       agent's own: ``providerExecuted``
``TOOL_CALL_RESULT``                   ``tool-output-available`` (``content`` parsed when it is a
                                       JSON object or array), ``tool-output-error`` with
                                       ``error`` when it has one, or with the content when the
                                       call's arguments were not JSON (what the agent told the
                                       model: the part ends ``output-error``). Its ``messageId``
                                       is kept for the answer's ``toolMessageIds``
content after a tool result            the model's next response: the open parts end,
                                       ``finish-step``, ``start-step``, then the text, reasoning
                                       or call (AG-UI has no step events, and an agent runs the
                                       tools of a response before the model answers them; one
                                       step per model response, as the AI SDK writes a loop)
``STATE_SNAPSHOT`` / ``STATE_DELTA``   the state is kept (RFC 6902 patches applied with
                                       ``jsonpatch``) and sent whole as ``data-state`` with
                                       ``id: "state"``: the client replaces that part in place,
                                       so the message holds the latest state once. A patch that
                                       does not apply is a malformed event
``ACTIVITY_SNAPSHOT`` / ``_DELTA``     ``data-activity`` by ``messageId`` (``{activityType,
                                       content}``), patched the same way, replaced in place
``STEP_STARTED`` / ``STEP_FINISHED``   ``data-step`` by step name (``{name, status}``), in place
``SUBAGENT_STARTED/FINISHED/ERROR``    ``data-subagent`` by ``subagentRunId`` (what every event
                                       said, merged), in place; a sub-agent's text (content with
                                       ``subagentRunId``) is a reasoning part with
                                       ``providerMetadata {agUi: {subagentRunId}}``, not answer
``MESSAGES_SNAPSHOT``, ``CUSTOM``,     transient ``data-messages-snapshot`` / ``data-custom``
``RAW``                                (``{name, value}``) / ``data-raw``: shown while
                                       streaming, never stored as message content (a messages
                                       snapshot re-rendered as text would duplicate the answer).
                                       A snapshot's ``tool`` messages name this run's results as
                                       the agent keeps them (LangGraph's results carry the call
                                       id, its checkpoint another): ``toolMessageIds``
``RUN_FINISHED``                       open parts end, ``finish-step``, ``finish``: ``stop``, or
                                       ``tool-calls`` when calls wait for the app
                                       (``pendingToolCallIds`` or a frontend tool), ``other`` for
                                       ``cancelled``. AG-UI has no finish reason: a run whose
                                       model was cut at its token limit ends ``stop``.
                                       ``messageMetadata {threadId, runId, outcome, result?,
                                       usage?, toolMessageIds?}``: ``toolMessageIds`` maps each
                                       result's call id to the agent's id of its message (in
                                       the message's metadata, since ai 5 keeps no metadata of
                                       a tool result and the snapshot comes last).
                                       ``interrupt``: each interrupt on a tool call of the run
                                       is a tool approval
                                       (``tool-approval-request``, ``approvalId`` = the interrupt
                                       id, ``reason`` = its message or reason; ai 5: the question
                                       form); any other is a question (client-side ``ask_user``
                                       call, ``toolCallId`` = the interrupt id, input
                                       ``{question, reason, responseSchema?, expiresAt?,
                                       metadata?}``); finish ``tool-calls``
                                       (``protocol_specs/human_in_the_loop.py``)
``RUN_ERROR``                          ``error`` with the agent's message (code prefixed)
other event types                      the unknown-event policy (``data-<type>``)
(the app's Stop)                       AG-UI has no cancel message: the gateway ends its request
                                       to the agent, and the run stops where the agent's server
                                       ends it when its client goes away — pydantic-ai's
                                       ``AGUIAdapter`` does; the endpoints of ``ag-ui-langgraph``
                                       (0.0.47) and ``ag-ui-adk`` (0.11) run it to its end
=====================================  ===========================================================

Requests (``request.py`` of the dialect): AG-UI agents are mostly stateless (the client sends
the thread each run), so the whole ``UIMessage`` history goes in ``messages`` by default (the
gateway's ``history = "latest"`` sends only the newest user message). User text and files (image
/ audio / video / document parts with a ``data`` source for data URLs or a ``url`` source); each
step of an assistant message (one model response) as its ``reasoning`` messages, one
``assistant`` message (its text, ``toolCalls``) and a ``tool`` message per answered call, in that
order, each under the id the agent gave it when the message kept one (``messageId``,
``parentMessageId``, ``toolMessageIds`` above), so an agent that keeps the thread itself
(LangGraph's checkpointer, ADK's sessions) recognises what it has. A failed or denied call's
text is its ``content`` as well as its ``error`` (agents give the model the content and read
``error`` as the failure); a call whose input never was JSON goes with ``arguments`` ``{}`` (as
the AI SDK sends an invalid call to a model), its error as its result.

A continuation (the app answered interrupts) is a new run whose ``resume`` holds the answers, with
the history as usual (``history = "latest"``: the newest user message); the ``ask_user`` parts that
stood for interrupts are left out of ``messages``.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

__all__ = [
    "LEGACY_THINKING",
    "METADATA_KEY",
    "tool_output",
]

#: The provider key under which the dialect keeps what the agent said of a part (its ids) in
#: the part's ``providerMetadata``: ``{"agUi": {"messageId": …}}``.
METADATA_KEY: Final = "agUi"

#: 0.x event names that 1.0 renamed to ``REASONING_*`` (``@ag-ui/client`` 1.0 still rewrites them
#: with a warning); each maps to the 1.0 handler.
LEGACY_THINKING: Final[dict[str, str]] = {
    "THINKING_START": "REASONING_START",
    "THINKING_END": "REASONING_END",
    "THINKING_TEXT_MESSAGE_START": "REASONING_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END": "REASONING_MESSAGE_END",
}


def tool_output(content: Any) -> Any:
    """A ``TOOL_CALL_RESULT``'s content as the tool part's output: JSON objects and arrays that
    arrive as text are parsed, anything else is kept as it came."""
    if isinstance(content, str) and content[:1] in ("{", "["):
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            return content
    return content
