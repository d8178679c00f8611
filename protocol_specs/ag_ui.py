"""AG-UI 1.0 (dialect ``ag-ui``): the events an agent streams and the ``RunAgentInput`` it takes.

Source: ``@ag-ui/core`` 1.0 / the ``ag-ui-protocol`` 1.0 Python package (``ag_ui.core``), as
emitted by pydantic-ai's ``AGUIAdapter``, LangGraph, CrewAI, Mastra, Agno, AWS AgentCore and
TanStack AI (``shared/specs/ecosystem-notes.md`` §2). Over HTTP the client POSTs a
``RunAgentInput`` (camelCase JSON) with ``Accept: text/event-stream`` and reads one event per SSE
``data:``; over a WebSocket (AgentCore) the ``RunAgentInput`` is the first frame and each event
is one frame. One request is one run: ``RUN_STARTED`` … ``RUN_FINISHED`` or ``RUN_ERROR``. Every
event may carry ``timestamp``, ``rawEvent`` and ``metadata`` (ignored here).

Mapping (translator: ``translators/dialects/ag_ui.py``), decisions and reasons:

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

Requests (:func:`messages_from_ui`): AG-UI agents are mostly stateless (the client sends the
thread each run), so the whole ``UIMessage`` history goes in ``messages`` by default (the
dialect's ``messages = "latest"`` sends only the newest user message, for agents that keep the
thread themselves). User text and files (image / audio / video / document parts with a ``data``
source for data URLs or a ``url`` source), assistant text with ``toolCalls``, a ``tool`` message
per answered call (errors in ``error``), reasoning as ``reasoning`` messages.

A continuation (the app answered interrupts) is a new run whose ``resume`` holds the answers
(:func:`resume_entries`), with the history as usual (``messages = "latest"``: the newest user
message); the ``ask_user`` parts that stood for interrupts are left out of ``messages``.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL

__all__ = ["LEGACY_THINKING", "messages_from_ui", "tool_output"]

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


_MEDIA_KINDS = (("image/", "image"), ("audio/", "audio"), ("video/", "video"))


def _file_part(media_type: str, url: str) -> dict[str, Any]:
    kind = next((k for prefix, k in _MEDIA_KINDS if media_type.startswith(prefix)), "document")
    if url.startswith("data:"):
        header, _, payload = url[5:].partition(",")
        source = {"type": "data", "value": payload, "mimeType": header.split(";")[0] or media_type}
    else:
        source = {"type": "url", "value": url, "mimeType": media_type}
    return {"type": kind, "source": source}


def _user(message: Any) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        kind = getattr(part, "type", None)
        if kind == "text" and part.text:
            parts.append({"type": "text", "text": part.text})
        elif kind == "file":
            parts.append(_file_part(part.mediaType, part.url))
    content: Any = parts
    if all(p["type"] == "text" for p in parts):
        content = "\n\n".join(p["text"] for p in parts)
    return {"id": message.id or "user", "role": "user", "content": content}


def _assistant(
    message: Any, step_index: int, parts: list[Any], resumed: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    base_id = f"{message.id or 'assistant'}" + (f"-{step_index}" if step_index else "")
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        if kind == "text" and part.text:
            texts.append(part.text)
        elif kind == "reasoning" and part.text:
            out.append(
                {"id": f"{base_id}-reasoning-{len(out)}", "role": "reasoning", "content": part.text}
            )
        elif hasattr(part, "toolCallId") and part.toolCallId in resumed:
            # the call an interrupt stopped at: the run resumes it (``resume``), no result yet
            arguments = orjson.dumps(part.input if part.input is not None else {}).decode()
            function = {"name": part.tool_name, "arguments": arguments}
            calls.append({"id": part.toolCallId, "type": "function", "function": function})
        elif hasattr(part, "toolCallId") and part.state in (
            "output-available",
            "output-error",
            "output-denied",
        ):
            arguments = orjson.dumps(part.input if part.input is not None else {}).decode()
            calls.append(
                {
                    "id": part.toolCallId,
                    "type": "function",
                    "function": {"name": part.tool_name, "arguments": arguments},
                }
            )
            result: dict[str, Any] = {
                "id": f"{part.toolCallId}-result",
                "role": "tool",
                "toolCallId": part.toolCallId,
            }
            if part.state == "output-available":
                output = part.output
                result["content"] = (
                    output if isinstance(output, str) else orjson.dumps(output).decode()
                )
            else:
                result["content"] = ""
                result["error"] = part.errorText or "The user denied this tool call."
            results.append(result)
    if texts or calls:
        assistant: dict[str, Any] = {"id": base_id, "role": "assistant"}
        if texts:
            assistant["content"] = "".join(texts)
        if calls:
            assistant["toolCalls"] = calls
        out.append(assistant)
    return out + results


def messages_from_ui(
    messages: list[Any], steps: Any, latest_only: bool, resumed: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """``UIMessage`` history → AG-UI ``messages`` (see the module docstring); ``steps(message)``
    cuts an assistant message at ``step-start``; ``resumed``: the tool calls whose approval this
    run resumes (sent as calls without a result)."""
    if latest_only:
        users = [m for m in messages if m.role == "user"]
        return [_user(users[-1])] if users else []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "user":
            out.append(_user(message))
        elif message.role == "system":
            out.append({"id": message.id or "system", "role": "system", "content": message.text()})
        else:
            # ask_user parts are the gateway's form of the agent's interrupts: answered by
            # ``resume``, never part of the agent's thread.
            parts = [p for p in message.parts if getattr(p, "tool_name", None) != QUESTION_TOOL]
            if len(parts) != len(message.parts):
                message = message.model_copy(update={"parts": parts})
            for index, step in enumerate(steps(message)):
                out.extend(_assistant(message, index, step, resumed))
    return out


def resume_entries(
    questions: list[tuple[str, Any, bool]], approvals: list[tuple[str, bool, str | None]]
) -> list[dict[str, Any]]:
    """``RunAgentInput.resume``: the app's answers to the run's interrupts. A question answered
    → ``resolved`` with the answer as ``payload``; declined (an error output) → ``cancelled``;
    an approval → ``resolved`` with ``{approved, reason?}``."""
    out: list[dict[str, Any]] = []
    for interrupt_id, answer, declined in questions:
        if declined:
            out.append({"interruptId": interrupt_id, "status": "cancelled"})
        else:
            out.append({"interruptId": interrupt_id, "status": "resolved", "payload": answer})
    for interrupt_id, approved, reason in approvals:
        payload: dict[str, Any] = {"approved": approved}
        if reason is not None:
            payload["reason"] = reason
        out.append({"interruptId": interrupt_id, "status": "resolved", "payload": payload})
    return out
