"""A gateway tool asks the user (MCP elicitation): the server's question becomes the ``ask_user``
question form a stock ``useChat`` answers; the continuation calls the tool again with the answer
and goes on with the model, which never sees the question. Judged by the real ai 5, 6 and 7
chats; the MCP server is real (``tests/mcp/tools_server.py``'s ``rename``, which asks through
MCP 2026-07-28's input requests)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from chunkbridge.protocol_specs.elicitation import (
    elicitation_question,
    elicitation_response,
    elicitation_signature,
    is_elicitation_question,
)
from tests.conftest import ToolServer
from tests.gateway_harness import post, user_body
from tests.helpers import result_of
from tests.test_agent_loop import Model, agent_gateway, steps_script

RENAME: list[tuple[str, list[Any]]] = [
    ("Renaming.", [("call_ren", "rename", {"file": "a.txt"})]),
    ("Done.", []),
]


def test_answers_become_the_elicitation_result() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert elicitation_response("42", False, schema) == ("accept", {"n": 42})
    assert elicitation_response("forty", False, schema) == ("accept", {"n": "forty"})
    assert elicitation_response({"n": 1}, False, schema) == ("accept", {"n": 1})
    assert elicitation_response("no thanks", True, schema) == ("decline", None)
    flag = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    assert elicitation_response("Yes", False, flag) == ("accept", {"ok": True})
    two = {"type": "object", "properties": {"a": {}, "b": {}}}
    assert elicitation_response("x", False, two) == ("decline", None)  # which one?
    pick = {"type": "object", "properties": {"c": {"type": "string", "enum": ["red", "blue"]}}}
    form = elicitation_question("Color?", pick, {"toolCallId": "t"})
    assert form["options"] == ["red", "blue"]
    assert is_elicitation_question("ask_user", form)
    assert not is_elicitation_question("ask_user", {"question": "Color?"})
    signed = elicitation_signature("k", "t-ask", form)
    altered = copy.deepcopy(form)
    altered["elicitation"]["toolCallId"] = "other"
    assert elicitation_signature("k", "t-ask", altered) != signed
    assert elicitation_signature("k2", "t-ask", form) != signed
    # what a JavaScript client writes back (1.0 as 1, 2.50 as 2.5) still verifies
    floats = elicitation_question("Wait?", {"minimum": 0.0}, {"arguments": {"s": 1.0, "t": 2.50}})
    as_js = elicitation_question("Wait?", {"minimum": 0}, {"arguments": {"s": 1, "t": 2.5}})
    assert elicitation_signature("k", "t-ask", floats) == elicitation_signature("k", "t-ask", as_js)


@pytest.mark.parametrize("major", [5, 6, 7])
async def test_a_tool_asks_the_user_and_goes_on_with_the_answer(
    major: int, tool_server: ToolServer, real_clients: Any
) -> None:
    model = Model(steps_script("anthropic-messages", RENAME))
    tools = tool_server.settings()
    async with agent_gateway(model, "anthropic-messages", tools, target=major) as base:
        api = f"{base}/api/sessions/s-{major}/chat"
        answers = [{"kind": "question", "output": "b.txt"}]
        # sent by sendAutomaticallyWhen: the waiting tool part counts as answered
        result = await real_clients.chat_loop(api, major, "rename a.txt", answers, auto=True)
        again = await post(base, f"s-{major}", result["requests"][-1])
    assert result["error"] is None and result["status"] == "ready", result
    assert len(result["requests"]) == 2
    assert again.status_code == 409  # the question was answered once
    message = result["messages"][-1]
    tools = {p.get("toolName") or p["type"]: p for p in message["parts"] if "toolCallId" in p}
    rename, asked = tools["rename"], tools["tool-ask_user"]
    assert rename["state"] == "output-available" and not rename.get("preliminary")
    assert result_of(rename["output"]) == {"result": "renamed a.txt to b.txt"}
    assert asked["toolCallId"].startswith("call_ren-ask-") and asked["output"] == "b.txt"
    assert asked["input"]["question"] == "New name for a.txt?"
    texts = [p["text"] for p in message["parts"] if p["type"] == "text"]
    assert texts == ["Renaming.", "Done."]
    # the model was called twice; the second time with the result, never with the question
    assert len(model.requests) == 2
    heard = orjson.dumps(model.requests[1]["messages"])
    assert b"renamed a.txt to b.txt" in heard
    assert b"ask_user" not in heard and b"New name" not in heard
    metadata = message["metadata"]["agentLoop"]
    assert metadata["ending"] == "done"


async def test_an_altered_question_is_refused_and_a_declined_one_reaches_the_tool(
    tool_server: ToolServer, real_clients: Any
) -> None:
    model = Model(steps_script("anthropic-messages", RENAME))
    tools = tool_server.settings()
    async with agent_gateway(model, "anthropic-messages", tools, target=7) as base:
        first = await post(base, "s1", user_body("rename a.txt", id="c1"))
        verdict = real_clients.check(first.content, (7,))[7]
        assert verdict.ok and verdict.finish_reason == "tool-calls", verdict.fatal
        assert verdict.message["metadata"]["agentLoop"]["ending"] == "app-tools"
        message = verdict.message
        (ask,) = [p for p in message["parts"] if p["type"] == "tool-ask_user"]
        waiting = [p for p in message["parts"] if p.get("toolName") == "rename"]
        assert waiting[0]["preliminary"] is True
        assert waiting[0]["output"] == {"question": "New name for a.txt?"}

        def continuation(part: dict[str, Any]) -> dict[str, Any]:
            parts = [part if p is ask else p for p in message["parts"]]
            body = user_body("rename a.txt", id="c1")
            body["messages"].append({**message, "parts": parts})
            return body

        tampered = copy.deepcopy(ask)
        tampered["input"]["elicitation"]["arguments"] = {"file": "secret.txt"}
        tampered.update(state="output-available", output="b.txt")
        refused = await post(base, "s1", continuation(tampered))
        declined = {**ask, "state": "output-error", "errorText": "not now"}
        body = continuation(declined)
        answered = await post(base, "s1", body)
    assert refused.status_code == 400, refused.text
    assert answered.status_code == 200, answered.text
    verdict = real_clients.check(answered.content, (7,), body["messages"][-1])[7]
    assert verdict.ok, verdict.fatal
    (rename,) = [p for p in verdict.message["parts"] if p.get("toolName") == "rename"]
    assert rename["state"] == "output-error"  # the server's answer to a declined question
    assert len(model.requests) == 2  # the model heard of it and answered


async def test_a_tool_with_two_questions_asks_them_in_turn(
    tool_server: ToolServer, real_clients: Any
) -> None:
    script = [("", [("call_mv", "move", {"file": "a.txt"})]), ("Moved.", [])]
    model = Model(steps_script("openai-chat", script))
    async with agent_gateway(model, "openai-chat", tool_server.settings(), target=7) as base:
        api = f"{base}/api/sessions/s1/chat"
        answers = [{"kind": "question", "output": "b.txt"}, {"kind": "question", "output": "docs"}]
        result = await real_clients.chat_loop(api, 7, "move a.txt", answers, auto=True)
    assert result["error"] is None and result["status"] == "ready", result
    assert len(result["requests"]) == 3  # one question per request
    message = result["messages"][-1]
    asks = [p for p in message["parts"] if p["type"] == "tool-ask_user"]
    assert [p["input"]["question"] for p in asks] == [
        "New name for a.txt?",
        "Which folder for a.txt?",
    ]
    assert [p["output"] for p in asks] == ["b.txt", "docs"]
    assert len({p["toolCallId"] for p in asks}) == 2
    (move,) = [p for p in message["parts"] if p.get("toolName") == "move"]
    assert result_of(move["output"]) == {"result": "moved a.txt to docs/b.txt"}
    assert len(model.requests) == 2  # the model goes on only once the tool is done
