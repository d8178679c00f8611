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
                                       no empty part); several messages may interleave
``TEXT_MESSAGE_CHUNK``                 the same, the message implied by ``messageId`` (or the
                                       previous chunk's); it ends when another kind of event comes
``REASONING_*``, ``REASONING_MESSAGE_  a reasoning part per ``messageId``; ``REASONING_ENCRYPTED_
CHUNK``, legacy ``THINKING_*``         VALUE`` rides in the part's ``providerMetadata {agUi:
                                       {encryptedValue}}``; 0.x ``THINKING_TEXT_MESSAGE_*`` (no
                                       id) are one reasoning part per ``THINKING_START``
``TOOL_CALL_START/ARGS/END``,          ``tool-input-start`` / ``-delta`` / ``-available`` (or
``TOOL_CALL_CHUNK``                    ``tool-input-error`` when the arguments are not JSON).
                                       A tool the request declared (``tools``: the frontend's)
                                       is the app's to run: it ends at ``input-available`` and
                                       the finish reason is ``tool-calls``. Any other tool is the
                                       agent's own: ``providerExecuted``
``TOOL_CALL_RESULT``                   ``tool-output-available`` (``content`` parsed when it is a
                                       JSON object or array), ``tool-output-error`` with
                                       ``error`` when it has one
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
                                       snapshot re-rendered as text would duplicate the answer)
``RUN_FINISHED``                       open parts end, ``finish-step``, ``finish``: ``stop``, or
                                       ``tool-calls`` when calls wait for the app
                                       (``pendingToolCallIds`` or a frontend tool), ``other`` for
                                       ``cancelled``; ``messageMetadata {threadId, runId,
                                       outcome, result?, usage?}``. ``interrupt``: each interrupt
                                       on a tool call of the run is a tool approval
                                       (``tool-approval-request``, ``approvalId`` = the interrupt
                                       id, ``reason`` = its message or reason; ai 5: the question
                                       form); any other is a question (client-side ``ask_user``
                                       call, ``toolCallId`` = the interrupt id, input
                                       ``{question, reason, responseSchema?, expiresAt?,
                                       metadata?}``); finish ``tool-calls``
                                       (``protocol_specs/human_in_the_loop.py``)
``RUN_ERROR``                          ``error`` with the agent's message (code prefixed)
other event types                      the unknown-event policy (``data-<type>``)
=====================================  ===========================================================

Requests (``request.py`` of the dialect): AG-UI agents are mostly stateless (the client sends
the thread each run), so the whole ``UIMessage`` history goes in ``messages`` by default (the
gateway's ``history = "latest"`` sends only the newest user message, for agents that keep the
thread themselves). User text and files (image / audio / video / document parts with a ``data``
source for data URLs or a ``url`` source), assistant text with ``toolCalls``, a ``tool`` message
per answered call (errors in ``error``), reasoning as ``reasoning`` messages.

A continuation (the app answered interrupts) is a new run whose ``resume`` holds the answers, with
the history as usual (``history = "latest"``: the newest user message); the ``ask_user`` parts that
stood for interrupts are left out of ``messages``.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

__all__ = [
    "LEGACY_THINKING",
    "tool_output",
]

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
