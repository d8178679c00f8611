"""Real AG-UI agents of three frameworks for the ag-ui tests, each over its own adapter and
with a scripted model that records what it is given (no network, no key): pydantic-ai
(``AGUIAdapter``, ``FunctionModel``), LangGraph (``ag-ui-langgraph``, a ``BaseChatModel``) and
Google ADK (``ag-ui-adk``, a ``BaseLlm``).

The three models play one exchange: asked about the weather, they say so and call
``get_weather``; given its result they answer with it; anything else gets a thank-you. Each
keeps the conversation every call was given, as its framework hands it over, and
``transcript`` reads the last one as ``(role, text, calls)`` rows, the same for all three.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

from pydantic import Field

from tests.gateway_harness import uvicorn_server

QUESTION = "What is the weather in Paris?"
SAYING = "Let me check the weather."
ANSWER = "It is sunny in Paris."
THANKS = "You are welcome."
#: The exchange as it happened: (role, text, calls) where calls are (name, input) pairs; a
#: tool row holds the result.
EXCHANGE = [
    ("user", QUESTION, []),
    ("assistant", SAYING, [("get_weather", {"city": "Paris"})]),
    ("tool", "sunny in Paris", []),
    ("assistant", ANSWER, []),
]


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


Row = tuple[str, str, list[tuple[str, Any]]]


# -- pydantic-ai ---------------------------------------------------------------------------------


class PydanticAiAgent:
    """pydantic-ai's ``AGUIAdapter`` over a ``FunctionModel``; ``seen``: each call's messages.
    ``bad_arguments``: the model's call has arguments that are not JSON (pydantic-ai then
    tells it so, and it answers)."""

    def __init__(self, bad_arguments: bool = False) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.models.function import FunctionModel

        self.seen: list[list[Any]] = []
        self.bad_arguments = bad_arguments
        self.agent = Agent(FunctionModel(stream_function=self._model))
        self.agent.tool_plain(get_weather)

    async def _model(self, messages: list[Any], info: Any) -> AsyncIterator[Any]:
        from pydantic_ai.models.function import DeltaToolCall

        self.seen.append(list(messages))
        last = messages[-1].parts
        if any(p.part_kind == "tool-return" and p.outcome != "success" for p in last):
            yield "The call failed."
            return
        returned = [p for p in last if p.part_kind == "tool-return"]
        if returned:
            yield f"It is {returned[0].content}."
            return
        prompts = [p.content for p in last if p.part_kind == "user-prompt"]
        if not prompts or "weather" not in str(prompts[-1]):
            yield THANKS
            return
        yield SAYING
        arguments = '{"city": "Par' if self.bad_arguments else '{"city": "Paris"}'
        yield {1: DeltaToolCall(name="get_weather", json_args=arguments, tool_call_id="c1")}

    def app(self) -> Any:
        from pydantic_ai.ui.ag_ui import AGUIAdapter
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import Response
        from starlette.routing import Route

        async def run(request: Request) -> Response:
            return await AGUIAdapter.dispatch_request(request, agent=self.agent)

        return Starlette(routes=[Route("/agent", run, methods=["POST"])])

    def transcript(self) -> list[Row]:
        rows: list[Row] = []
        for message in self.seen[-1]:
            calls: list[tuple[str, Any]] = []
            texts: list[str] = []
            for part in message.parts:
                if part.part_kind == "user-prompt":
                    rows.append(("user", str(part.content), []))
                elif part.part_kind == "tool-return":
                    rows.append(("tool", str(part.content), []))
                elif part.part_kind == "text":
                    texts.append(part.content)
                elif part.part_kind == "tool-call":
                    calls.append((part.tool_name, part.args_as_dict()))
            if message.kind == "response":
                rows.append(("assistant", "".join(texts), calls))
        return rows


# -- LangGraph -----------------------------------------------------------------------------------


def _langchain_model() -> Any:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
    from langchain_core.messages.tool import tool_call_chunk
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

    class ScriptedChatModel(BaseChatModel):
        """Streams like a provider: text, then the call's name and id, then its arguments."""

        seen: list[list[BaseMessage]] = Field(default_factory=list)

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _pieces(self, messages: list[BaseMessage]) -> list[AIMessageChunk]:
            self.seen.append(list(messages))
            last = messages[-1]
            if isinstance(last, ToolMessage):
                return [
                    AIMessageChunk(content="It is "),
                    AIMessageChunk(content=f"{last.content}."),
                ]
            if "weather" not in str(last.content):
                return [AIMessageChunk(content=THANKS)]
            call = tool_call_chunk(name="get_weather", args="", id="call_1", index=0)
            arguments = tool_call_chunk(args='{"city": "Paris"}', index=0)
            return [
                AIMessageChunk(content=SAYING),
                AIMessageChunk(content="", tool_call_chunks=[call]),
                AIMessageChunk(content="", tool_call_chunks=[arguments]),
            ]

        def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
            pieces = self._pieces(messages)
            whole = pieces[0]
            for piece in pieces[1:]:
                whole += piece
            message = AIMessage(content=whole.content, tool_calls=whole.tool_calls)
            return ChatResult(generations=[ChatGeneration(message=message)])

        def _stream(
            self, messages: list[BaseMessage], *a: Any, **k: Any
        ) -> Iterator[ChatGenerationChunk]:
            for piece in self._pieces(messages):
                yield ChatGenerationChunk(message=piece)

    return ScriptedChatModel()


