"""The ``ag-ui`` upstream contract: settings, and what a turn sends upstream."""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from chunkbridge.kit import (
    HttpRequest,
    RequestRejected,
    TurnInput,
    apply_overrides,
    is_answered,
    steps_of,
)
from chunkbridge.protocol_specs import ag_ui as spec
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL

_PROVIDER = spec.METADATA_KEY


class AgUiSettings(BaseModel):
    """Settings of the ``ag-ui`` dialect (``[ag-ui]`` in the TOML file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field("", description="path of the agent's endpoint under the upstream URL (HTTP)")
    thread_id: Literal["session", "chat"] = Field(
        "session", description="what the run's threadId is: the session id or the chat id"
    )
    tools: dict[str, dict[str, Any]] = Field(
        {},
        description="frontend tools by name: {description, input_schema}; the agent may call "
        "them and the app runs them",
    )
    body_overrides: list[str] = Field(
        [],
        description="RunAgentInput fields the client's request body may set: state, context, "
        "forwardedProps, tools",
    )


def run_input(turn: TurnInput) -> dict[str, Any]:
    """The ``RunAgentInput`` of one turn."""
    settings: AgUiSettings = turn.settings or AgUiSettings()
    resumed = frozenset(a.tool_call_id for a in turn.approval_answers)
    messages = messages_from_ui(
        turn.request.messages, latest_only=turn.history == "latest", resumed=resumed
    )
    if not any(m["role"] == "user" for m in messages):
        raise RequestRejected("The request has no user message to send.")
    tools = [
        {
            "name": name,
            "description": definition.get("description") or name,
            "parameters": definition.get("input_schema") or {"type": "object"},
        }
        for name, definition in settings.tools.items()
    ]
    body: dict[str, Any] = {
        "threadId": turn.session_id if settings.thread_id == "session" else turn.chat_id,
        "runId": turn.run_id,
        "state": {},
        "messages": messages,
        "tools": tools,
        "context": [],
        "forwardedProps": {},
    }
    questions = [
        (call.tool_call_id, call.output, call.is_error)
        for call in turn.answered_calls()
        if call.tool_name == QUESTION_TOOL
    ]
    approvals = [(a.approval_id, a.approved, a.reason) for a in turn.approval_answers]
    if questions or approvals:
        body["resume"] = resume_entries(questions, approvals)
    return apply_overrides(body, turn, settings.body_overrides)


def http_request(turn: TurnInput) -> HttpRequest:
    settings: AgUiSettings = turn.settings or AgUiSettings()
    return HttpRequest(path=settings.path, body=run_input(turn))


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


def _agent_id(metadata: Any, key: str = "messageId") -> str | None:
    """The id the agent gave what a part holds, kept in its provider metadata
    (``{"agUi": {key: id}}``), if any."""
    ours = metadata.get(_PROVIDER) if isinstance(metadata, dict) else None
    value = ours.get(key) if isinstance(ours, dict) else None
    return value if isinstance(value, str) and value else None


def _arguments(part: Any) -> str:
    """A call's input as AG-UI ``arguments`` (the JSON text of an object). Input that never was
    JSON — a ``tool-input-error``'s raw text, ai 7's ``input`` and ai 5/6's ``rawInput`` — goes as
    ``{}``, as the AI SDK sends an invalid call to a model: the model hears what went wrong in
    the call's result, never its text as a string input."""
    value = part.input
    return "{}" if value is None or isinstance(value, str) else orjson.dumps(value).decode()


def _call(part: Any) -> dict[str, Any]:
    function = {"name": part.tool_name, "arguments": _arguments(part)}
    return {"id": part.toolCallId, "type": "function", "function": function}


def _result(part: Any, result_ids: dict[str, Any]) -> dict[str, Any]:
    """The ``tool`` message of an answered call, under the agent's id for it when the answer
    kept one. An error (or a denial) is its content too: agents give the model the content
    and read ``error`` as the failure flag."""
    message_id = result_ids.get(part.toolCallId)
    if not (isinstance(message_id, str) and message_id):
        message_id = f"{part.toolCallId}-result"
    result: dict[str, Any] = {"id": message_id, "role": "tool", "toolCallId": part.toolCallId}
    if part.state == "output-available":
        output = part.output
        result["content"] = output if isinstance(output, str) else orjson.dumps(output).decode()
    else:
        result["content"] = result["error"] = part.errorText or "The user denied this tool call."
    return result


def _assistant(
    message: Any, step_index: int, parts: list[Any], resumed: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """One step (one model response) → its AG-UI messages: reasoning, the assistant message
    (text and calls), a ``tool`` message per answered call; each under the id the agent gave
    it when the answer kept it, so that an agent holding the thread recognises them."""
    base_id = f"{message.id or 'assistant'}" + (f"-{step_index}" if step_index else "")
    metadata = message.metadata if isinstance(message.metadata, dict) else {}
    result_ids = metadata.get("toolMessageIds")
    result_ids = result_ids if isinstance(result_ids, dict) else {}
    assistant_id: str | None = None
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        if kind == "text" and part.text:
            texts.append(part.text)
            assistant_id = assistant_id or _agent_id(part.providerMetadata)
        elif kind == "reasoning" and part.text:
            reasoning_id = _agent_id(part.providerMetadata) or f"{base_id}-reasoning-{len(out)}"
            out.append({"id": reasoning_id, "role": "reasoning", "content": part.text})
        elif hasattr(part, "toolCallId") and (part.toolCallId in resumed or is_answered(part)):
            calls.append(_call(part))
            meta = getattr(part, "callProviderMetadata", None)
            assistant_id = assistant_id or _agent_id(meta, "parentMessageId")
            # the call an interrupt stopped at: the run resumes it (``resume``), no result yet
            if part.toolCallId not in resumed:
                results.append(_result(part, result_ids))
    if texts or calls:
        assistant: dict[str, Any] = {"id": assistant_id or base_id, "role": "assistant"}
        if texts:
            assistant["content"] = "".join(texts)
        if calls:
            assistant["toolCalls"] = calls
        out.append(assistant)
    return out + results


def messages_from_ui(
    messages: list[Any], latest_only: bool, resumed: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """``UIMessage`` history → AG-UI ``messages`` (see the module docstring); ``resumed``: the
    tool calls whose approval this run resumes (sent as calls without a result)."""
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
            for index, step in enumerate(steps_of(message)):
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
