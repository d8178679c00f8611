"""``busy = steer`` on a pi agent backend, through pi's own ``steer`` command: the real pi
upstream (pi-agent-core's ``Agent`` behind pi's RPC commands on a socket,
``tests/conformance/pi_upstream.mjs``) and the live gateway — one process, and two real gateway
processes sharing a real redis-server.

A message sent while pi runs goes to the running agent on the turn's own socket; pi takes it
after the turn's tool batch (or after a plain answer), as a user message before its next model
call. The first stream ends there (``steeredBy``), the second — on whichever instance it
reached — carries the rest of the run as its answer. The upstream's count of prompts proves
it was one run, not a second prompt; its faux model answers the steered text, so the model
was called with it after the tool's result. Every stream is judged by the real ai 5, 6 and 7
clients."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.gateway_harness import free_port
from tests.helpers import decode_sse, text_of, until
from tests.test_busy_one_instance import queue_positions
from tests.test_gateway_process import processes
from tests.test_pi_agent import pi_upstream
from tests.test_pi_agent_socket import Pending, chat, socket_gateway

pytestmark = pytest.mark.conformance


def ending(body: bytes) -> dict[str, Any]:
    finish: dict[str, Any] = [c for c in decode_sse(body) if c["type"] == "finish"][-1]
    return finish


def start_id(body: bytes) -> str:
    return str(next(c for c in decode_sse(body) if c["type"] == "start")["messageId"])


async def upstream_stats(base: str) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=5, trust_env=False) as client:
        stats: dict[str, Any] = (await client.get(base)).json()
        return stats


def judged(real_clients: Any, body: bytes, finish_reason: str) -> None:
    for major, verdict in real_clients.check(body).items():
        assert verdict.ok and verdict.finish_reason == finish_reason, (major, verdict.fatal)


async def steer_during_the_tool(first_gw: str, second_gw: str) -> tuple[Pending, Pending]:
    """The weather run (a slow tool); ``Rome instead`` sent once the tool's input is shown."""
    first = Pending(first_gw, "w1", chat("slow weather please"))
    await until(lambda: b"tool-input-available" in first.content, 10)
    second = Pending(second_gw, "w1", chat("slow weather please", "Rome instead"))
    await asyncio.wait_for(asyncio.gather(first.task, second.task), 30)
    return first, second


def assert_steered(first: Pending, second: Pending) -> None:
    """The first answer ends after the tool's result, steered by the second message; the second
    answer is the model's answer to it, the rest of the same run."""
    assert (first.status_code, second.status_code) == (200, 200)
    finish = ending(first.content)
    assert finish["finishReason"] == "tool-calls"
    assert finish["messageMetadata"]["steeredBy"] == "u1"
    outputs = [
        c["output"]
        for c in decode_sse(first.content)
        if c["type"] == "tool-output-available" and not c.get("preliminary")
    ]
    assert [o["content"][0]["text"] for o in outputs] == ["sunny in slow"]
    assert text_of(decode_sse(first.content)) == ""  # no answer yet: the steer came first
    chunks = decode_sse(second.content)
    assert text_of(chunks) == "You said: Rome instead"
    assert queue_positions(chunks) == [1, 0]
    assert {c["messageId"] for c in chunks if c["type"] == "start"} == {start_id(second.content)}
    assert "steeredBy" not in (ending(second.content).get("messageMetadata") or {})


async def test_a_message_sent_while_a_tool_runs_steers_the_pi_run(real_clients, capsys) -> None:
    async with socket_gateway(busy="steer", resume="memory", keepalive_interval=0.3) as (gw, up):
        first, second = await steer_during_the_tool(gw, gw)
        stats = await upstream_stats(up)
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            resumed = await client.get(f"{gw}/api/sessions/w1/chat/chat1/stream")
    assert stats["runs"] == 1  # one prompt: the message went into the running run
    assert_steered(first, second)
    assert start_id(resumed.content) == start_id(second.content)  # the chat's newest answer
    assert text_of(decode_sse(resumed.content)) == "You said: Rome instead"
    out = capsys.readouterr().out
    assert out.count("busy.steer_sent") == 1 and "busy.steer_as_queue" not in out
    judged(real_clients, first.content, "tool-calls")
    judged(real_clients, second.content, "stop")


