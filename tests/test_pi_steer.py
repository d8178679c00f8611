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
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
import websockets
from redis import Redis

from tests.gateway_harness import free_ports
from tests.helpers import decode_sse, text_of, until
from tests.test_busy_one_instance import Pending, queue_positions
from tests.test_gateway_process import processes
from tests.test_pi_agent import pi_upstream, upstream_stats
from tests.test_pi_agent_socket import chat, socket_gateway

pytestmark = pytest.mark.conformance


def ending(body: bytes) -> dict[str, Any]:
    finish: dict[str, Any] = [c for c in decode_sse(body) if c["type"] == "finish"][-1]
    return finish


def start_id(body: bytes) -> str:
    return str(next(c for c in decode_sse(body) if c["type"] == "start")["messageId"])


def judged(real_clients: Any, body: bytes, finish_reason: str) -> None:
    for major, verdict in real_clients.check(body).items():
        assert verdict.ok and verdict.finish_reason == finish_reason, (major, verdict.fatal)


async def steer_during_the_tool(first_gw: str, second_gw: str) -> tuple[Pending, Pending]:
    """The weather run (a slow tool); ``Rome instead`` sent once the tool's input is shown."""
    first = Pending(first_gw, chat("slow weather please"), "w1")
    await until(lambda: b"tool-input-available" in first.content, 10)
    second = Pending(second_gw, chat("slow weather please", "Rome instead"), "w1")
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
    ends = [line for line in out.splitlines() if "stream.end" in line]
    assert len(ends) == 2 and all("client_disconnected=False" in line for line in ends)
    ids = {re.search(r"request_id=(\w+)", line)[1] for line in ends}  # type: ignore[index]
    assert len(ids) == 2  # each answer's line names its own request
    judged(real_clients, first.content, "tool-calls")
    judged(real_clients, second.content, "stop")


async def test_a_steer_during_a_plain_answer_lands_after_it(real_clients) -> None:
    """No tool: pi asks for steering once the answer is done, and goes on with the message."""
    async with socket_gateway(busy="steer", resume="memory", keepalive_interval=0.3) as (gw, up):
        first = Pending(gw, chat("a long one"), "w2")
        await until(lambda: b"text-delta" in first.content, 10)
        second = Pending(gw, chat("a long one", "and then?"), "w2")
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
        first = Pending(gw, chat("slow weather please"), "w3")
        await until(lambda: b"tool-input-available" in first.content, 10)
        second = Pending(gw, payload, "w3")
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
        first = Pending(gw, chat("slow weather please"), "w5")
        await until(lambda: b"tool-input-available" in first.content, 10)
        second = Pending(gw, chat("slow weather please", "a long one"), "w5")
        await until(lambda: b"text-delta" in second.content, 10)
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            stopped = await client.post(f"{gw}/api/sessions/w5/chat/chat1/stop")
        await asyncio.wait_for(asyncio.gather(first.task, second.task), 30)
        stats = await upstream_stats(up, until_set="abortFrames")
    assert stopped.status_code == 202
    assert stats["runs"] == 1 and stats["abortFrames"] == 1
    assert ending(first.content)["messageMetadata"]["steeredBy"] == "u1"
    assert 0 < len(text_of(decode_sse(second.content))) < len("word " * 2000)
    judged(real_clients, first.content, "tool-calls")
    for major, verdict in real_clients.check(second.content).items():
        assert verdict.ok, (major, verdict.fatal)


async def test_a_message_whose_steer_went_to_the_agent_is_not_timed_out() -> None:
    """``queue_timeout`` shorter than the tool: the message is with the agent, so it waits for
    its answer instead of being told it was not answered."""
    async with socket_gateway(
        busy="steer", resume="memory", keepalive_interval=0.3, queue_timeout=0.15
    ) as (gw, up):
        first = Pending(gw, chat("slow weather please"), "w6")
        await until(lambda: b"tool-input-available" in first.content, 10)
        second = Pending(gw, chat("slow weather please", "Rome instead"), "w6")
        await asyncio.wait_for(asyncio.gather(first.task, second.task), 30)
    assert ending(first.content)["messageMetadata"]["steeredBy"] == "u1"
    chunks = decode_sse(second.content)
    assert [c for c in chunks if c["type"] == "error"] == []
    assert text_of(chunks) == "You said: Rome instead"


