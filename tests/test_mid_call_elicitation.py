"""A server of MCP 2025-11-25 asks the user in the middle of a call (``elicitation/create``): the
call is parked with its question, the turn ends at the ``ask_user`` question as for a 2026-07-28
server, and the continuation's answer reaches the waiting server, whose result goes on to the
model. The server is the MCP project's own (server-everything, npm, its
``trigger-elicitation-request`` tool), the chat the real ai 5, 6 and 7."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools import ToolAnswer, ToolSources
from chunkbridge.gateway.tools.mid_call import KEY_PREFIX
from chunkbridge.protocol_specs.elicitation import elicitation_question
from tests.mcp.everything import everything_over, everything_stdio
from tests.test_agent_loop import Model, agent_gateway, steps_script

ASK: list[tuple[str, list[Any]]] = [
    ("I need your details.", [("call_e", "trigger-elicitation-request", {})]),
    ("Thanks, Ada.", []),
]


async def test_a_parked_call_gets_its_answer_and_a_timed_out_one_is_declined() -> None:
    settings = ToolServerSettings(**everything_stdio(elicitation_timeout=0.5))
    sources = ToolSources({"everything": settings})
    await sources.start()
    try:
        asked = await sources.call("trigger-elicitation-request", {})
        assert asked.asks is not None and asked.asks.key.startswith(KEY_PREFIX)
        assert "name" in asked.asks.schema["properties"]
        answer = ToolAnswer(asked.asks.key, "accept", {"name": "Ada"}, None)
        done = await sources.call("trigger-elicitation-request", {}, answer=answer)
        again = await sources.call("trigger-elicitation-request", {}, answer=answer)
        late = await sources.call("trigger-elicitation-request", {})
        assert late.asks is not None
        await asyncio.sleep(1.0)  # past elicitation_timeout: declined, the server told
        gone = ToolAnswer(late.asks.key, "accept", {"name": "Bo"}, None)
        expired = await sources.call("trigger-elicitation-request", {}, answer=gone)
    finally:
        await sources.aclose()
    assert done.error is None, done
    text = orjson.dumps(done.output).decode()
    assert "User provided the requested information" in text and "Ada" in text
    assert again.error is not None and "no longer waits" in again.error  # answered once
    assert expired.error is not None and "no longer waits" in expired.error


@pytest.mark.parametrize(
    ("major", "transport"), [(5, "stdio"), (6, "stdio"), (7, "stdio"), (7, "http")]
)
async def test_the_user_answers_a_2025_11_25_servers_question_through_the_chat(
    major: int, transport: str, real_clients: Any
) -> None:
    model = Model(steps_script("anthropic-messages", ASK))
    with everything_over(transport, approval="never") as server:
        async with agent_gateway(
            model, "anthropic-messages", {"everything": server}, target=major
        ) as base:
            api = f"{base}/api/sessions/s-{major}/chat"
            answers = [{"kind": "question", "output": {"name": "Ada"}}]
            result = await real_clients.chat_loop(api, major, "sign me up", answers, auto=True)
    assert result["error"] is None and result["status"] == "ready", result
    message = result["messages"][-1]
    (call,) = [p for p in message["parts"] if p.get("toolName") == "trigger-elicitation-request"]
    assert call["state"] == "output-available" and not call.get("preliminary"), call
    assert "Name: Ada" in orjson.dumps(call["output"]).decode()
    texts = [p["text"] for p in message["parts"] if p["type"] == "text"]
    assert texts[-1] == "Thanks, Ada."
    assert len(model.requests) == 2  # the model heard the result, never the question
    heard = orjson.dumps(model.requests[1]).decode()
    assert "Name: Ada" in heard and "ask_user" not in heard


async def test_a_url_to_open_is_asked_as_a_choice_and_answered_as_the_users() -> None:
    sources = ToolSources({"everything": ToolServerSettings(**everything_stdio())})
    await sources.start()
    page = {"url": "https://example.com/sign-in"}
    try:
        asked = await sources.call("trigger-url-elicitation", page)
        assert asked.asks is not None, asked
        opened = ToolAnswer(asked.asks.key, "accept", {"choice": "opened"}, None)
        done = await sources.call("trigger-url-elicitation", page, answer=opened)
        asked_again = await sources.call("trigger-url-elicitation", page)
        assert asked_again.asks is not None
        no = ToolAnswer(asked_again.asks.key, "accept", {"choice": "declined"}, None)
        declined = await sources.call("trigger-url-elicitation", page, answer=no)
    finally:
        await sources.aclose()
    assert "https://example.com/sign-in" in asked.asks.message  # the question shows the URL
    form = elicitation_question(asked.asks.message, asked.asks.schema, {})
    assert form["options"] == ["opened", "declined"]
    assert "User completed the URL elicitation flow" in orjson.dumps(done.output).decode()
    assert "declined to open the URL" in orjson.dumps(declined.output).decode()
