"""The body ``useChat``'s ``DefaultChatTransport`` POSTs (ai 5, 6 and 7), as pydantic models.

Spec §5.1–§5.4: ``{...extra body keys, id, messages, trigger, messageId?}``. ``messages`` are
``UIMessage`` objects sent back exactly as the client built them, with every part kind of every
major (tool parts in every state, ``step-start``, data parts, and ai 7's ``custom``,
``reasoning-file`` and ``steering-message``). An app can replace the body with
``prepareSendMessagesRequest``, so the models are deliberately tolerant: unknown keys are kept
(``extra="allow"``) and an unknown part type parses as :class:`UnknownPart` instead of failing.
What *is* required is what the gateway cannot work without: message ``role`` and ``parts``.

This is the request boundary, so pydantic is used here (and for JSON Schema export:
``ChatRequest.model_json_schema()``); nothing on the streaming hot path touches these models.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, StrictBool, Tag

__all__ = [
    "ChatRequest",
    "UIMessage",
    "UserPrompt",
    "TextPart",
    "FilePart",
    "ToolPart",
    "DynamicToolPart",
    "UnknownPart",
    "TOOL_STATES",
    "ANSWERED_STATES",
]

#: Tool part states across majors (``approval-*`` and ``output-denied``: 6 and 7).
ToolState = Literal[
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied",
]
TOOL_STATES: tuple[str, ...] = ToolState.__args__  # type: ignore[attr-defined]
#: The states of a call that has its answer (what a request sends back to the model with it).
ANSWERED_STATES: frozenset[str] = frozenset({"output-available", "output-error", "output-denied"})

Trigger = Literal["submit-message", "regenerate-message"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow")


class TextPart(_Part):
    type: Literal["text"]
    text: str
    state: Literal["streaming", "done"] | None = None
    providerMetadata: dict[str, Any] | None = None


class ReasoningPart(_Part):
    type: Literal["reasoning"]
    text: str
    state: Literal["streaming", "done"] | None = None
    providerMetadata: dict[str, Any] | None = None


class FilePart(_Part):
    type: Literal["file"]
    mediaType: str
    url: str
    filename: str | None = None


class ReasoningFilePart(_Part):
    """ai 7."""

    type: Literal["reasoning-file"]
    mediaType: str
    url: str


class SourceUrlPart(_Part):
    type: Literal["source-url"]
    sourceId: str
    url: str
    title: str | None = None


class SourceDocumentPart(_Part):
    type: Literal["source-document"]
    sourceId: str
    mediaType: str
    title: str
    filename: str | None = None


class StepStartPart(_Part):
    type: Literal["step-start"]


class ToolApproval(_Part):
    id: str
    #: Strict: ``"true"`` or ``1`` must not pass for an approval (untrusted input).
    approved: StrictBool | None = None
    reason: str | None = None
    #: What the server signed the request with (ai 6/7 keep it on the part).
    signature: str | None = None


class ToolPart(_Part):
    """``tool-<name>``: a tool from the app's static tool set."""

    type: str  # "tool-<name>" (the discriminator routes here by that prefix)
    toolCallId: str
    state: ToolState
    input: Any = None
    output: Any = None
    errorText: str | None = None
    rawInput: Any = None
    providerExecuted: bool | None = None
    preliminary: bool | None = None
    approval: ToolApproval | None = None
    title: str | None = None

    @property
    def tool_name(self) -> str:
        return self.type.removeprefix("tool-")


class DynamicToolPart(ToolPart):
    type: Literal["dynamic-tool"]
    toolName: str

    @property
    def tool_name(self) -> str:
        return self.toolName


class DataPart(_Part):
    type: str  # "data-<name>" (routed by prefix)
    id: str | None = None
    data: Any = None


class CustomPart(_Part):
    """ai 7."""

    type: Literal["custom"]
    kind: str