async def test_three_messages_each_steer_the_answer_before_them() -> None:
    """A runs; B and C wait. B steers A's run; C then steers B's answer: each message gets
    its own answer once, in one run of the agent."""
    async with socket_gateway(busy="steer", resume="memory", keepalive_interval=0.3) as (gw, up):
        a = Pending(gw, chat("slow weather please"), "w7")
        await until(lambda: b"tool-input-available" in a.content, 10)
        b = Pending(gw, chat("slow weather please", "a long one"), "w7")
        await until(lambda: b"data-queue" in b.content, 10)
        c = Pending(gw, chat("slow weather please", "a long one", "and Milan"), "w7")
        await asyncio.wait_for(asyncio.gather(a.task, b.task, c.task), 30)
        stats = await upstream_stats(up)
    assert stats["runs"] == 1
    assert ending(a.content)["messageMetadata"]["steeredBy"] == "u1"
    assert ending(b.content)["messageMetadata"]["steeredBy"] == "u2"
    assert text_of(decode_sse(b.content)) == "word " * 2000
    assert text_of(decode_sse(c.content)) == "You said: and Milan"
    for body in (a.content, b.content, c.content):
        assert [x for x in decode_sse(body) if x["type"] == "error"] == []


async def test_with_two_turns_per_session_a_taken_steer_never_also_runs_alone() -> None:
    """``max_turns_per_session = 2``: the other chat's run ends while a steer is with this
    chat's agent; the freed turn does not let the message in as a second answer."""
    async with socket_gateway(
        busy="steer", resume="memory", keepalive_interval=0.3, max_turns_per_session=2
    ) as (gw, up):
        other = chat("slow weather please")
        other["id"] = "chat2"
        y = Pending(gw, other, "w8")
        await until(lambda: b"tool-input-available" in y.content, 10)
        await asyncio.sleep(0.15)
        x = Pending(gw, chat("slow weather please"), "w8")
        await until(lambda: b"tool-input-available" in x.content, 10)
        second = Pending(gw, chat("slow weather please", "Rome instead"), "w8")
        await asyncio.wait_for(asyncio.gather(x.task, y.task, second.task), 30)
        stats = await upstream_stats(up)
    assert stats["runs"] == 2  # chat2's and chat1's: the message went into chat1's
    assert ending(x.content)["messageMetadata"]["steeredBy"] == "u1"
    assert text_of(decode_sse(second.content)) == "You said: Rome instead"


async def test_abort_over_the_websocket_stops_the_steered_answer() -> None:
    """ai 7's WebSocket transport: ``abort`` of the request whose message steered the run
    stops that answer's turn (pi hears the abort frame), not only its following."""
    async with socket_gateway(busy="steer", resume="memory") as (gw, up):
        url = gw.replace("http://", "ws://") + "/api/sessions/w9/chat/ws"
        async with websockets.connect(url) as ws:
            first = [user_message("u0", "slow weather please")]
            await ws.send(socket_send("r1", first))
            await frame_of(ws, "r1", "tool-input-available")
            await ws.send(socket_send("r2", [*first, user_message("u1", "a long one")]))
            await frame_of(ws, "r2", "text-delta")
            await ws.send(orjson.dumps({"type": "abort", "requestId": "r2"}).decode())
            stats = await upstream_stats(up, until_set="abortFrames")
    assert stats["runs"] == 1 and stats["abortFrames"] == 1