class LangGraphAgent:
    """A model → tools graph served by ``ag-ui-langgraph``, which needs a checkpointer (it reads
    the thread's state each run): LangGraph's ``MemorySaver``, so the graph keeps each thread."""

    def __init__(self) -> None:
        from langchain_core.tools import tool
        from langgraph.checkpoint.memory import MemorySaver
        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        self.model = _langchain_model()

        def agent(state: MessagesState) -> dict[str, Any]:
            return {"messages": [self.model.invoke(state["messages"])]}

        graph = StateGraph(MessagesState)
        graph.add_node("agent", agent)
        graph.add_node("tools", ToolNode([tool(get_weather)]))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        self.graph = graph.compile(checkpointer=MemorySaver())

    def app(self) -> Any:
        from ag_ui_langgraph import LangGraphAgent as Served
        from ag_ui_langgraph import add_langgraph_fastapi_endpoint
        from fastapi import FastAPI

        app = FastAPI()
        served = Served(name="weather", graph=self.graph, emit_raw_events=False)
        add_langgraph_fastapi_endpoint(app, served, "/agent")
        return app

    async def thread(self, thread_id: str) -> list[Any]:
        """The messages the graph keeps for ``thread_id``."""
        state = await self.graph.aget_state({"configurable": {"thread_id": thread_id}})
        return list(state.values.get("messages", []))

    def transcript(self) -> list[Row]:
        rows: list[Row] = []
        for message in self.model.seen[-1]:
            kind = {"human": "user", "ai": "assistant", "tool": "tool"}[message.type]
            calls = [(c["name"], c["args"]) for c in getattr(message, "tool_calls", [])]
            rows.append((kind, str(message.content), calls))
        return rows


# -- Google ADK ----------------------------------------------------------------------------------


def _adk_model() -> Any:
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    def said(*parts: types.Part, partial: bool) -> LlmResponse:
        content = types.Content(role="model", parts=list(parts))
        return LlmResponse(content=content, partial=partial, turn_complete=not partial)

    class ScriptedLlm(BaseLlm):
        """Streams like Gemini: the text in partial pieces, then the whole response."""

        model: str = "scripted"
        seen: list[list[types.Content]] = Field(default_factory=list)

        async def generate_content_async(
            self, llm_request: Any, stream: bool = False
        ) -> AsyncIterator[LlmResponse]:
            self.seen.append(list(llm_request.contents))
            last = llm_request.contents[-1].parts
            returned = [p.function_response for p in last if p.function_response]
            if returned:
                text = f"It is {(returned[0].response or {}).get('result')}."
                yield said(types.Part(text=text[:6]), partial=True)
                yield said(types.Part(text=text[6:]), partial=True)
                yield said(types.Part(text=text), partial=False)
                return
            if "weather" not in (last[-1].text or ""):
                yield said(types.Part(text=THANKS), partial=False)
                return
            args = {"city": "Paris"}
            call = types.FunctionCall(id="call_1", name="get_weather", args=args)
            yield said(types.Part(text=SAYING), partial=True)
            yield said(types.Part(text=SAYING), types.Part(function_call=call), partial=False)

    return ScriptedLlm()


class AdkAgent:
    """An ADK ``LlmAgent`` served by ``ag-ui-adk``, with sessions of its own in memory (one per
    thread)."""

    def __init__(self) -> None:
        from google.adk.agents import LlmAgent

        self.model = _adk_model()
        self.agent = LlmAgent(
            name="weather", model=self.model, tools=[get_weather], instruction="Answer."
        )

    def app(self) -> Any:
        from ag_ui_adk import ADKAgent, add_adk_fastapi_endpoint
        from fastapi import FastAPI
        from google.adk.sessions import InMemorySessionService

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # its experimental in-memory services
            served = ADKAgent(
                adk_agent=self.agent,
                app_name="weather",
                user_id="user",
                # its own: without one, ADK agents of a process share their sessions
                session_service=InMemorySessionService(),
            )
        app = FastAPI()
        add_adk_fastapi_endpoint(app, served, "/agent")
        return app

    def transcript(self) -> list[Row]:
        rows: list[Row] = []
        for content in self.model.seen[-1]:
            for part in content.parts:
                if part.function_response:
                    result = (part.function_response.response or {}).get("result")
                    rows.append(("tool", str(result), []))
            texts = "".join(p.text or "" for p in content.parts if not p.function_response)
            calls = [
                (p.function_call.name, p.function_call.args)
                for p in content.parts
                if p.function_call
            ]
            if texts or calls:
                role = "assistant" if content.role == "model" else "user"
                rows.append((role, texts, calls))
        return rows


@contextlib.asynccontextmanager
async def served(agent: PydanticAiAgent | LangGraphAgent | AdkAgent) -> AsyncIterator[str]:
    """The agent's app on 127.0.0.1 (its route: ``/agent``); yields the base URL."""
    async with uvicorn_server(agent.app()) as base:
        yield base
