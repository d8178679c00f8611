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
from typing import TYPE_CHECKING, Any, Literal

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
    """Each step of an assistant message: the model's response (text, thinking, tool calls, and
    the calls the provider ran with their returns: pydantic-ai keeps those in the response and
    sends them back to that provider), then the returns of its answered calls."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
    from pydantic_ai.messages import TextPart as PaiText

    out: list[ModelMessage] = []
    for step in steps_of(message):
        response: list[Any] = []
        returns: list[ModelRequestPart] = []
        for part in step:
            if isinstance(part, TextPart) and part.text:
                response.append(PaiText(content=part.text))
            elif isinstance(part, ReasoningPart):
                response.append(_thinking(part))
            elif not isinstance(part, ToolPart) or part.state == "input-streaming":
                continue
            elif part.providerExecuted:
                response += _native(part, pending)
            else:
                name, call_id = part.tool_name, part.toolCallId
                args = _arguments(part.input)
                response.append(ToolCallPart(tool_name=name, args=args, tool_call_id=call_id))
                # a pending call is resumed by the run's deferred_tool_results
                answer = None if call_id in pending else _answer(part)
                if answer is not None:
                    content, outcome = answer
                    returns.append(ToolReturnPart(name, content, call_id, outcome=outcome))
        if response:
            out.append(ModelResponse(parts=response))
        if returns:
            out.append(ModelRequest(parts=returns))
    return out


def _answer(part: ToolPart) -> tuple[Any, Literal["success", "failed", "denied"]] | None:
    """What an answered call returned, as the model is told it: (content, outcome)."""
    if part.state == "output-available":
        return part.output, "success"
    if part.state == "output-error":
        return part.errorText or "The tool failed.", "failed"
    if part.state == "output-denied":
        reason = part.approval.reason if part.approval is not None else None
        return reason or "The user denied this tool call.", "denied"
    return None


def _thinking(part: ReasoningPart) -> Any:
    from pydantic_ai.messages import ThinkingPart

    fields = _fields(part.providerMetadata)
    return ThinkingPart(
        content=part.text,
        signature=_text(fields.get("signature")),
        id=_text(fields.get("id")),
        provider_name=_text(fields.get("providerName")),
    )


def _native(part: ToolPart, pending: set[str]) -> list[Any]:
    """A call the model provider ran, as pydantic-ai kept it in the response: the call, then its
    return once the part has one. Their fields come from the part's metadata (ours, or the
    adapter's). The return has its call's but where ``resultProviderMetadata`` says otherwise
    (ai 6 and 7; ai 5 keeps no metadata of an output)."""
    from pydantic_ai.messages import NativeToolCallPart, NativeToolReturnPart

    name, call_id = part.tool_name, part.toolCallId
    call_meta = getattr(part, "callProviderMetadata", None)
    call = _fields(call_meta, "call_meta")
    out: list[Any] = [
        NativeToolCallPart(
            tool_name=name,
            args=_arguments(part.input),
            tool_call_id=call_id,
            id=_text(call.get("id")),
            provider_name=_text(call.get("providerName")),
            provider_details=_details(call.get("providerDetails")),
            tool_kind=_kind(call.get("toolKind")),
        )
    ]
    answer = None if call_id in pending else _answer(part)
    if answer is None:
        return out
    own = _ours(getattr(part, "resultProviderMetadata", None))
    if own is not None or _ours(call_meta) is not None:
        returned = {**call, **(own or {})}
    else:  # the adapter's: what it stored of the return, else (its stream) the call's
        returned = _adapters(call_meta, "return_meta", top=True)
    content, outcome = answer
    out.append(
        NativeToolReturnPart(
            tool_name=name,
            content=content,
            tool_call_id=call_id,
            outcome=outcome,
            provider_name=_text(returned.get("providerName")),
            provider_details=_details(returned.get("providerDetails")),
            tool_kind=_kind(returned.get("toolKind")),
        )
    )
    return out


# -- the parts' own fields, from providerMetadata ------------------------------------------------


def _fields(metadata: Any, nested: str = "") -> dict[str, Any]:
    """A part's pydantic-ai fields by our names: ours (``providerMetadata.pydanticAi``), else
    the adapter's (``pydantic_ai``, snake_case), so that a chat stored by an app on pydantic-ai's
    ``VercelAIAdapter`` keeps its signatures and native calls here."""
    ours = _ours(metadata)
    return ours if ours is not None else _adapters(metadata, nested, top=True)


def _ours(metadata: Any) -> dict[str, Any] | None:
    ours = metadata.get(spec.PROVIDER) if isinstance(metadata, dict) else None
    return ours if isinstance(ours, dict) else None


def _adapters(metadata: Any, nested: str, *, top: bool) -> dict[str, Any]:
    """The adapter's fields, by our names. Its stored form (``dump_messages``) keeps a native
    call's and its return's apart, under ``call_meta`` and ``return_meta`` (``nested``); its
    stream puts the call's at the top (``top``: read there when ``nested`` lacks one)."""
    theirs = metadata.get(spec.ADAPTER_PROVIDER) if isinstance(metadata, dict) else None
    if not isinstance(theirs, dict):
        return {}
    inner = theirs.get(nested) if nested else None
    inner = inner if isinstance(inner, dict) else {}
    out = {}
    for ours, key in spec.ADAPTER_KEYS.items():
        value = inner.get(key)
        out[ours] = theirs.get(key) if value is None and top else value
    return out


def _arguments(value: Any) -> dict[str, Any] | str | None:
    """A call's input as pydantic-ai takes it: an object, or the JSON text of one (a model
    that sent arguments that are not JSON); anything else a client sent (a list, a number)
    would fail every later run of the chat when the model reads it, so it goes as no
    arguments."""
    return value if isinstance(value, dict | str) or value is None else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _details(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _kind(value: Any) -> str | None:
    """A typed part's kind, if pydantic-ai defines it (the client sent it: unchecked, a part
    would claim a shape its data may not have)."""
    from pydantic_ai.messages import parse_tool_kind

    return parse_tool_kind(value) if isinstance(value, str) else None
