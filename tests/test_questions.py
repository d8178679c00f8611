"""An agent's question answered through useChat (issue: human in the loop, item 1): the question
becomes a client-side ``ask_user`` tool call, the app answers with addToolOutput, the next request
sends the answer frame upstream and the continuation streams into the same assistant message —
for the real ai 5, 6 and 7 clients."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.asyncio.server import ServerConnection

from chunkbridge.kit import FrameTemplates, NoSettings, TurnInput, build_frames
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.translators.dialects.agent_ops_v2 import DIALECT
from tests.gateway_harness import ScriptedUpstream, post, running_gateway, user_body
from tests.helpers import decode_sse, provider_turn


async def asking_agent(ws: ServerConnection, up: ScriptedUpstream, session: str) -> None:
    first = up.received[session][-1]
    if first.get("type") == "answer":
        turn = "t2"
        events: list[Any] = [
            {"type": "message.create", "turnId": turn},
            {
                "type": "message.part.text-delta",
                "turnId": turn,
                "delta": f"Deploying: {first['answer']}.",
            },
            {"type": "message.finalize", "turnId": turn, "reason": "end_turn"},
            {"type": "complete"},
        ]
    else:
        turn = "t1"
        events = [
            {"type": "message.create", "turnId": turn},
            {"type": "message.part.text-delta", "turnId": turn, "delta": "One question first."},
            {
                "type": "question",
                "questionId": "q1",
                "question": "Deploy?",
                "options": ["yes", "no"],
            },
        ]
    for event in events:
        await up.send(ws, session, event)
    await ws.wait_closed()  # the agent waits; the gateway closes after the turn


@pytest.mark.conformance
async def test_a_question_is_answered_and_the_agent_continues_in_the_same_message(
    real_clients,
) -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = asking_agent
        async with running_gateway(upstream=upstream.url) as (gw, _):
            first = await post(gw, "s1", user_body("deploy it"))
            asked = real_clients.check(first.content)
            for major, verdict in asked.items():
                assert verdict.ok and verdict.finish_reason == "tool-calls", (major, verdict.fatal)
                (call,) = verdict.parts("tool-ask_user")
                assert call["state"] == "input-available" and call["toolCallId"] == "q1"
                assert call["input"]["question"] == "Deploy?"
            # The app answers (addToolOutput) and sends the conversation back (ai 7's message).
            message = asked[7].message
            assert message is not None and message["id"]
            answered = {
                **message,
                "parts": [
                    {**p, "state": "output-available", "output": "yes"}
                    if p["type"] == "tool-ask_user"
                    else p
                    for p in message["parts"]
                ],
            }
            body = user_body("deploy it")
            body["messages"].append(answered)
            second = await post(gw, "s1", body)
    answers = [f for f in upstream.received["s1"] if f.get("type") == "answer"]
    assert answers == [{"type": "answer", "questionId": "q1", "answer": "yes"}]  # exactly one
    assert not upstream.aborted("s1")  # the question's turn ended without the abort frame
    chunks = decode_sse(second.content)
    assert chunks[0]["messageId"] == message["id"]  # continues the same assistant message
    for major, verdict in real_clients.check(second.content, message=answered).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
        parts = (verdict.message or {})["parts"]
        texts = [p["text"] for p in parts if p["type"] == "text"]
        assert texts == ["One question first.", "Deploying: yes."], (major, parts)
        (call,) = [p for p in parts if p["type"] == "tool-ask_user"]
        assert call["state"] == "output-available" and call["output"] == "yes"


def test_the_answer_frame_is_templatable_and_absent_without_an_answer() -> None:
    assert DIALECT.websocket is not None
    asked = {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {
                "type": "tool-ask_user",
                "toolCallId": "q9",
                "state": "output-error",
                "input": {},
                "errorText": "I'd rather not say",
            },
        ],
    }
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}
    turn = provider_turn(NoSettings, [user, asked])
    frames = build_frames(DIALECT.websocket, turn)
    assert frames.prompt == {
        "type": "answer",
        "questionId": "q9",
        "answer": "I'd rather not say",
        "error": True,
    }
    templates = FrameTemplates(answer={"op": "reply", "to": "{question_id}", "value": "{answer}"})
    assert build_frames(DIALECT.websocket, turn, templates).prompt == {
        "op": "reply",
        "to": "q9",
        "value": "I'd rather not say",
    }
    fresh = build_frames(DIALECT.websocket, provider_turn(NoSettings, [user]))
    assert fresh.prompt["type"] == "prompt"


def test_answers_of_earlier_steps_are_history_and_full_history_rides_on_the_first_frame() -> None:
    """Only the last step's answers are new (earlier ones were delivered by an earlier
    continuation); several answers are one frame each; ``history = "full"`` adds ``messages``."""
    assert DIALECT.websocket is not None

    def asked(call_id: str, output: str) -> dict:
        return {
            "type": "tool-ask_user",
            "toolCallId": call_id,
            "state": "output-available",
            "input": {"question": "?"},
            "output": output,
        }

    message = {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            asked("q1", "old"),
            {"type": "step-start"},
            {"type": "text", "text": "two more"},
            asked("q2", "yes"),
            asked("q3", "no"),
        ],
    }
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}
    request = provider_turn(NoSettings, [user, message]).request
    frames = build_frames(DIALECT.websocket, TurnInput(request, "s1", "r1", None, "full"))
    assert [(f["questionId"], f["answer"]) for f in frames.prompts] == [("q2", "yes"), ("q3", "no")]
    assert [m["id"] for m in frames.prompts[0]["messages"]] == ["u1", "a1"]
    assert "messages" not in frames.prompts[1]
    latest = build_frames(DIALECT.websocket, TurnInput(request, "s1", "r1", None, "latest"))
    assert "messages" not in latest.prompts[0]


# -- a question is answered once (issue 22, item 3) ----------------------------------------------


def answered_continuation(first: bytes, answer: Any) -> dict[str, Any]:
    """The request an app sends after answering the question in the ``first`` response."""
    chunks = decode_sse(first)
    question = next(c for c in chunks if c["type"] == "tool-input-available")
    message = {
        "id": chunks[0]["messageId"],
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-ask_user",
                "toolCallId": question["toolCallId"],
                "state": "output-available",
                "input": question["input"],
                "output": answer,
            },
        ],
    }
    body = user_body("deploy it")
    body["messages"].append(message)
    return body


async def test_a_replayed_answer_is_refused_and_the_agent_hears_one_answer() -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = asking_agent
        async with running_gateway(upstream=upstream.url, question_settle=0.05) as (gw, _):
            first = await post(gw, "s1", user_body("deploy it"))
            continuation = answered_continuation(first.content, "yes")
            answered = await post(gw, "s1", continuation)
            replayed = await post(gw, "s1", continuation)
            # Another answer to the same question is a replay too.
            changed = await post(gw, "s1", answered_continuation(first.content, "no"))
    assert answered.status_code == 200
    assert b"Deploying: yes." in answered.content
    assert replayed.status_code == changed.status_code == 409
    assert replayed.text == "This question was already answered."
    answers = [f for f in upstream.received["s1"] if f.get("type") == "answer"]
    assert answers == [{"type": "answer", "questionId": "q1", "answer": "yes"}]
    assert len(upstream.received["s1"]) == 2  # the prompt and one answer: no third socket


async def test_an_answer_to_a_question_nobody_waits_for_is_refused_at_once() -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = asking_agent
        async with running_gateway(upstream=upstream.url, question_settle=5) as (gw, _):
            # The client gives up while the agent may still go on: the abort frame goes up,
            # the agent stops waiting, and its question is not answerable any more.
            with pytest.raises(httpx.ReadTimeout):
                await post(gw, "gone", user_body("deploy it"), read_timeout=0.5)
            for _ in range(100):
                if upstream.aborted("gone"):
                    break
                await asyncio.sleep(0.02)
            first = await post(gw, "s2", user_body("deploy it"))  # the same question, answered
            body = answered_continuation(first.content, "yes")
            loop = asyncio.get_running_loop()
            started = loop.time()
            refused = await post(gw, "gone", body)
            took = loop.time() - started
    assert upstream.aborted("gone")
    assert refused.status_code == 400 and "not waiting for an answer" in refused.text
    assert took < 2  # a clear answer, not a wait for the agent's first event
    assert not [f for f in upstream.received["gone"] if f.get("type") == "answer"]


# -- frame templates never rewrite the user's words (issue 22, item 6) ---------------------------

TEMPLATES = FrameTemplates(
    prompt={"op": "ask", "text": "{text}", "session": "{session_id}", "run": "run {run_id}"},
    answer={"op": "reply", "to": "{question_id}", "value": "{answer}", "note": "{text}!"},
)


def template_turn(text: str, session_id: str = "s1") -> TurnInput:
    body = user_body(text)
    return TurnInput(ChatRequest.model_validate(body), session_id, "r1", NoSettings())


def test_a_prompt_naming_placeholders_reaches_the_upstream_unchanged() -> None:
    frames = build_frames(
        DIALECT.websocket, template_turn("use {session_id} and {text}"), TEMPLATES
    )
    assert frames.prompt == {
        "op": "ask",
        "text": "use {session_id} and {text}",
        "session": "s1",
        "run": "run r1",
    }


@given(text=st.text(alphabet=st.sampled_from('{}_abcdefghijklmnopqrstuvwxyz é😀\\"$%1')))
@settings(max_examples=300, deadline=None)
def test_any_user_text_with_any_braces_arrives_byte_identical(text: str) -> None:
    frames = build_frames(DIALECT.websocket, template_turn(text, "s{text}"), TEMPLATES)
    assert frames.prompt["text"] == text
    assert frames.prompt["session"] == "s{text}"
    assert orjson.loads(orjson.dumps(frames.prompt))["text"].encode() == text.encode()
