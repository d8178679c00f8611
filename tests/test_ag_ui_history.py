"""ag-ui: an answer sent back as history reaches the agent as the exchange as it happened, for
real pydantic-ai, LangGraph and Google ADK agents behind the live gateway (their own AG-UI
adapters, scripted models that record what they are given), judged by the real ai 5/6/7 clients.

The message has one step per model response (AG-UI has no step events: text after a tool result
is the next response), so the next request gives the agent user → assistant text + call →
result → assistant text, never the two texts glued before the call; and it carries the ids the
agent gave its messages, so an agent that keeps the thread itself (LangGraph with a
checkpointer, ADK's sessions) holds each message once.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.ag_ui_agents import (
    ANSWER,
    EXCHANGE,
    QUESTION,
    SAYING,
    THANKS,
    AdkAgent,
    LangGraphAgent,
    PydanticAiAgent,
    served,
)
from tests.gateway_harness import post, running_gateway, user_body

pytestmark = [
    pytest.mark.conformance,
    # ag-ui-langgraph 0.0.47 still asks the graph for it (its run goes on)
    pytest.mark.filterwarnings("ignore:`get_config_jsonschema` is deprecated"),
]

AGENTS: dict[str, Any] = {
    "pydantic-ai": PydanticAiAgent,
    "langgraph": LangGraphAgent,
    "adk": AdkAgent,
}
THANKED = [*EXCHANGE, ("user", "Thanks", [])]
_CONTENT = ("text", "reasoning", "tool-get_weather")


@contextlib.asynccontextmanager
async def gateway_before(agent: Any, major: int) -> AsyncIterator[str]:
    async with (
        served(agent) as base,
        running_gateway(
            upstream=base,
            dialect="ag-ui",
            dialect_settings={"ag-ui": {"path": "/agent"}},
            target=major,
        ) as (gw, _),
    ):
        yield gw


def steps(message: dict[str, Any]) -> list[list[str]]:
    """The message's content parts by step."""
    out: list[list[str]] = []
    for part in message["parts"]:
        if part["type"] == "step-start":
            out.append([])
        elif part["type"] in _CONTENT:
            out[-1].append(part["type"])
    return out


def thanks(message: dict[str, Any]) -> dict[str, Any]:
    """The next request: the question, the answer as the client keeps it, a thank-you."""
    body = user_body(QUESTION)
    body["messages"] += [
        message,
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Thanks"}]},
    ]
    return body


async def answer(real_clients: Any, gw: str, session: str, major: int) -> dict[str, Any]:
    """Ask the weather; the answer as the client of ``major`` keeps it, after checking it."""
    response = await post(gw, session, user_body(QUESTION))
    verdict = real_clients.check(response.content, majors=(major,))[major]
    assert verdict.ok and verdict.finish_reason == "stop", verdict.fatal
    message = verdict.message
    assert message is not None
    assert steps(message) == [["text", "tool-get_weather"], ["text"]]
    assert [p["text"] for p in message["parts"] if p["type"] == "text"] == [SAYING, ANSWER]
    return message


@pytest.mark.parametrize("major", [5, 6, 7])
@pytest.mark.parametrize("framework", sorted(AGENTS))
async def test_an_answer_sent_back_reaches_the_agent_as_it_happened(
    real_clients: Any, framework: str, major: int
) -> None:
    """A stateless agent (pydantic-ai, LangGraph without a checkpointer) and an ADK agent on a
    thread it has no session for (it starts one from the history) are given the exchange as it
    happened."""
    agent = AGENTS[framework]()
    async with gateway_before(agent, major) as gw:
        message = await answer(real_clients, gw, "first", major)
        response = await post(gw, "second", thanks(message))
    assert response.status_code == 200
    assert agent.transcript() == THANKED


@pytest.mark.parametrize("major", [5, 7])
async def test_a_langgraph_thread_holds_each_message_once(real_clients: Any, major: int) -> None:
    """LangGraph with a checkpointer, the same thread, the whole history sent: every message
    comes back under the id the graph keeps it by (the tool message's from the run's closing
    MESSAGES_SNAPSHOT), so the graph adds only the new one."""
    agent = LangGraphAgent()
    async with gateway_before(agent, major) as gw:
        message = await answer(real_clients, gw, "thread", major)
        kept = [m.id for m in await agent.thread("thread")]
        response = await post(gw, "thread", thanks(message))
        after = await agent.thread("thread")
    assert response.status_code == 200
    assert len(kept) == 4
    assert [m.id for m in after][:4] == kept and len(after) == 6
    assert [m.type for m in after[4:]] == ["human", "ai"] and after[5].content == THANKS
    assert agent.transcript() == THANKED


@pytest.mark.parametrize("major", [5, 7])
async def test_an_adk_session_gets_nothing_twice(real_clients: Any, major: int) -> None:
    """ADK on the same thread: its session is the record, and what the request repeats of it
    is not added again."""
    agent = AdkAgent()
    async with gateway_before(agent, major) as gw:
        message = await answer(real_clients, gw, "thread", major)
        response = await post(gw, "thread", thanks(message))
    assert response.status_code == 200
    assert agent.transcript() == THANKED


@pytest.mark.parametrize("major", [5, 6, 7])
async def test_arguments_that_are_not_json_go_back_as_the_calls_error(
    real_clients: Any, major: int
) -> None:
    """The model's call has arguments that are not JSON: the part is the AI SDK's
    tool-input-error (the raw text kept: ai 7's input, ai 5/6's rawInput) and ends output-error
    with what pydantic-ai told the model; sent back, the call goes with no input ({}, as the AI
    SDK sends an invalid call) and that error as its result — never the text as a string input."""
    agent = PydanticAiAgent(bad_arguments=True)
    async with gateway_before(agent, major) as gw:
        response = await post(gw, "first", user_body(QUESTION))
        verdict = real_clients.check(response.content, majors=(major,))[major]
        assert verdict.ok and verdict.finish_reason == "stop", verdict.fatal
        message = verdict.message
        assert message is not None
        assert steps(message) == [["text", "tool-get_weather"], ["text"]]
        (call,) = verdict.parts("tool-get_weather")
        assert call["state"] == "output-error" and "Invalid JSON" in call["errorText"]
        raw = '{"city": "Par'
        if major == 7:
            assert call["input"] == raw
        else:
            assert call["rawInput"] == raw and "input" not in call
        await post(gw, "first", thanks(message))
    rows = agent.transcript()
    assert rows[:2] == [("user", QUESTION, []), ("assistant", SAYING, [("get_weather", {})])]
    assert rows[3:] == [("assistant", "The call failed.", []), ("user", "Thanks", [])]
    # the result is what pydantic-ai told the model the first time, as an error
    (returned,) = [p for m in agent.seen[-1] for p in m.parts if p.part_kind == "tool-return"]
    assert returned.outcome == "failed"
    assert returned.content == json.loads(call["errorText"])
