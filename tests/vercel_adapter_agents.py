"""The agents and ``useChat`` bodies of the differential test against pydantic-ai's
``VercelAIAdapter`` (``tests/test_vercel_adapter_differential.py``): the scripted agents of
:mod:`tests.pydantic_ai_agents` (its ``search`` is a tool the model provider runs), and two
more — a model that fails before it says anything, and an echo model whose answer is the
history it was given, so that what each side's request conversion made of the same body shows
in the final message."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import BinaryContent, FileUrl, ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.pydantic_ai_agents import AGENT, DEFERRING, STRUCTURED


async def _fails_at_once(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    raise RuntimeError("no credits left")
    yield ""  # (an async generator)


def _content(content: Any) -> str:
    if isinstance(content, str):
        return repr(content)
    items = []
    for item in content:
        if isinstance(item, BinaryContent):
            items.append(f"binary {item.media_type} {len(item.data)}B")
        elif isinstance(item, FileUrl):
            items.append(f"url {item.media_type} {item.url}")
        else:
            items.append(repr(item))
    return "[" + ", ".join(items) + "]"


def _native(part: Any) -> str:
    """What a native call or return carries back to the provider that ran it."""
    if not part.part_kind.startswith("builtin-"):
        return ""
    item = f" id={part.id}" if part.part_kind == "builtin-tool-call" else ""
    return f" provider={part.provider_name}{item} details={part.provider_details}"


def describe(messages: list[ModelMessage]) -> str:
    """A history as one line per part: what a model is given of it."""
    lines = []
    for message in messages:
        for part in message.parts:
            kind = part.part_kind
            head = f"{message.kind} {kind}"
            if kind == "user-prompt":
                lines.append(f"{head} {_content(part.content)}")
            elif kind in ("tool-call", "builtin-tool-call"):
                args = part.args_as_dict()
                lines.append(f"{head} {part.tool_name} {part.tool_call_id} {args}{_native(part)}")
            elif kind in ("tool-return", "builtin-tool-return"):
                outcome = getattr(part, "outcome", "")
                lines.append(
                    f"{head} {part.tool_name} {part.tool_call_id} {outcome} {part.content!r}"
                    + _native(part)
                )
            elif kind == "thinking":
                lines.append(f"{head} {part.content!r} signature={part.signature}")
            else:
                lines.append(f"{head} {getattr(part, 'content', '')!r}")
    return "\n".join(lines)


async def _echo(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    yield describe(messages)


EARLY_ERROR: Agent[None, str] = Agent(FunctionModel(stream_function=_fails_at_once, model_name="m"))
ECHO: Agent[None, str] = Agent(FunctionModel(stream_function=_echo, model_name="echo"))
#: name → agent, as the test app's routes name them.
AGENTS: dict[str, Agent[None, Any]] = {
    "scripted": AGENT,
    "deferring": DEFERRING,
    "structured": STRUCTURED,
    "early-error": EARLY_ERROR,
    "echo": ECHO,
}


def user(text: str, message_id: str = "u1", files: list[dict[str, Any]] | None = None) -> Any:
    parts = [*(files or []), {"type": "text", "text": text}]
    return {"id": message_id, "role": "user", "parts": parts}


def assistant(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"id": "a1", "role": "assistant", "parts": list(parts)}


def tool(name: str, call_id: str, state: str, call_input: Any, **more: Any) -> dict[str, Any]:
    return {
        "type": f"tool-{name}",
        "toolCallId": call_id,
        "state": state,
        "input": call_input,
        **more,
    }


STEP = {"type": "step-start"}
ASKED_DELETE = [
    STEP,
    {"type": "text", "text": "Deleting needs your approval.", "state": "done"},
]


def decided(approved: bool) -> dict[str, Any]:
    """The message the ai 6/7 chat sends back once the user decided the approval."""
    approval = {"id": "c4", "approved": approved, **({} if approved else {"reason": "not now"})}
    call = tool("delete_file", "c4", "approval-responded", {"path": "/tmp/x"}, approval=approval)
    return assistant(*ASKED_DELETE, call)


def thinking(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """A reasoning part carrying a signature under one side's ``providerMetadata`` namespace."""
    part = {"type": "reasoning", "text": "The user wants the weather.", "state": "done"}
    return {**part, "providerMetadata": metadata} if metadata else part


#: What the chat held before the user's new question (an earlier exchange with tool calls).
EARLIER = assistant(
    STEP,
    thinking(None),
    tool("get_weather", "c1", "output-available", {"city": "Paris"}, output={"sky": "sunny"}),
    STEP,
    tool("lookup", "c8", "output-error", {"key": "a"}, errorText="no entry 'a'; try 'b'"),
    STEP,
    {"type": "text", "text": "Sunny.", "state": "done"},
)
FILES = [
    {
        "type": "file",
        "mediaType": "image/png",
        "filename": "dot.png",
        "url": "data:image/png;base64,iVBORw0KGgo=",
    },
    {
        "type": "file",
        "mediaType": "application/pdf",
        "filename": "a.pdf",
        "url": "https://files.example/a.pdf",
    },
]


