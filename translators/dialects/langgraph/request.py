"""The request side of ``langgraph``: what a host app passes to ``graph.astream`` for a chat
request — the app's answers to the graph's questions, or the conversation.

A graph that stopped at ``interrupt()`` goes on with ``Command(resume=…)`` on the same thread;
otherwise the graph gets new messages: the newest user message (a graph with a checkpointer keeps
the thread) or the whole history (a stateless graph), as LangChain messages. LangGraph and
LangChain are imported here, on use: the dialect itself needs only its events.
"""

from __future__ import annotations

from typing import Any, Literal

from chunkbridge.kit import RequestRejected, TurnInput, parse_data_url, steps_of
from chunkbridge.protocol_specs.chat_request import (
    ChatRequest,
    FilePart,
    ReasoningPart,
    TextPart,
    ToolPart,
    UIMessage,
)
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL

__all__ = ["graph_input"]

_KINDS = (("image/", "image"), ("audio/", "audio"), ("video/", "video"))


def graph_input(request: ChatRequest, *, history: Literal["latest", "full"] = "latest") -> Any:
    """The input of ``graph.astream`` for this chat request: ``Command(resume={interrupt id:
    answer})`` when it answers the graph's questions (a declined question resumes with
    ``{"declined": reason}``), else ``{"messages": [...]}`` with the newest user message
    (``history="latest"``) or the whole ``UIMessage`` history (``"full"``).
    :class:`~chunkbridge.kit.RequestRejected` when there is no user message to send."""
    from langgraph.types import Command

    answers = {
        call.tool_call_id: ({"declined": call.output} if call.is_error else call.output)
        for call in TurnInput(request, "", "").answered_calls()
        if call.tool_name == QUESTION_TOOL
    }
    if answers:
        return Command(resume=answers)
    if history == "latest":
        users = [m for m in request.messages if m.role == "user"]
        if not users:
            raise RequestRejected("The request has no user message to send.")
        return {"messages": [_user(users[-1])]}
    return {"messages": [m for message in request.messages for m in _messages(message)]}


def _user(message: UIMessage) -> Any:
    from langchain_core.messages import HumanMessage

    blocks: list[Any] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, FilePart):
            kind = next((k for prefix, k in _KINDS if part.mediaType.startswith(prefix)), "file")
            data = parse_data_url(part.url)
            source = {"base64": data.base64} if data is not None else {"url": part.url}
            blocks.append({"type": kind, **source, "mime_type": part.mediaType})
    if all(b["type"] == "text" for b in blocks):
        return HumanMessage(content="\n\n".join(b["text"] for b in blocks), id=message.id or None)
    return HumanMessage(content=blocks, id=message.id or None)


def _messages(message: UIMessage) -> list[Any]:
    from langchain_core.messages import AIMessage, SystemMessage, ToolMessage

    if message.role == "user":
        return [_user(message)]
    if message.role == "system":
        return [SystemMessage(content=message.text())]
    out: list[Any] = []
    for step in steps_of(message):
        texts: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, Any]] = []
        results: list[Any] = []
        for part in step:
            if isinstance(part, TextPart) and part.text:
                texts.append(part.text)
            elif isinstance(part, ReasoningPart) and part.text:
                reasoning.append(part.text)
            elif isinstance(part, ToolPart) and part.tool_name != QUESTION_TOOL:
                if part.state == "input-streaming" or part.providerExecuted:
                    continue
                args = part.input if isinstance(part.input, dict) else {}
                calls.append({"name": part.tool_name, "args": args, "id": part.toolCallId})
                if part.state == "output-available":
                    results.append(
                        ToolMessage(content=_content(part.output), tool_call_id=part.toolCallId)
                    )
                elif part.state in ("output-error", "output-denied"):
                    text = part.errorText or "The user denied this tool call."
                    results.append(
                        ToolMessage(content=text, tool_call_id=part.toolCallId, status="error")
                    )
        if texts or calls or reasoning:
            extra = {"reasoning_content": "\n\n".join(reasoning)} if reasoning else {}
            out.append(AIMessage(content="".join(texts), tool_calls=calls, additional_kwargs=extra))
        out += results
    return out


def _content(output: Any) -> Any:
    import json

    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