class SteeringMessagePart(_Part):
    """ai 7 (experimental)."""

    type: Literal["steering-message"]
    id: str
    parts: list[dict[str, Any]]


class UnknownPart(_Part):
    """A part type no major we know sends: kept as is, never a reason to reject the request."""

    type: str


_FIXED_TAGS = {
    "text",
    "reasoning",
    "file",
    "reasoning-file",
    "source-url",
    "source-document",
    "step-start",
    "dynamic-tool",
    "custom",
    "steering-message",
}


def _part_tag(value: Any) -> str:
    part_type = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if not isinstance(part_type, str):
        return "unknown"
    if part_type in _FIXED_TAGS:
        return part_type
    if part_type.startswith("tool-"):
        return "tool"
    if part_type.startswith("data-"):
        return "data"
    return "unknown"


Part = Annotated[
    Annotated[TextPart, Tag("text")]
    | Annotated[ReasoningPart, Tag("reasoning")]
    | Annotated[FilePart, Tag("file")]
    | Annotated[ReasoningFilePart, Tag("reasoning-file")]
    | Annotated[SourceUrlPart, Tag("source-url")]
    | Annotated[SourceDocumentPart, Tag("source-document")]
    | Annotated[StepStartPart, Tag("step-start")]
    | Annotated[ToolPart, Tag("tool")]
    | Annotated[DynamicToolPart, Tag("dynamic-tool")]
    | Annotated[DataPart, Tag("data")]
    | Annotated[CustomPart, Tag("custom")]
    | Annotated[SteeringMessagePart, Tag("steering-message")]
    | Annotated[UnknownPart, Tag("unknown")],
    Discriminator(_part_tag),
]


class UIMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = ""
    role: Literal["system", "user", "assistant"]
    metadata: Any = None
    parts: list[Part]

    def text(self) -> str:
        """The message's text parts, joined by blank lines."""
        return "\n\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    def files(self) -> list[FilePart]:
        return [p for p in self.parts if isinstance(p, FilePart)]


class UserPrompt(BaseModel):
    """What an upstream that keeps its own history needs: the newest user turn."""

    message_id: str
    text: str
    files: list[FilePart]


class ChatRequest(BaseModel):
    """The POST body. Extra keys (the transport's and the call's ``body`` option) are kept."""

    model_config = ConfigDict(extra="allow")

    id: str = ""
    messages: list[UIMessage]
    trigger: Trigger = "submit-message"
    messageId: str | None = None

    @property
    def extra_body(self) -> dict[str, Any]:
        """Keys beyond the four core ones, as the app sent them."""
        return dict(self.model_extra or {})

    def latest_user_message(self) -> UserPrompt | None:
        """The newest user message (text + files), or ``None`` when there is none."""
        for message in reversed(self.messages):
            if message.role == "user":
                return UserPrompt(message_id=message.id, text=message.text(), files=message.files())
        return None

    def continued_message(self) -> UIMessage | None:
        """The assistant message this response continues (spec §5.4), or ``None`` for a new one.

        ``submit-message`` with ``messageId`` continues that message if it is an assistant
        message; otherwise the last message, if it is an assistant message. A
        ``regenerate-message`` always starts a new message (ai 6/7 never continue there; ai 5's
        request no longer holds the regenerated message).
        """
        if self.trigger == "regenerate-message" or not self.messages:
            return None
        if self.messageId is not None:
            for message in self.messages:
                if message.id == self.messageId:
                    return message if message.role == "assistant" else None
        last = self.messages[-1]
        return last if last.role == "assistant" else None

    def response_message_id(self) -> str | None:
        """The id ``start.messageId`` must carry: the continued message's id, else ``None``
        (the caller then generates a fresh one or omits it)."""
        message = self.continued_message()
        return message.id if message is not None and message.id else None

    @property
    def is_continuation(self) -> bool:
        """The request continues an assistant message (:meth:`continued_message`): an answer
        to a question, an approval or an app tool's output, not a new turn."""
        return self.continued_message() is not None
