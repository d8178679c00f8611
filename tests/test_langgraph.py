"""langgraph: real LangGraph graphs (a scripted chat model, ``ToolNode``, ``interrupt()``, no
network) streamed in-process through the ``langgraph`` dialect: each recording is what the graph
emits now (its random ids aligned), the live objects give the golden's bytes, and a question the
graph asks round-trips through the real ai 5/6/7 chats and ``graph_input``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import Command
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chunkbridge.gateway.devtools.library_recording import library_sse
from chunkbridge.kit import RequestRejected, TurnInput
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.translators.core.turn import TurnOptions
from chunkbridge.translators.dialects.langgraph import graph_input
from tests.gateway_harness import uvicorn_server
from tests.helpers import chat_reply, decode_sse, new_turn, of_type
from tests.langgraph_graphs import ASKING, MODES, SCENARIOS, agent_graph
from tests.library_runs import check_live_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "langgraph"
DIALECT = "langgraph"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_the_live_graph_is_its_recording_and_its_golden(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    update = bool(request.config.getoption("--update-goldens"))
    recording = FIXTURES / f"{name}.jsonl"
    await check_live_run(DIALECT, SCENARIOS[name], recording, tmp_path, update)


def _chunks(name: str) -> list[dict[str, Any]]:
    return decode_sse((FIXTURES / f"{name}.sse").read_bytes())


def test_what_the_goldens_show() -> None:
    asked = _chunks("interrupt-in-tool")
    (question,) = [c for c in of_type(asked, "tool-input-available") if c["toolName"] == "ask_user"]
    assert question["input"] == {"question": "Which city?", "options": ["Paris", "Rome"]}
    assert asked[-1]["finishReason"] == "tool-calls"
    (plan,) = of_type(_chunks("interrupt-in-node"), "tool-input-available")
    assert plan["input"] == {"question": "Approve the plan: search, then summarize?"}
    (failed,) = of_type(_chunks("tool-error-message"), "tool-output-error")
    assert "the tool blew up" in failed["errorText"]
    assert of_type(_chunks("tool-exception"), "error")[0]["errorText"] == "the tool blew up"
    steps = [c["type"] for c in _chunks("tool-call") if c["type"].endswith("-step")]
    assert steps == ["start-step", "finish-step", "start-step", "finish-step"]
    assert _chunks("tool-call")[-1]["messageMetadata"] == {
        "model": "scripted-1",
        "usage": {"inputTokens": 14, "outputTokens": 6},
    }
    (custom,) = of_type(_chunks("tool-call"), "data-custom")
    assert custom["data"] == {"progress": "looking up Paris"} and custom["transient"] is True
    reasoning = [c["delta"] for c in of_type(_chunks("reasoning-blocks"), "reasoning-delta")]
    assert reasoning == ["The user greets."]
    text = [c["delta"] for c in of_type(_chunks("subgraph"), "text-delta")]
    assert text == ["From the ", "subgraph."]  # (namespace, mode, payload) tuples


def test_unknown_and_malformed_events_follow_the_policy() -> None:
    turn = new_turn(DIALECT)
    out = turn.feed(["values", {"messages": []}])
    out += turn.feed(["messages", "not a pair"])
    out += turn.feed({"type": "x"})
    out += turn.feed(["updates", {"__interrupt__": [{"value": "no id"}]}])
    out += turn.feed({"chunkbridge": "end"})
    kinds = [c["type"] for c in out]
    assert "data-values" in kinds
    reasons = [m["data"]["reason"] for m in of_type(out, "data-upstream-malformed")]
    assert reasons == [
        "messages: a messages payload is (message, metadata)",
        "not an event of this library",
    ]
    assert kinds[-1] == "finish" and turn.translator.stats["malformed-interrupt"] == 1


# -- the request side ------------------------------------------------------------------------


def _request(messages: list[dict[str, Any]]) -> ChatRequest:
    return ChatRequest.model_validate({"id": "c", "messages": messages})


USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather?"}]}


def test_graph_input_sends_the_newest_message_or_the_whole_history() -> None:
    assistant = {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "Look it up."},
            {
                "type": "tool-get_weather",
                "toolCallId": "c1",
                "state": "output-available",
                "input": {"city": "Paris"},
                "output": {"sky": "sunny"},
            },
            {"type": "step-start"},
            {"type": "text", "text": "Sunny."},
        ],
    }
    image = {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBORw0K"}
    second = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "and?"}, image]}
    request = _request([USER, assistant, second])
    (latest,) = graph_input(request)["messages"]
    assert isinstance(latest, HumanMessage) and latest.content[0] == {
        "type": "text",
        "text": "and?",
    }
    assert latest.content[1] == {"type": "image", "base64": "iVBORw0K", "mime_type": "image/png"}
    full = graph_input(request, history="full")["messages"]
    assert [type(m) for m in full] == [
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
        HumanMessage,
    ]
    assert full[1].tool_calls[0]["args"] == {"city": "Paris"}
    assert full[1].additional_kwargs == {"reasoning_content": "Look it up."}
    assert full[2].content == '{"sky": "sunny"}' and full[3].content == "Sunny."
    with pytest.raises(RequestRejected):
        graph_input(_request([assistant]))


def test_graph_input_resumes_with_the_answers() -> None:
    asked = {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-ask_user",
                "toolCallId": "intr-1",
                "state": "output-available",
                "input": {"question": "Which city?"},
                "output": "Paris",
            },
            {
                "type": "tool-ask_user",
                "toolCallId": "intr-2",
                "state": "output-error",
                "input": {"question": "Sure?"},
                "errorText": "skip",
            },
        ],
    }
    command = graph_input(_request([USER, asked]))
    assert isinstance(command, Command)
    assert command.resume == {"intr-1": "Paris", "intr-2": {"declined": "skip"}}


_GRAPHS: dict[str, Any] = {}


async def _chat(request: Request) -> Response:
    """A host app's route: the chat's request in, the graph's stream out as its answer."""
    chat = ChatRequest.model_validate(await request.json())
    graph = _GRAPHS.setdefault(chat.id, agent_graph(ASKING))  # one graph (and thread) per chat
    options = TurnOptions(
        target=int(request.path_params["major"]),
        message_id=chat.response_message_id(),
        known_tools=TurnInput(chat, "", "").known_tool_calls(),
    )
    config = {"configurable": {"thread_id": chat.id}}
    events = graph.astream(graph_input(chat), config, stream_mode=MODES)
    body = await library_sse(DIALECT, events, options=options)
    return Response(body, media_type="text/event-stream")


