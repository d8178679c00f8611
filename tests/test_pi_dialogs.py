"""pi's human in the loop (RPC ``extension_ui_request``) through the real AI SDK chat: a
``confirm`` on a running tool call is that call's approval, a ``select`` is a question; the app's
answer goes back as one ``extension_ui_response`` and the rest of the run streams into the same
message. The upstream is a scripted pi RPC bridge that keeps the session across sockets (the
recorded events of ``fixtures/pi-agent``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection

from chunkbridge.kit import NoSettings, build_frames
from chunkbridge.translators.dialects.pi_agent import DIALECT
from tests.gateway_harness import ScriptedUpstream, running_gateway
from tests.helpers import chat_reply, provider_turn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pi-agent"


def recorded(name: str) -> list[dict[str, Any]]:
    lines = (FIXTURES / f"{name}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def rest_of_run(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """What pi sends once the dialog is answered (the tool runs if confirmed)."""
    if "confirmed" in answer:
        ok = answer["confirmed"]
        text = "Cleaned." if ok else "Not cleaned."
        result = {"content": [{"type": "text", "text": "removed build" if ok else "denied"}]}
        head: list[dict[str, Any]] = [
            {
                "type": "tool_execution_end",
                "toolCallId": "call_rm",
                "toolName": "bash",
                "result": result,
                "isError": not ok,
            },
            {"type": "turn_end"},
            {"type": "turn_start"},
        ]
    else:
        text, head = f" Going with {answer.get('value')}.", []
    message = {"role": "assistant", "content": [], "stopReason": "stop"}
    return [
        *head,
        {"type": "message_start", "message": message},
        {
            "type": "message_update",
            "assistantMessageEvent": {"type": "text_start", "contentIndex": 0},
        },
        {
            "type": "message_update",
            "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": text},
        },
        {"type": "message_end", "message": message},
        {"type": "turn_end"},
        {"type": "agent_end", "messages": []},
    ]


def pi_bridge(first_run: str):
    async def script(ws: ServerConnection, up: ScriptedUpstream, session: str) -> None:
        frame = up.received[session][-1]
        events = (
            rest_of_run(frame) if frame["type"] == "extension_ui_response" else recorded(first_run)
        )
        for event in events:
            await up.send(ws, session, event)
        await ws.wait_closed()

    return script


@pytest.mark.conformance
@pytest.mark.parametrize(("major", "approved"), [(5, True), (6, False), (7, True)])
async def test_a_confirm_on_a_running_tool_is_its_approval(
    real_clients: Any, major: int, approved: bool
) -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = pi_bridge("confirm-before-tool")
        async with running_gateway(upstream=upstream.url, dialect="pi-agent", target=major) as (
            gw,
            _,
        ):
            api = f"{gw}/api/sessions/p{major}/chat"
            answer = {"kind": "approval", "approved": approved}
            result = await real_clients.chat_loop(api, major, "clean the build", [answer])
    parts = chat_reply(result)["parts"]
    (tool,) = [p for p in parts if p["type"] == "tool-bash"]
    if approved:
        assert tool["state"] == "output-available", tool
    elif major >= 6:
        assert tool["state"] == "output-denied", tool
    responses = [f for f in upstream.received[f"p{major}"] if f["type"] == "extension_ui_response"]
    assert responses == [{"type": "extension_ui_response", "id": "ui-7", "confirmed": approved}]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts[-1] == ("Cleaned." if approved else "Not cleaned.")


@pytest.mark.conformance
async def test_a_select_dialog_is_a_question_answered_with_its_value(real_clients: Any) -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = pi_bridge("select-question-and-notify")
        async with running_gateway(upstream=upstream.url, dialect="pi-agent", target=7) as (gw, _):
            api = f"{gw}/api/sessions/sel/chat"
            answers = [{"kind": "question", "output": "rebase"}]
            result = await real_clients.chat_loop(api, 7, "merge my branch", answers)
    parts = chat_reply(result)["parts"]
    (question,) = [p for p in parts if p["type"] == "tool-ask_user"]
    assert question["input"]["options"] == ["rebase", "merge"]
    assert [p["text"] for p in parts if p["type"] == "text"][-1] == " Going with rebase."
    assert [f for f in upstream.received["sel"] if f["type"] == "extension_ui_response"] == [
        {"type": "extension_ui_response", "id": "ui-2", "value": "rebase"}
    ]


def test_dialog_answers_become_rpc_responses() -> None:
    def answered(output: Any, method: str, state: str = "output-available") -> list[Any]:
        part = {
            "type": "tool-ask_user",
            "toolCallId": "ui-9",
            "state": state,
            "input": {"question": "?", "method": method},
            **({"output": output} if state == "output-available" else {"errorText": output}),
        }
        user = {"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
        assistant = {"id": "a", "role": "assistant", "parts": [part]}
        return build_frames(DIALECT.websocket, provider_turn(NoSettings, [user, assistant])).prompts

    base = {"type": "extension_ui_response", "id": "ui-9"}
    assert answered("yes", "confirm") == [{**base, "confirmed": True}]
    assert answered(False, "confirm") == [{**base, "confirmed": False}]
    assert answered("maybe", "confirm") == [{**base, "cancelled": True}]
    assert answered("some text", "editor") == [{**base, "value": "some text"}]
    assert answered({"a": 1}, "input") == [{**base, "value": '{"a":1}'}]
    assert answered("declined", "select", "output-error") == [{**base, "cancelled": True}]
