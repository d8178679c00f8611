"""The AI SDK 7 WebSocketChatTransport endpoint, driven by the real transport (Node, `ws`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.conformance.harness import run_script
from tests.gateway_harness import ScriptedUpstream, events, post, running_gateway, user_body
from tests.helpers import decode_sse, text_of
from tests.test_resume import EXPECTED, read_until, slow_turn


def messages(text: str) -> list[dict[str, Any]]:
    return [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}]


async def run_transport(url: str, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    payload = {"url": url, "steps": steps}
    result: list[dict[str, Any]] = await asyncio.to_thread(run_script, "ws_client.mjs", payload, 60)
    return result


def ws_url(gw: str, session: str) -> str:
    return gw.replace("http://", "ws://") + f"/api/sessions/{session}/chat/ws"


@pytest.mark.conformance
async def test_send_multiplexed_requests_and_a_resume_over_one_socket(real_clients) -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = events(*slow_turn(0.01))
        async with running_gateway(
            upstream=upstream.url, resume="memory", max_turns_per_session=2
        ) as (gw, _):
            reference = await post(gw, "ref", user_body("hi"))
            results = await run_transport(
                ws_url(gw, "s1"),
                [
                    {"action": "send", "chatId": "a", "messages": messages("one")},
                    {
                        "action": "send",
                        "chatId": "b",
                        "messages": messages("two"),
                        "parallel": True,
                    },
                    {"action": "resume", "chatId": "a"},
                    {"action": "resume", "chatId": "never"},
                ],
            )
    expected = real_clients.check(reference.content)[7].message
    assert expected is not None
    for result in results[:3]:
        assert result.get("failure") is None, result
        assert result["finishReason"] == "stop"
        assert result["message"]["parts"] == expected["parts"]
    assert results[3].get("noActive") is True


@pytest.mark.conformance
async def test_a_turn_started_over_http_resumes_over_the_socket_and_the_reverse() -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = events(*slow_turn(0.03))
        async with running_gateway(upstream=upstream.url, resume="memory") as (gw, _):
            await read_until(gw, "s2", b'"w3 "', user_body("hi"))  # HTTP, dropped
            (over_ws,) = await run_transport(
                ws_url(gw, "s2"), [{"action": "resume", "chatId": "chat1"}]
            )
            # WebSocket, stopped by the client after a few chunks (abort frame): the turn stops
            (stopped,) = await run_transport(
                ws_url(gw, "s3"),
                [{"action": "send", "chatId": "c3", "messages": messages("x"), "stopAfter": 5}],
            )
            await asyncio.sleep(0.3)
            async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
                after = await client.get(f"{gw}/api/sessions/s3/chat/c3/stream")
    assert "".join(p.get("text", "") for p in over_ws["message"]["parts"]) == EXPECTED
    assert upstream.aborted("s3")
    text = text_of(decode_sse(after.content))
    assert len(text) < len(EXPECTED)  # the log ends where the stop ended the turn


async def test_tokens_by_query_cookie_or_subprotocol_and_refusals() -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = events(*slow_turn(0))
        settings = {"auth": "bearer-forward"}  # a bearer token is required (and forwarded)
        async with running_gateway(upstream=upstream.url, **settings) as (gw, _):
            base = ws_url(gw, "s4")
            async with connect(base + "?token=t0k3n") as ws:
                await ws.send(json.dumps({"type": "resume", "requestId": "r1", "id": "x"}))
                assert json.loads(await ws.recv()) == {"type": "no-active", "requestId": "r1"}
            async with connect(base, subprotocols=["bearer.t0k3n"]) as ws:  # type: ignore[list-item]
                assert ws.subprotocol == "bearer.t0k3n"
            with pytest.raises(InvalidStatus):  # no token at all: refused before accepting
                async with connect(base) as ws:
                    await ws.recv()
            async with connect(base + "?token=t0k3n") as ws:
                await ws.send("not json")
                with pytest.raises(ConnectionClosed):
                    await ws.recv()
                assert ws.close_code == 1003


@pytest.mark.conformance
async def test_an_approval_answered_over_the_socket_continues_the_message() -> None:
    """The two-request sequence on the ai 7 WebSocket transport: the approval request, then the
    continuation carrying the decision (the demo's agent-ops backend)."""
    from chunkbridge.gateway.devtools.upstreams import DemoUpstream
    from chunkbridge.translators.dialects.agent_ops_v2.demo import demo_turn

    demo = DemoUpstream(demo_turn)
    await demo.start()
    try:
        async with running_gateway(upstream=demo.url_template, target=7) as (gw, _):
            first = messages("approve")
            (asked,) = await run_transport(
                ws_url(gw, "ws-a"), [{"action": "send", "chatId": "c", "messages": first}]
            )
            assert asked["finishReason"] == "tool-calls", asked
            message = asked["message"]
            (tool,) = [p for p in message["parts"] if p["type"] == "tool-delete_branch"]
            assert tool["state"] == "approval-requested"
            tool["state"] = "approval-responded"  # what addToolApprovalResponse does
            tool["approval"] |= {"approved": True}
            (done,) = await run_transport(
                ws_url(gw, "ws-a"),
                [
                    {
                        "action": "send",
                        "chatId": "c",
                        "messages": [*first, message],
                        "continues": message,
                    }
                ],
            )
    finally:
        await demo.aclose()
    assert done.get("failure") is None and done["finishReason"] == "stop", done
    (tool,) = [p for p in done["message"]["parts"] if p["type"] == "tool-delete_branch"]
    assert tool["state"] == "output-available", tool
    assert [f["type"] for f in demo.received["ws-a"]] == ["prompt", "approval"]