async def test_a_steer_during_a_plain_answer_lands_after_it(real_clients) -> None:
    """No tool: pi asks for steering once the answer is done, and goes on with the message."""
    async with socket_gateway(busy="steer", resume="memory", keepalive_interval=0.3) as (gw, up):
        first = Pending(gw, "w2", chat("a long one"))
        await until(lambda: b"text-delta" in first.content, 10)
        second = Pending(gw, "w2", chat("a long one", "and then?"))
        await asyncio.wait_for(asyncio.gather(first.task, second.task), 30)
        stats = await upstream_stats(up)
    assert stats["runs"] == 1
    finish = ending(first.content)
    assert finish["finishReason"] == "stop" and finish["messageMetadata"]["steeredBy"] == "u1"
    assert text_of(decode_sse(first.content)) == "word " * 2000  # the whole first answer
    assert text_of(decode_sse(second.content)) == "You said: and then?"
    judged(real_clients, first.content, "stop")
    judged(real_clients, second.content, "stop")


async def test_a_message_pi_cannot_take_as_a_steer_waits_as_queued(capsys) -> None:
    """A file pi cannot carry: no steer goes out; the message waits for the run's end and is
    then refused as its own prompt would be (an error the client shows)."""
    pdf = {"type": "file", "mediaType": "application/pdf", "url": "data:application/pdf;base64,"}
    payload = chat("slow weather please", "this file")
    payload["messages"][1]["parts"].append(pdf)
    async with socket_gateway(busy="steer", resume="memory", keepalive_interval=0.3) as (gw, up):
        first = Pending(gw, "w3", chat("slow weather please"))
        await until(lambda: b"tool-input-available" in first.content, 10)
        second = Pending(gw, "w3", payload)
        await asyncio.wait_for(asyncio.gather(first.task, second.task), 30)
        stats = await upstream_stats(up)
    assert stats["runs"] == 1  # the first run only: the second was refused before its prompt
    assert text_of(decode_sse(first.content)) == "Done: sunny in slow."
    assert "steeredBy" not in (ending(first.content).get("messageMetadata") or {})
    errors = [c["errorText"] for c in decode_sse(second.content) if c["type"] == "error"]
    assert errors and "images only" in errors[0]
    out = capsys.readouterr().out
    assert "busy.steer_sent" not in out and out.count("busy.steer_as_queue") == 1


async def test_over_the_websocket_transport_a_steer_sent_at_once_is_taken_at_the_first_check() -> (
    None
):
    """ai 7's WebSocketChatTransport, both sends at once on one socket: pi takes the steer at
    its first check — before its first model call (the first answer ends empty) or, when the
    steer comes a moment later, after the weather tool's batch; either way the first answer is
    steered by the second message and the second carries the rest of the one run."""
    from tests.test_chat_socket import run_transport, ws_url

    second = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Rome instead"}]}
    first = {"id": "u0", "role": "user", "parts": [{"type": "text", "text": "slow weather please"}]}
    async with socket_gateway(busy="steer", resume="memory") as (gw, up):
        results = await run_transport(
            ws_url(gw, "w4"),
            [
                {"action": "send", "chatId": "chat1", "messages": [first]},
                {
                    "action": "send",
                    "chatId": "chat1",
                    "messages": [first, second],
                    "parallel": True,
                },
            ],
        )
        stats = await upstream_stats(up)
    assert stats["runs"] == 1
    steered, answer = results
    assert steered.get("failure") is None, steered
    assert steered["message"]["metadata"]["steeredBy"] == "u1"
    kinds = [p["type"] for p in steered["message"]["parts"]]
    if steered["finishReason"] == "stop":  # taken before the model was called
        assert kinds == [], steered
    else:  # taken after the tool's batch
        assert steered["finishReason"] == "tool-calls", steered
        assert kinds == ["step-start", "reasoning", "tool-get_weather"], steered
        assert steered["message"]["parts"][-1]["state"] == "output-available"
    assert answer.get("failure") is None and answer["finishReason"] == "stop", answer
    said = [p["text"] for p in answer["message"]["parts"] if p["type"] == "text"]
    assert said == ["You said: Rome instead"]