def user_message(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def socket_send(request_id: str, messages: list[dict[str, Any]]) -> str:
    frame = {"type": "send", "requestId": request_id, "id": "chat1", "messages": messages}
    return orjson.dumps({**frame, "trigger": "submit-message"}).decode()


async def frame_of(ws: Any, request_id: str, chunk_type: str) -> None:
    """Until the request's chunk of that type comes (10 s at most)."""
    async with asyncio.timeout(10):
        while True:
            frame = orjson.loads(await ws.recv())
            chunk = frame.get("chunk") or {}
            if frame.get("requestId") == request_id and chunk.get("type") == chunk_type:
                return


async def test_when_the_answer_cannot_go_on_the_session_is_let_go(monkeypatch, capsys) -> None:
    """Our own bug while the steered run goes on (here: opening the next answer fails): the
    message is told it lost its place, and the session's turn is free for the next one."""
    from chunkbridge.gateway.turn import opening

    real, calls = opening.assemble, []

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:  # (the service binds its own name: the first call here is the steer's)
            raise RuntimeError("boom")
        return real(*args, **kwargs)

    monkeypatch.setattr(opening, "assemble", failing_once)
    async with socket_gateway(busy="steer", resume="memory", keepalive_interval=0.3) as (gw, up):
        a = Pending(gw, chat("slow weather please"), "w10")
        await until(lambda: b"tool-input-available" in a.content, 10)
        b = Pending(gw, chat("slow weather please", "Rome instead"), "w10")
        await asyncio.wait_for(asyncio.gather(a.task, b.task), 30)
        later = chat("hello")
        later["id"] = "chat2"
        d = Pending(gw, later, "w10")
        await asyncio.wait_for(d.task, 30)
    errors = [c["errorText"] for c in decode_sse(b.content) if c["type"] == "error"]
    assert errors and "lost its place" in errors[0]
    assert text_of(decode_sse(d.content)) == "You said: hello"
    assert "busy.steer_not_continued" in capsys.readouterr().out


def test_a_steer_pi_refuses_leaves_the_answer_going() -> None:
    """pi answers a command it refuses with ``response`` ``success: false``: for the steer,
    the answer goes on (the message waits for the run's end); for anything else, it ends."""
    from chunkbridge.translators.dialects.pi_agent import PiAgentTranslator

    translator = PiAgentTranslator()
    translator.feed({"type": "agent_start"})
    translator.steering = "u1"
    refused = {"type": "response", "command": "steer", "success": False, "error": "no"}
    assert translator.feed(refused) == []
    assert translator.steering is None and translator.stats["steer-refused"] == 1
    (close,) = translator.feed({**refused, "command": "prompt"})
    assert getattr(close, "error_text", None) == "no"


@contextlib.contextmanager
def two_pi_gateways(
    redis_url: str,
) -> Iterator[tuple[str, str, str, list[subprocess.Popen[str]]]]:
    """Two gateway processes in front of one pi upstream: their URLs, the upstream's, and
    the processes (a test may kill one)."""
    with pi_upstream() as base:
        url = base.replace("http://", "ws://") + "/sessions/{session_id}/rpc"
        ports = free_ports(2)
        common = (
            *("--dialect", "pi-agent", "--upstream", url, "--busy", "steer"),
            *("--resume", "redis", "--redis-url", redis_url, "--owner-lease", "2"),
            *("--keepalive-interval", "0.5", "--log-level", "warning"),
        )
        commands = [
            (("serve", "--port", str(port), *common), f"http://127.0.0.1:{port}/healthz")
            for port in ports
        ]
        with processes(*commands) as procs:
            yield f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}", base, procs


@pytest.mark.slow
async def test_a_steer_sent_to_the_other_instance_reaches_the_run(redis_url, real_clients) -> None:
    with two_pi_gateways(redis_url) as (one, two, up, _):
        first, second = await steer_during_the_tool(one, two)
        stats = await upstream_stats(up)
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            resumed = await client.get(f"{two}/api/sessions/w1/chat/chat1/stream")
    assert stats["runs"] == 1
    assert_steered(first, second)
    assert start_id(resumed.content) == start_id(second.content)
    judged(real_clients, first.content, "tool-calls")
    judged(real_clients, second.content, "stop")


@pytest.mark.slow
async def test_when_the_instance_that_took_a_steer_dies_the_message_runs_on_its_own(
    redis_url: str, real_clients
) -> None:
    """The steer is with the running turn's agent (taken) when that turn's instance is
    SIGKILLed: once its hold's lease lapses, the message waits no more for a steer that cannot
    land, and runs as its own turn on the other instance."""
    with two_pi_gateways(redis_url) as (one, two, up, procs):
        first = Pending(one, chat("very slow weather please"), "w11")
        await until(lambda: b"tool-input-available" in first.content, 10)
        second = Pending(two, chat("very slow weather please", "Rome instead"), "w11")
        state = Redis.from_url(redis_url)
        try:
            await until(lambda: b"taken:" in b"".join(state.hvals(STATE)), 5)
        finally:
            state.close()
        procs[0].kill()  # (SIGKILL: no drain, nothing let go)
        await asyncio.wait_for(second.task, 30)
        stats = await upstream_stats(up)
    assert stats["runs"] == 2  # the message, prompted anew on the other instance
    chunks = decode_sse(second.content)
    assert text_of(chunks) == "You said: Rome instead"
    assert queue_positions(chunks)[-1] == 0
    judged(real_clients, second.content, "stop")


STATE = "chunkbridge:line:w11:state"


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
