"""Real LangGraph graphs for the ``langgraph`` dialect's tests and recordings: a scripted chat
model (a ``BaseChatModel`` streaming the chunks its script holds for each call, no network),
``ToolNode`` tools, ``interrupt()`` questions and their resumption, a subgraph, failures.
``SCENARIOS[name]()`` is what an app hands chunkbridge: ``graph.astream(...)`` of a fresh graph
(its checkpointer new too)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

MODES = ["messages", "updates", "custom"]


class ScriptedChatModel(BaseChatModel):
    """Streams ``script[n]`` for its ``n``-th call in a conversation (``n``: the AI messages
    already in it); a chunk that is an exception is raised there."""

    script: list[list[Any]]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("the graph streams")

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        calls = sum(1 for m in messages if m.type == "ai")
        for piece in self.script[calls]:
            if isinstance(piece, Exception):
                raise piece
            chunk = ChatGenerationChunk(message=piece)
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


def text(*pieces: str, model: str = "scripted-1") -> list[Any]:
    chunks: list[Any] = [AIMessageChunk(content=p) for p in pieces]
    return [*chunks, _last(model)]


def _last(model: str, usage: tuple[int, int] = (7, 3)) -> AIMessageChunk:
    return AIMessageChunk(
        content="",
        response_metadata={"finish_reason": "stop", "model_name": model},
        usage_metadata={
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "total_tokens": sum(usage),
        },
        chunk_position="last",
    )


def call(name: str, args: str, call_id: str, index: int = 0) -> AIMessageChunk:
    chunk = {"name": name, "args": args, "id": call_id, "index": index}
    return AIMessageChunk(content="", tool_call_chunks=[chunk])


def more_args(args: str, index: int = 0) -> AIMessageChunk:
    chunk = {"name": None, "args": args, "id": None, "index": index}
    return AIMessageChunk(content="", tool_call_chunks=[chunk])


@tool
def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    get_stream_writer()({"progress": f"looking up {city}"})
    return {"city": city, "sky": "sunny"}


@tool
def get_time(zone: str) -> str:
    """The time in a zone."""
    return f"12:00 {zone}"


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("the tool blew up")


@tool
def ask_human(question: str) -> str:
    """Ask the user; the graph stops until the answer comes."""
    answer = interrupt({"question": question, "options": ["Paris", "Rome"]})
    return f"the user said {answer}"


TOOLS = [get_weather, get_time, explode, ask_human]


def agent_graph(script: list[list[Any]], *, tool_errors: bool = False) -> Any:
    """The classic loop: the model, then its tools, until it answers."""
    model = ScriptedChatModel(script=script)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(TOOLS, handle_tool_errors=tool_errors))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=InMemorySaver())


CONFIG = {"configurable": {"thread_id": "t1"}}


def _ask(prompt: str = "hi") -> dict[str, Any]:
    return {"messages": [HumanMessage(prompt)]}


def _stream(script: list[list[Any]], **options: Any) -> Callable[[], Any]:
    return lambda: agent_graph(script, **options).astream(_ask(), CONFIG, stream_mode=MODES)


def _approve_plan() -> Any:
    """A node (not a tool) that stops for the user's word."""

    def plan(state: MessagesState) -> dict[str, Any]:
        answer = interrupt("Approve the plan: search, then summarize?")
        return {"messages": [AIMessage(content=f"Plan {answer}.", id="plan-1")]}

    graph = StateGraph(MessagesState)
    graph.add_node("plan", plan)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", END)
    return graph.compile(checkpointer=InMemorySaver()).astream(_ask(), CONFIG, stream_mode=MODES)


ASKING = [[call("ask_human", '{"question": "Which city?"}', "c4")], text("Going to Paris.")]


async def _resumed() -> AsyncIterator[Any]:
    """The question answered: the run that follows (``Command(resume=…)``) on the same thread."""
    graph = agent_graph(ASKING)
    async for _ in graph.astream(_ask(), CONFIG, stream_mode=MODES):
        pass
    async for event in graph.astream(Command(resume="Paris"), CONFIG, stream_mode=MODES):
        yield event


def _subgraph() -> Any:
    inner = agent_graph([text("From the ", "subgraph.")])
    graph = StateGraph(MessagesState)
    graph.add_node("inner", inner)
    graph.add_edge(START, "inner")
    graph.add_edge("inner", END)
    compiled = graph.compile(checkpointer=InMemorySaver())
    return compiled.astream(_ask(), CONFIG, stream_mode=MODES, subgraphs=True)


def _canned() -> Any:
    def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="A canned answer.", id="canned-1")]}

    graph = StateGraph(MessagesState)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile().astream(_ask(), stream_mode=MODES)


REASONING = AIMessageChunk(content=[{"type": "reasoning", "reasoning": "The user greets."}])

#: recording name → the graph's stream an app would hand over.
SCENARIOS: dict[str, Callable[[], Any]] = {
    "plain-text": _stream([text("Hello ", "from the graph.")]),
    "tool-call": _stream(
        [
            [call("get_weather", '{"city": ', "c1"), more_args('"Paris"}'), _last("scripted-1")],
            text("It is ", "sunny."),
        ]
    ),
    "parallel-tools": _stream(
        [
            [
                AIMessageChunk(content="Checking both."),
                call("get_weather", '{"city": "Oslo"}', "c1", 0),
                call("get_time", '{"zone": "CET"}', "c2", 1),
                _last("scripted-1"),
            ],
            text("Oslo is sunny at 12:00."),
        ]
    ),
    "reasoning-blocks": _stream(
        [[REASONING, AIMessageChunk(content=[{"type": "text", "text": "Hi there."}]), _last("r1")]]
    ),
    "reasoning-content": _stream(
        [
            [
                AIMessageChunk(content="", additional_kwargs={"reasoning_content": "Thinking."}),
                *text("Done thinking."),
            ]
        ]
    ),
    "interrupt-in-tool": _stream(ASKING),
    "interrupt-in-node": _approve_plan,
    "tool-exception": _stream([[call("explode", "{}", "c3"), _last("scripted-1")], text("x")]),
    "tool-error-message": _stream(
        [[call("explode", "{}", "c3"), _last("scripted-1")], text("The tool failed.")],
        tool_errors=True,
    ),
    "model-error-mid-text": _stream(
        [[AIMessageChunk(content="Starting"), RuntimeError("the model is down")]]
    ),
    "subgraph": _subgraph,
    "canned-node": _canned,
    "unicode-and-large-delta": _stream([text("héllo 👋🏽 — ", "x" * 20000, " 終")]),
}