@contextlib.asynccontextmanager
async def chat_app() -> AsyncIterator[str]:
    app = Starlette(routes=[Route("/chat/{major:int}", _chat, methods=["POST"])])
    async with uvicorn_server(app) as base:
        yield base


@pytest.mark.conformance
@pytest.mark.parametrize("major", [5, 6, 7])
async def test_a_question_round_trips_through_the_real_chat(real_clients: Any, major: int) -> None:
    """The graph stops at ``interrupt()``; the chat answers the question; the next request
    resumes the graph (``Command(resume=…)``), which goes on in the same message."""
    async with chat_app() as base:
        answer = {"kind": "question", "output": "Paris"}
        result = await real_clients.chat_loop(f"{base}/chat/{major}", major, "hi", [answer])
    parts = chat_reply(result)["parts"]
    (tool,) = [p for p in parts if p["type"] == "tool-ask_human"]
    assert tool["state"] == "output-available" and tool["output"] == "the user said Paris"
    (question,) = [p for p in parts if p["type"] == "tool-ask_user"]
    assert question["state"] == "output-available" and question["output"] == "Paris"
    assert [p["text"] for p in parts if p["type"] == "text"] == ["Going to Paris."]
    second = result["requests"][1]
    assert second["messageId"] == result["messages"][1]["id"]
