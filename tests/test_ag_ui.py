"""ag-ui: a real AG-UI server (pydantic-ai's AGUIAdapter, its FunctionModel as the model, no
network) behind the live gateway, judged by the real ai 5/6/7 clients; then what it does not show.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ag_ui.core import CustomEvent, StateDeltaEvent, StateSnapshotEvent
from pydantic_ai import Agent, ToolReturn
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingPart,
    DeltaToolCall,
    FunctionModel,
)
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.gateway_harness import post, running_gateway, user_body, uvicorn_server
from tests.helpers import chat_reply, decode_sse, new_turn, of_type, text_of, types


def _prompt(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        for part in message.parts:
            if part.part_kind == "user-prompt" and isinstance(part.content, str):
                return part.content
    return ""


async def _model(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    """The scripted model: what it does depends on a word of the newest user prompt."""
    answered = [p for p in messages[-1].parts if p.part_kind == "tool-return"]
    prompt = _prompt(messages)
    if answered:
        yield f"Done: {answered[0].content}."
        return
    if "delete" in prompt:
        yield "Deleting needs your approval."
        yield {
            1: DeltaToolCall(name="delete_file", json_args='{"path": "/tmp/x"}', tool_call_id="c4")
        }
        return
    if "fail" in prompt:
        raise RuntimeError("the model is down")
    if "weather" in prompt:
        yield {0: DeltaThinkingPart(content="The user wants ")}
        yield {0: DeltaThinkingPart(content="the weather.")}
        yield {1: DeltaToolCall(name="get_weather", json_args='{"city": ', tool_call_id="c1")}
        yield {1: DeltaToolCall(json_args='"Paris"}')}
    elif "plan" in prompt:
        yield {0: DeltaToolCall(name="update_plan", json_args="{}", tool_call_id="c2")}
    elif "confirm" in prompt:
        yield "I need your confirmation."
        yield {1: DeltaToolCall(name="confirm", json_args='{"question": "Go?"}', tool_call_id="c3")}
    else:
        yield "Hello "
        yield "from pydantic-ai."


agent = Agent(FunctionModel(stream_function=_model))


@agent.tool_plain
def get_weather(city: str) -> str:
    return f"sunny in {city}"


@agent.tool_plain(requires_approval=True)
def delete_file(path: str) -> str:
    return f"deleted {path}"


@agent.tool_plain
def update_plan() -> ToolReturn:
    events = [
        StateSnapshotEvent(snapshot={"steps": ["search", "answer"], "done": 0}),
        StateDeltaEvent(delta=[{"op": "replace", "path": "/done", "value": 1}]),
        CustomEvent(name="plan.updated", value={"steps": 2}),
    ]
    return ToolReturn(return_value="planned", metadata=events)


async def _run(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=agent)


@contextlib.asynccontextmanager
async def ag_ui_agent() -> AsyncIterator[str]:
    async with uvicorn_server(Starlette(routes=[Route("/agent", _run, methods=["POST"])])) as base:
        yield base


SETTINGS = {
    "path": "/agent",
    "tools": {
        "confirm": {
            "description": "Ask the user to confirm",
            "input_schema": {"type": "object", "properties": {"question": {"type": "string"}}},
        }
    },
}


@contextlib.asynccontextmanager
async def gateway_in_front(**settings: Any) -> AsyncIterator[str]:
    async with (
        ag_ui_agent() as base,
        running_gateway(
            upstream=base, dialect="ag-ui", dialect_settings={"ag-ui": SETTINGS}, **settings
        ) as (gw, _),
    ):
        yield gw


@pytest.mark.conformance
@pytest.mark.parametrize(("major", "approved"), [(5, True), (6, True), (7, True), (7, False)])
async def test_a_tool_approval_interrupt_round_trips_through_the_real_chat(
    real_clients: Any, major: int, approved: bool
) -> None:
    """pydantic-ai's tool that requires approval ends the run with an AG-UI interrupt; the
    chat approves or denies it; the next run's ``resume`` carries the decision and the agent
    goes on in the same message."""
    async with gateway_in_front(target=major) as gw:
        api = f"{gw}/api/sessions/appr{major}/chat"
        answer = {"kind": "approval", "approved": approved, "reason": "no thanks"}
        result = await real_clients.chat_loop(api, major, "delete it", [answer])
    parts = chat_reply(result)["parts"]
    (tool,) = [p for p in parts if p["type"] == "tool-delete_file"]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts[0] == "Deleting needs your approval."
    if approved:
        assert tool["state"] == "output-available" and tool["output"] == "deleted /tmp/x"
        assert texts[-1] == "Done: deleted /tmp/x."
    else:
        assert tool["state"] == "output-denied", tool
        assert texts[-1] == "Done: no thanks."  # the model heard the denial and went on
    second = result["requests"][1]
    assert second["messageId"] == result["messages"][1]["id"]


async def test_a_real_agent_with_reasoning_and_its_own_tool(real_clients) -> None:
    async with gateway_in_front() as gw:
        response = await post(gw, "s1", user_body("What is the weather?"))
    assert response.status_code == 200
    chunks = decode_sse(response.content)
    assert text_of(chunks) == "Done: sunny in Paris."
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
        assert verdict.parts("reasoning")[0]["text"] == "The user wants the weather."
        (tool,) = verdict.parts("tool-get_weather")
        assert tool["state"] == "output-available" and tool["providerExecuted"] is True
        assert tool["input"] == {"city": "Paris"} and tool["output"] == "sunny in Paris"


async def test_state_snapshots_and_deltas_update_one_part_in_place(real_clients) -> None:
    async with gateway_in_front() as gw:
        response = await post(gw, "s2", user_body("Make a plan"))
    chunks = decode_sse(response.content)
    states = of_type(chunks, "data-state")
    assert [s["data"] for s in states] == [
        {"steps": ["search", "answer"], "done": 0},
        {"steps": ["search", "answer"], "done": 1},
    ]
    assert of_type(chunks, "data-custom")[0]["data"] == {
        "name": "plan.updated",
        "value": {"steps": 2},
    }
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok, (major, verdict.fatal)
        (state,) = verdict.parts("data-state")  # replaced in place: one part, the latest state
        assert state["data"]["done"] == 1
        assert not verdict.parts("data-custom")  # transient


async def test_a_frontend_tool_waits_for_the_app_then_the_answer_continues(real_clients) -> None:
    async with gateway_in_front() as gw:
        first = await post(gw, "s3", user_body("Please confirm"))
        verdicts = real_clients.check(first.content)
        for major, verdict in verdicts.items():
            assert verdict.ok and verdict.finish_reason == "tool-calls", (major, verdict.fatal)
            (call,) = verdict.parts("tool-confirm")
            assert call["state"] == "input-available" and "providerExecuted" not in call
        # The app runs the tool (addToolOutput) and sends the conversation back.
        message = verdicts[7].message
        assert message is not None
        for part in message["parts"]:
            if part["type"] == "tool-confirm":
                part.update(state="output-available", output="yes")
        body = user_body("Please confirm")
        body["messages"].append({**message, "id": "a1"})
        second = await post(gw, "s3", body)
    assert text_of(decode_sse(second.content)) == "Done: yes."
    for major, verdict in real_clients.check(second.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)


async def test_a_failing_agent_ends_with_its_error(real_clients) -> None:
    async with gateway_in_front() as gw:
        response = await post(gw, "s4", user_body("Please fail"))
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.error_text == "the model is down", (major, verdict)


async def test_plain_text_streams_through() -> None:
    async with gateway_in_front() as gw:
        response = await post(gw, "s5", user_body("hi"))
    chunks = decode_sse(response.content)
    assert text_of(chunks) == "Hello from pydantic-ai."
    assert chunks[0]["messageMetadata"] == {
        "threadId": "s5",
        "runId": chunks[0]["messageMetadata"]["runId"],
    }
    assert types(chunks)[-1] == "finish"


# -- what the live agent does not show -----------------------------------------------------------


def test_chunk_events_legacy_thinking_interrupts_and_bad_patches() -> None:
    turn = new_turn("ag-ui")
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "THINKING_START"},
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "old-style thought"},
        {"type": "THINKING_END"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "Hel"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "lo"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "k1", "toolCallName": "lookup", "delta": '{"a"'},
        {"type": "TOOL_CALL_CHUNK", "delta": ": 1}"},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/missing/x", "value": 1}]},
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "a1",
            "activityType": "search",
            "content": {"n": 1},
        },
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a1",
            "activityType": "search",
            "patch": [{"op": "add", "path": "/n", "value": 2}],
        },
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]},
        },
    ]
    chunks = [c for e in events for c in turn.feed(e)]
    assert of_type(chunks, "reasoning-delta")[0]["delta"] == "old-style thought"
    assert "".join(c["delta"] for c in of_type(chunks, "text-delta")) == "Hello"
    call, question = of_type(chunks, "tool-input-available")
    assert call["input"] == {"a": 1} and "providerExecuted" not in call  # no result: the app's
    assert of_type(chunks, "data-upstream-malformed")[0]["data"]["reason"].startswith("STATE_DELTA")
    assert [a["data"]["content"] for a in of_type(chunks, "data-activity")] == [{"n": 1}, {"n": 2}]
    # an interrupt on no tool call is a question for the app
    assert question["toolName"] == "ask_user" and question["toolCallId"] == "i1"
    assert question["input"] == {"question": "approval", "reason": "approval"}
    assert chunks[-1]["type"] == "finish" and chunks[-1]["finishReason"] == "tool-calls"


def test_a_call_left_without_a_result_waits_for_the_app() -> None:
    turn = new_turn("ag-ui")
    events = [
        {"type": "TOOL_CALL_START", "toolCallId": "x", "toolCallName": "pick_color"},
        {"type": "TOOL_CALL_END", "toolCallId": "x"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    chunks = [c for e in events for c in turn.feed(e)]
    assert chunks[-1]["finishReason"] == "tool-calls"


def test_a_continuation_resumes_the_interrupts_it_answers() -> None:
    """Answers to interrupts go in ``resume``; the ask_user parts stay out of ``messages``; a
    call whose approval is answered goes as a call without a result."""
    from chunkbridge.translators.dialects.ag_ui.request import AgUiSettings, run_input
    from tests.helpers import provider_turn

    assistant = {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "text", "text": "Pick one."},
            {
                "type": "tool-ask_user",
                "toolCallId": "int-region",
                "state": "output-available",
                "input": {"question": "Pick a region"},
                "output": "eu",
            },
            {
                "type": "tool-delete_file",
                "toolCallId": "c4",
                "state": "approval-responded",
                "input": {"path": "/x"},
                "approval": {"id": "int-c4", "approved": False, "reason": "no"},
            },
        ],
    }
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}
    body = run_input(provider_turn(AgUiSettings, [user, assistant], history="full"))
    assert body["resume"] == [
        {"interruptId": "int-region", "status": "resolved", "payload": "eu"},
        {
            "interruptId": "int-c4",
            "status": "resolved",
            "payload": {"approved": False, "reason": "no"},
        },
    ]
    (call_message,) = [m for m in body["messages"] if m.get("toolCalls")]
    assert [c["id"] for c in call_message["toolCalls"]] == ["c4"]  # no ask_user call
    assert not [m for m in body["messages"] if m["role"] == "tool"]


def test_the_history_setting_decides_what_a_run_gets() -> None:
    """AG-UI agents are mostly stateless: a run gets the whole thread unless the deployment sets
    ``history = "latest"`` (an agent that keeps the thread), which sends the newest user message
    alone; the gateway's one ``history`` setting, with the dialect's default."""
    from chunkbridge.gateway.config import GatewayConfig, HistoryMode
    from chunkbridge.gateway.service import Gateway
    from chunkbridge.translators.dialects.ag_ui import DIALECT
    from chunkbridge.translators.dialects.ag_ui.request import AgUiSettings, run_input
    from tests.helpers import provider_turn

    thread = [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "first"}]},
        {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "answer"}]},
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "second"}]},
    ]
    full = run_input(provider_turn(AgUiSettings, thread, history="full"))
    assert [m["id"] for m in full["messages"]] == ["u1", "a1", "u2"]
    latest = run_input(provider_turn(AgUiSettings, thread, history="latest"))
    assert [m["id"] for m in latest["messages"]] == ["u2"]

    assert DIALECT.history == "full"
    upstream = "http://127.0.0.1:9/agent"
    assert Gateway(GatewayConfig(dialect="ag-ui", upstream=upstream)).history == "full"
    chosen = GatewayConfig(dialect="ag-ui", upstream=upstream, history=HistoryMode.LATEST)
    assert Gateway(chosen).history == "latest"
    others = GatewayConfig(dialect="openai-chat", upstream=upstream)
    assert Gateway(others).history == "latest"


def test_an_answer_goes_back_in_steps_under_the_agents_ids() -> None:
    """Each step of a message sent back is one model response: its reasoning, its text and
    calls, its results, in that order, under the ids the agent gave them (kept in the parts'
    provider metadata and, for results, the answer's metadata); a call whose input never was
    JSON goes with ``{}`` and its error as the result, which the model is given as content."""
    from chunkbridge.translators.dialects.ag_ui.request import AgUiSettings, run_input
    from tests.helpers import provider_turn

    def agent(**ids: str) -> dict[str, Any]:
        return {"agUi": ids}

    raw = '{"city": "Par'
    assistant = {
        "id": "a1",
        "role": "assistant",
        "metadata": {"threadId": "t", "toolMessageIds": {"c1": "tool-9"}},
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "Think.", "providerMetadata": agent(messageId="r1")},
            {"type": "text", "text": "Looking.", "providerMetadata": agent(messageId="m1")},
            {
                "type": "tool-get_weather",
                "toolCallId": "c1",
                "state": "output-available",
                "input": {"city": "Paris"},
                "output": "sunny",
                "callProviderMetadata": agent(parentMessageId="m1"),
            },
            {"type": "step-start"},
            {
                "type": "tool-get_weather",
                "toolCallId": "c2",
                "state": "output-error",
                "input": raw,  # ai 7's tool-input-error (ai 5/6: rawInput)
                "errorText": "Invalid JSON",
                "callProviderMetadata": agent(parentMessageId="m2"),
            },
            {"type": "step-start"},
            {"type": "text", "text": "Done.", "providerMetadata": agent(messageId="m3")},
        ],
    }
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather"}]}
    body = run_input(provider_turn(AgUiSettings, [user, assistant], history="full"))
    got = [(m["id"], m["role"], m.get("content"), m.get("toolCalls")) for m in body["messages"]]
    call = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        }
    ]
    bad = [{"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]
    assert got == [
        ("u1", "user", "weather", None),
        ("r1", "reasoning", "Think.", None),
        ("m1", "assistant", "Looking.", call),
        ("tool-9", "tool", "sunny", None),
        ("m2", "assistant", None, bad),
        ("c2-result", "tool", "Invalid JSON", None),
        ("m3", "assistant", "Done.", None),
    ]
    assert body["messages"][5]["error"] == "Invalid JSON"
