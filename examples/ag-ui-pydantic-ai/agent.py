"""An AG-UI agent built with pydantic-ai, to put chunkbridge in front of (no API key needed).

Run it, then the gateway, then point useChat (or curl) at the gateway::

    .venv/bin/uvicorn --app-dir examples/ag-ui-pydantic-ai agent:app --port 9100
    .venv/bin/chunkbridge serve --dialect ag-ui --upstream http://127.0.0.1:9100 \\
        --ag-ui-path /agent --ag-ui-tools '{"confirm": {"description": "Ask the user"}}'
    curl -N http://127.0.0.1:8000/api/sessions/demo/chat -H 'content-type: application/json' \\
        -d '{"id":"c","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":"weather in Paris?"}]}]}'

The model is pydantic-ai's FunctionModel, scripted below: ask about the weather (it calls its
own tool and reasons first), ask for a plan (it updates the shared state), or ask it to confirm
(it calls the frontend tool ``confirm``, which the app answers). Replace ``FunctionModel(...)`` by a
real model name (``"openai:gpt-5-mini"``, ``"anthropic:claude-sonnet-4-5"``…) to use one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import StateDeltaEvent, StateSnapshotEvent
from pydantic_ai import Agent, ToolReturn
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    last = messages[-1]
    results = [p for p in last.parts if p.part_kind == "tool-return"]
    if results:
        yield f"Here you are: {results[0].content}."
        return
    prompt = next(
        (p.content for p in last.parts if p.part_kind == "user-prompt" and isinstance(p.content, str)),
        "",
    )
    if "weather" in prompt.lower():
        yield {0: DeltaThinkingPart(content="The user asks about the weather; I look it up.")}
        yield {1: DeltaToolCall(name="get_weather", json_args='{"city": "Paris"}', tool_call_id="w1")}
    elif "plan" in prompt.lower():
        yield {0: DeltaToolCall(name="make_plan", json_args="{}", tool_call_id="p1")}
    elif "confirm" in prompt.lower():
        yield "Let me ask you first."
        yield {1: DeltaToolCall(name="confirm", json_args='{"question": "Proceed?"}', tool_call_id="c1")}
    else:
        for word in f"You said: {prompt}. Try 'weather', 'plan' or 'confirm'.".split(" "):
            yield word + " "


agent = Agent(FunctionModel(stream_function=scripted_model))


@agent.tool_plain
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny and 21 °C in {city}"


@agent.tool_plain
def make_plan() -> ToolReturn:
    """Write a plan into the shared state."""
    snapshot = StateSnapshotEvent(snapshot={"steps": ["research", "draft", "review"], "done": 0})
    progress = StateDeltaEvent(delta=[{"op": "replace", "path": "/done", "value": 1}])
    return ToolReturn(return_value="a three-step plan", metadata=[snapshot, progress])


async def run(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=agent)


app = Starlette(routes=[Route("/agent", run, methods=["POST"])])