async def test_stop_on_the_steered_answer_stops_the_pi_run(real_clients) -> None:
    """The answer a steer began is the chat's running turn like any: Stop ends it validly and
    the abort frame goes to pi on the turn's one socket."""
    async with socket_gateway(busy="steer", resume="memory", keepalive_interval=0.3) as (gw, up):
        first = Pending(gw, "w5", chat("slow weather please"))
        await until(lambda: b"tool-input-available" in first.content, 10)
        second = Pending(gw, "w5", chat("slow weather please", "a long one"))
        await until(lambda: b"text-delta" in second.content, 10)
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            stopped = await client.post(f"{gw}/api/sessions/w5/chat/chat1/stop")
        await asyncio.wait_for(asyncio.gather(first.task, second.task), 30)
        for _ in range(50):  # bounded: 5 s
            stats = await upstream_stats(up)
            if stats.get("abortFrames"):
                break
            await asyncio.sleep(0.1)
    assert stopped.status_code == 202
    assert stats["runs"] == 1 and stats["abortFrames"] == 1
    assert ending(first.content)["messageMetadata"]["steeredBy"] == "u1"
    assert 0 < len(text_of(decode_sse(second.content))) < len("word " * 2000)
    judged(real_clients, first.content, "tool-calls")
    for major, verdict in real_clients.check(second.content).items():
        assert verdict.ok, (major, verdict.fatal)


@contextlib.contextmanager
def two_pi_gateways(redis_url: str) -> Iterator[tuple[str, str, str]]:
    """Two gateway processes in front of one pi upstream: their URLs and the upstream's."""
    with pi_upstream() as base:
        url = base.replace("http://", "ws://") + "/sessions/{session_id}/rpc"
        ports = free_port(), free_port()
        common = (
            *("--dialect", "pi-agent", "--upstream", url, "--busy", "steer"),
            *("--resume", "redis", "--redis-url", redis_url, "--owner-lease", "2"),
            *("--keepalive-interval", "0.5", "--log-level", "warning"),
        )
        commands = [
            (("serve", "--port", str(port), *common), f"http://127.0.0.1:{port}/healthz")
            for port in ports
        ]
        with processes(*commands):
            yield f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}", base


@pytest.mark.slow
async def test_a_steer_sent_to_the_other_instance_reaches_the_run(redis_url, real_clients) -> None:
    with two_pi_gateways(redis_url) as (one, two, up):
        first, second = await steer_during_the_tool(one, two)
        stats = await upstream_stats(up)
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            resumed = await client.get(f"{two}/api/sessions/w1/chat/chat1/stream")
    assert stats["runs"] == 1
    assert_steered(first, second)
    assert start_id(resumed.content) == start_id(second.content)
    judged(real_clients, first.content, "tool-calls")
    judged(real_clients, second.content, "stop")


def test_the_translator_ends_the_answer_only_where_the_steered_message_lands() -> None:
    """Sans-I/O: pi's own user messages (the prompt; any, when no steer waits) are bookkeeping;
    with a steer waiting, the user message after a turn's end closes the answer, steered."""
    from chunkbridge.translators.dialects.pi_agent import PiAgentTranslator

    def user(text: str) -> dict[str, Any]:
        return {"type": "message_start", "message": {"role": "user", "content": text}}

    run = [{"type": "agent_start"}, {"type": "turn_start"}, user("the prompt")]
    after = [{"type": "turn_end"}, {"type": "turn_start"}, user("the steer")]
    plain = PiAgentTranslator()
    assert [c for e in [*run, *after] for c in plain.feed(e)] == [{"type": "start"}]
    steered = PiAgentTranslator()
    for event in run:
        steered.feed(event)
    steered.steering = "u1"
    out = [c for e in after for c in steered.feed(e)]
    assert [getattr(c, "finish_reason", None) for c in out] == ["stop"]
    assert out[0].message_metadata == {"steeredBy": "u1"}
    assert steered.steered_by == "u1" and steered.steering is None
