"""The request side of ``pydantic-ai``: the chat's ``UIMessage`` history as the agent's own
message history, for a host app to run its agent with.

pydantic-ai keeps no conversation between runs: each run gets the history as
``message_history`` (a list of ``ModelMessage``), and a run that stopped for deferred tool
calls (approvals, calls the app runs) is resumed with ``deferred_tool_results``. Both come from
the validated chat request (:func:`agent_input`). pydantic-ai is imported here, on use: the
dialect itself needs only its events.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkbridge.kit import (
    ApprovalAnswer,
    TurnInput,
    parse_data_url,
    steps_of,
)
from chunkbridge.protocol_specs import pydantic_ai as spec
from chunkbridge.protocol_specs.chat_request import (
    ChatRequest,
    FilePart,
    ReasoningPart,
    TextPart,
    ToolPart,
    UIMessage,
)

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequestPart, UserContent
    from pydantic_ai.tools import DeferredToolResults

__all__ = ["AgentInput", "agent_input"]

_URL_KINDS = (("image/", "ImageUrl"), ("audio/", "AudioUrl"), ("video/", "VideoUrl"))


@dataclass(frozen=True, slots=True)
class AgentInput:
    """What ``agent.run_stream_events(...)`` takes from the chat: pass both as is."""

    message_history: list[ModelMessage]
    #: The app's decisions on the approvals the last run stopped for (``None``: a new prompt).
    deferred_tool_results: DeferredToolResults | None


def agent_input(request: ChatRequest) -> AgentInput:
    """The chat request (``useChat``'s body, validated) as pydantic-ai's run input: the
    ``UIMessage`` history as ``ModelMessage`` objects (user text and files, system text, each
    assistant step as the model's response followed by its tools' returns), and the approvals
    the app decided in the message the request continues as ``DeferredToolResults``.
    :class:`~chunkbridge.kit.RequestRejected` (a 400's text) when an approval answer is
    malformed or a file's data URL does not decode."""
    from pydantic_ai.messages import ModelRequest, SystemPromptPart
    from pydantic_ai.tools import DeferredToolResults, ToolDenied

    approvals = TurnInput(request, "", "").approval_answers
    pending = {a.tool_call_id for a in approvals}
    history: list[ModelMessage] = []
    for message in request.messages:
        if message.role == "system":
            text = message.text()
            if text:
                history.append(ModelRequest(parts=[SystemPromptPart(content=text)]))
        elif message.role == "user":
            history.append(ModelRequest(parts=[_user_prompt(message)]))
        else:
            history += _assistant(message, pending)
    if not approvals:
        return AgentInput(history, None)
    decided: dict[str, Any] = {a.tool_call_id: _decision(a, ToolDenied) for a in approvals}
    return AgentInput(history, DeferredToolResults(approvals=decided))


def _decision(answer: ApprovalAnswer, denied: Any) -> Any:
    if answer.approved:
        return True
    return denied(answer.reason) if answer.reason else denied()


def _user_prompt(message: UIMessage) -> Any:
    from pydantic_ai.messages import BinaryContent, UserPromptPart

    content: list[UserContent] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            content.append(part.text)
        elif isinstance(part, FilePart):
            data = parse_data_url(part.url)
            if data is not None:
                raw = base64.b64decode(data.base64)
                content.append(BinaryContent(data=raw, media_type=data.media_type))
            else:
                content.append(_file_url(part.url, part.mediaType))
    if all(isinstance(c, str) for c in content):
        return UserPromptPart(content="\n\n".join(str(c) for c in content))
    return UserPromptPart(content=content)


def _file_url(url: str, media_type: str) -> Any:
    from pydantic_ai import messages

    name = next((n for prefix, n in _URL_KINDS if media_type.startswith(prefix)), "DocumentUrl")
    return getattr(messages, name)(url=url, media_type=media_type)


def _assistant(message: UIMessage, pending: set[str]) -> list[ModelMessage]:
    """Each step of an assistant message: the model's response (text, thinking, tool calls),
    then the returns of its answered calls. Calls the provider ran (``providerExecuted``) are
    left out: the provider keeps them."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.messages import TextPart as PaiText

    out: list[ModelMessage] = []
    for step in steps_of(message):
        response: list[Any] = []
        returns: list[ModelRequestPart] = []
        for part in step:
            if isinstance(part, TextPart) and part.text:
                response.append(PaiText(content=part.text))
            elif isinstance(part, ReasoningPart):
                meta = (part.providerMetadata or {}).get(spec.PROVIDER) or {}
                response.append(
                    ThinkingPart(
                        content=part.text,
                        signature=meta.get("signature"),
                        id=meta.get("id"),
                        provider_name=meta.get("providerName"),
                    )
                )
            elif isinstance(part, ToolPart) and not part.providerExecuted:
                if part.state == "input-streaming":
                    continue
                name, call_id = part.tool_name, part.toolCallId
                response.append(ToolCallPart(tool_name=name, args=part.input, tool_call_id=call_id))
                if call_id in pending:
                    continue  # resumed by the run's deferred_tool_results
                if part.state == "output-available":
                    returns.append(ToolReturnPart(name, part.output, call_id))
                elif part.state == "output-error":
                    text = part.errorText or "The tool failed."
                    returns.append(ToolReturnPart(name, text, call_id, outcome="failed"))
                elif part.state == "output-denied":
                    reason = part.approval.reason if part.approval is not None else None
                    text = reason or "The user denied this tool call."
                    returns.append(ToolReturnPart(name, text, call_id, outcome="denied"))
        if response:
            out.append(ModelResponse(parts=response))
        if returns:
            out.append(ModelRequest(parts=returns))
    return out