def searched(**metadata: Any) -> dict[str, Any]:
    """The answer of the scripted ``search``: the provider's web search (its call's and
    return's fields in ``metadata``, in one side's form), then the text."""
    output = [{"url": "https://paris.example", "title": "Paris"}]
    call = tool(
        "web_search",
        "ws_1",
        "output-available",
        {"query": "paris"},
        output=output,
        providerExecuted=True,
        **metadata,
    )
    return assistant(STEP, call, {"type": "text", "text": "Found it.", "state": "done"})


CALL_FIELDS = {
    "id": "ws_1",
    "provider_name": "function",
    "provider_details": {"status": "completed"},
}
RETURN_FIELDS = {"provider_name": "function", "provider_details": {"sources": 1}}
#: The search as the adapter's stream leaves it in the message (the call's fields only).
ADAPTER_STREAMED = searched(callProviderMetadata={"pydantic_ai": CALL_FIELDS})
#: The search as the adapter's ``dump_messages`` stores it (the call's and the return's apart).
ADAPTER_STORED = searched(
    callProviderMetadata={"pydantic_ai": {"call_meta": CALL_FIELDS, "return_meta": RETURN_FIELDS}}
)
OUR_CALL_FIELDS = {
    "id": "ws_1",
    "providerName": "function",
    "providerDetails": {"status": "completed"},
}
#: The search as chunkbridge's stream leaves it in an ai 5 message: the call's fields (ai 5
#: keeps no metadata of an output).
CHUNKBRIDGE_AT_5 = searched(callProviderMetadata={"pydanticAi": OUR_CALL_FIELDS})
#: ... and in an ai 6 or 7 message: the return's details too, which differ from the call's.
CHUNKBRIDGE_AT_7 = searched(
    callProviderMetadata={"pydanticAi": OUR_CALL_FIELDS},
    resultProviderMetadata={"pydanticAi": {"providerDetails": {"sources": 1}}},
)


@dataclass(frozen=True)
class Case:
    """One agent and one useChat body, run through both sides at each of ``targets``."""

    agent: str
    messages: list[dict[str, Any]]
    targets: tuple[int, ...] = (5, 6, 7)
    #: The run ends with an ``error`` (nothing after it reaches the message).
    error: str | None = None
    #: The run stops for the app (an approval, a deferred call): chunkbridge says ``tool-calls``.
    waits: bool = False

    @property
    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"id": "chat1", "messages": self.messages}
        body["trigger"] = "submit-message"
        if self.continued is not None:
            body["messageId"] = self.continued["id"]
        return body

    @property
    def continued(self) -> dict[str, Any] | None:
        """The assistant message this request continues (spec §5.4), if any."""
        last = self.messages[-1]
        return last if last["role"] == "assistant" else None


def ask(text: str, agent: str = "scripted", **options: Any) -> Case:
    return Case(agent, [user(text)], **options)


def then(question: str, earlier: dict[str, Any], first: str = "weather in Paris?") -> Case:
    """A new question after an earlier exchange, to the echo agent."""
    return Case("echo", [user(first), earlier, user(question, "u2")])


CASES: dict[str, Case] = {
    "plain-text": ask("hi"),
    "reasoning-and-tool": ask("weather in Paris?"),
    "parallel-tools": ask("both please"),
    "tool-retry": ask("lookup a"),
    "tool-exception": ask("explode it", error="the tool blew up"),
    "invalid-tool-arguments": ask("broken args"),
    "model-error-mid-text": ask("fail now", error="the model is down"),
    "error-before-output": ask("hi", "early-error", error="no credits left"),
    "approval-required": ask("delete /tmp/x", "deferring", waits=True),
    "approval-approved": Case("deferring", [user("delete /tmp/x"), decided(True)], (6, 7)),
    "approval-denied": Case("deferring", [user("delete /tmp/x"), decided(False)], (6, 7)),
    "deferred-call": ask("confirm it", "deferring", waits=True),
    "deferred-call-answered": Case(
        "deferring",
        [
            user("confirm it"),
            assistant(
                STEP, tool("confirm", "c5", "output-available", {"question": "Go?"}, output="yes")
            ),
        ],
    ),
    "structured-output": ask("forecast Rome", "structured"),
    "custom-events": ask("progress"),
    "native-tool": ask("search paris"),
    "history-with-tools-and-files": Case(
        "echo", [user("weather in Paris?", files=FILES), EARLIER, user("what did you see?", "u2")]
    ),
    "history-signature-adapter-form": then(
        "and?",
        assistant(
            STEP, thinking({"pydantic_ai": {"signature": "sig-1", "provider_name": "function"}})
        ),
    ),
    "history-signature-chunkbridge-form": then(
        "and?",
        assistant(
            STEP, thinking({"pydanticAi": {"signature": "sig-1", "providerName": "function"}})
        ),
    ),
    "history-native-tool-adapter-form": then("and?", ADAPTER_STREAMED, first="search paris"),
    "history-native-tool-adapter-stored-form": then("and?", ADAPTER_STORED, first="search paris"),
    "history-native-tool-chunkbridge-form": then("and?", CHUNKBRIDGE_AT_5, first="search paris"),
}
