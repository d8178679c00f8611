"""``busy`` across instances: two real gateway processes on one real redis-server, POSTs spread
over both, in front of a scripted agent (in this test's loop) that records when each prompt
came, when each turn ended and when it was told to abort. The order it records proves the
policy (queue: each prompt after the previous turn's end; interrupt: the abort, then the next
prompt); every stream is judged by the real ai 5, 6 and 7 clients, and the real ai 7 chat
sends while the answer streams, through both instances (round robin)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import orjson
import pytest
from redis import Redis

from tests.gateway_harness import ScriptedUpstream, free_ports
from tests.helpers import decode_sse, until
from tests.test_busy_one_instance import (
    Agent,
    Pending,
    answer_text,
    body,
    queue_positions,
    running_answer,
    user,
)
from tests.test_gateway_process import processes

pytestmark = [pytest.mark.slow, pytest.mark.conformance]

LEASE = 2.0
#: The prompt frame carries the history the gateway sends (``history = full``).
FRAME = {
    "type": "prompt",
    "content": "{text}",
    "messageId": "{message_id}",
    "messages": "{messages}",
}


@contextlib.contextmanager
def two_gateways(upstream: str, redis_url: str, *extra: str) -> Iterator[tuple[str, str]]:
    with gateway_processes(upstream, redis_url, *extra) as (bases, _):
        yield bases


@contextlib.contextmanager
def gateway_processes(
    upstream: str, redis_url: str, *extra: str
) -> Iterator[tuple[tuple[str, str], list[subprocess.Popen[str]]]]:
    """Two instances: their base URLs and processes (a test may kill one)."""
    ports = free_ports(2)
    common = (
        *("--dialect", "agent-ops-v2", "--upstream", upstream),
        *("--resume", "redis", "--redis-url", redis_url, "--owner-lease", str(LEASE)),
        *("--keepalive-interval", "0.5", "--history", "full"),
        *("--prompt-frame", orjson.dumps(FRAME).decode(), "--log-level", "warning"),
        *extra,
    )
    commands = [
        (("serve", "--port", str(port), *common), f"http://127.0.0.1:{port}/healthz")
        for port in ports
    ]
    with processes(*commands) as procs:
        yield (f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}"), procs


@contextlib.asynccontextmanager
async def world(agent: Agent, redis_url: str, *extra: str) -> AsyncIterator[tuple[str, str]]:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = agent
        agent.upstream = upstream  # type: ignore[attr-defined]
        with two_gateways(upstream.url, redis_url, *extra) as bases:
            yield bases


async def send(base: str, payload: dict[str, Any]) -> tuple[float, httpx.Response]:
    """POST; (when it was sent, the whole response)."""
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        sent = time.monotonic()
        return sent, await client.post(f"{base}/api/sessions/s/chat", json=payload)


async def test_queue_three_messages_over_two_instances_run_in_order(
    redis_url: str, real_clients
) -> None:
    """The acceptance: three messages sent 100 ms apart during a slow turn, POSTed to two
    instances: three answers, in order, each upstream request after the previous turn's end,
    nothing refused."""
    agent = Agent(pause=0.08)
    async with world(agent, redis_url, "--busy", "queue") as (a, b):
        first = asyncio.create_task(send(a, body(user("zero"))))
        await asyncio.wait_for(_prompted(agent, 1), 10)
        later = []
        line = Redis.from_url(redis_url)
        for base, text in ((b, "one"), (a, "two"), (b, "three")):
            later.append(asyncio.create_task(send(base, body(user("zero"), user(text)))))
            # the order is the line's: each sent once the one before it is in (a POST can
            # take longer than 100 ms to be admitted on a busy machine)
            waiting = len(later)
            await asyncio.wait_for(_in_line(line, waiting), 10)
            await asyncio.sleep(0.1)
        results = await asyncio.gather(first, *later)
    responses = [response for _, response in results]
    assert [r.status_code for r in responses] == [200] * 4
    order = ["zero", "one", "two", "three"]
    assert agent.order("prompt") == order
    for before, after in zip(order, order[1:], strict=False):
        assert agent.at("prompt", after) >= agent.at("end", before), (before, after)
    assert [queue_positions(decode_sse(r.content)) for r in responses] == [
        [],
        [1, 0],
        [2, 1, 0],
        [3, 2, 1, 0],
    ]
    checked = real_clients.check_many([r.content for r in responses])
    for text, verdicts in zip(order, checked, strict=True):
        for major, verdict in verdicts.items():
            assert verdict.ok and verdict.finish_reason == "stop", (text, major, verdict.fatal)
            assert verdict.text() == answer_text(text), (text, major)


async def _in_line(line: Redis, count: int) -> None:
    while line.zcard("chunkbridge:line:s") < count:  # noqa: ASYNC110
        await asyncio.sleep(0.01)


async def _prompted(agent: Agent, count: int) -> None:
    while len(agent.order("prompt")) < count:  # noqa: ASYNC110
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("queue", [False, True], ids=["plain", "experimental_queue"])
async def test_the_ai7_chat_over_two_instances_gets_every_answer_in_order(
    queue: bool, redis_url: str, real_clients
) -> None:
    agent = Agent(pause=0.2)  # a turn of ~2.4 s: the third message (1 s in) finds two ahead
    async with world(agent, redis_url, "--busy", "queue") as (a, b):
        result = await real_clients.busy_chat(
            apis=[f"{a}/api/sessions/s/chat", f"{b}/api/sessions/s/chat"],
            major=7,
            chatId="chat1",
            texts=["one", "two", "three"],
            gapMs=500,  # (the order is the line's: 100 ms let a later POST in first, once,
            # on a loaded machine; the chat waits as long either way)
            queue=queue,
        )
    assert result["status"] == "ready" and not result["errors"], result
    assert [r["status"] for r in result["requests"]] == [200, 200, 200]
    assert agent.order("prompt") == ["one", "two", "three"]
    texts = [m["parts"][-1]["text"] for m in result["messages"] if m["role"] == "assistant"]
    assert texts == [answer_text(t) for t in ("one", "two", "three")]
    waited = [queue_positions(decode_sse(b)) for b in result["bodies"]]
    assert waited == ([[], [], []] if queue else [[], [1, 0], [2, 1, 0]])
    for verdicts in real_clients.check_many(result["bodies"]):
        for major, verdict in verdicts.items():
            assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)


async def test_interrupt_ends_the_running_turn_at_once_and_the_next_goes_out_with_it(
    redis_url: str, real_clients
) -> None:
    """The running turn on one instance, the new message POSTed to the other: the running
    stream's ``finish`` (``interruptedBy`` the new message) ≤ 1 s after the POST, the abort
    frame upstream, then the new prompt ≤ 1.5 s after the POST with the interrupted answer
    whole in its history."""
    agent = Agent(pause=0.1)
    finished_at = 0.0
    first_body = b""

    async def first(base: str) -> None:
        nonlocal finished_at, first_body
        async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
            url = f"{base}/api/sessions/s/chat"
            async with client.stream("POST", url, json=body(user("one"))) as response:
                async for piece in response.aiter_bytes():
                    first_body += piece
                    if b'"type":"finish"' in piece and not finished_at:
                        finished_at = time.monotonic()

    async with world(agent, redis_url, "--busy", "interrupt") as (a, b):
        running = asyncio.create_task(first(a))
        await asyncio.wait_for(_prompted(agent, 1), 10)
        await until(lambda: agent.words >= 3, 10)  # a few words in
        _, stale = await send(b, {**body(user("one"), user("x")), "expectedTurnId": "msg_old"})
        shown = await running_answer(b)  # the newest answer the page shows
        second_body = {**body(user("one"), user("two")), "expectedTurnId": shown}
        posted, second = await send(b, second_body)
        await running
    assert stale.status_code == 409  # (the stale guard, across instances: nothing stopped)
    upstream = agent.upstream  # type: ignore[attr-defined]
    aborts = [t for t, f in upstream.received_at["s"] if f.get("type") == "abort"]
    assert second.status_code == 200
    assert finished_at - posted <= 1.0, finished_at - posted
    assert agent.order("prompt") == ["one", "two"]
    assert aborts and aborts[0] <= agent.at("prompt", "two")
    assert agent.at("prompt", "two") - posted <= 1.5, agent.at("prompt", "two") - posted
    finish = decode_sse(first_body)[-1]
    assert finish["type"] == "finish" and finish["messageMetadata"]["interruptedBy"] == "u-two"
    verdicts = real_clients.check_many([first_body, second.content])
    interrupted = verdicts[0][7].text()
    assert 0 < len(interrupted) < len(answer_text("one"))
    for major, verdict in verdicts[0].items():
        assert verdict.ok and verdict.message["metadata"]["interruptedBy"] == "u-two", major
    for major, verdict in verdicts[1].items():
        assert verdict.ok and verdict.text() == answer_text("two"), (major, verdict.fatal)
    history = agent.prompts[1]["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert [p["text"] for p in history[1]["parts"] if p["type"] == "text"] == [interrupted]


@pytest.mark.parametrize(
    ("policy", "how"),
    [("interrupt", "plain"), ("interrupt", "send-now"), ("queue", "send-now")],
)
async def test_the_ai7_chat_interrupting_or_sending_now_is_never_refused(
    policy: str, how: str, redis_url: str, real_clients
) -> None:
    """ai 7 without its queue sends the second message while the first answer streams (the
    gateway interrupts it); with its queue, ``experimental_sendQueuedMessageNow`` stops the
    answer (its fetch aborted, the app's stop route called) and sends at once — over two
    instances, never refused, the first answer kept as it ended."""
    agent = Agent(pause=0.1)
    async with world(agent, redis_url, "--busy", policy, "--target", "7") as (a, b):
        result = await real_clients.busy_chat(
            apis=[f"{a}/api/sessions/s/chat", f"{b}/api/sessions/s/chat"],
            major=7,
            chatId="chat1",
            texts=["one", "two"],
            gapMs=50,
            afterChars=12,
            queue=how == "send-now",
            sendNow=how == "send-now",
            stopRoute=how == "send-now",
        )
    assert [r["status"] for r in result["requests"]] == [200, 200], result["requests"]
    assert result["status"] == "ready" and not result["errors"], result
    assert agent.order("prompt") == ["one", "two"]
    shown = [(m["role"], m["parts"][-1].get("text", "")) for m in result["messages"]]
    assert [role for role, _ in shown] == ["user", "assistant", "user", "assistant"]
    assert answer_text("one").startswith(shown[1][1]) and shown[1][1] != answer_text("one")
    assert shown[3][1] == answer_text("two")
    bodies = [b for b in result["bodies"] if b]
    for verdicts in real_clients.check_many(bodies, (7,)):  # (--target 7: interrupted)
        for major, verdict in verdicts.items():
            assert verdict.ok, (major, verdict.fatal)


async def test_when_the_running_instance_dies_the_waiting_go_on_in_order_after_the_lease(
    redis_url: str, real_clients
) -> None:
    """The instance running the turn is SIGKILLed: the messages waiting on the other instance
    run, in order, once its lease lapsed (and those waiting on the dead one left the line)."""
    agent = Agent(pause=0.3)
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = agent
        with gateway_processes(upstream.url, redis_url, "--busy", "queue") as ((a, b), procs):
            first = asyncio.create_task(send(a, body(user("one"))))
            await asyncio.wait_for(_prompted(agent, 1), 10)
            doomed = Pending(a, body(user("one"), user("lost")))
            await doomed.in_line()
            later = [Pending(b, body(user("one"), user("two")))]
            await later[0].in_line()
            later.append(Pending(b, body(user("one"), user("three"))))
            await later[1].in_line()
            os.kill(procs[0].pid, signal.SIGKILL)
            killed = time.monotonic()
            await asyncio.gather(*(pending.task for pending in later))
            for gone in (first, doomed.task):
                with contextlib.suppress(httpx.HTTPError):
                    await gone
    assert agent.order("prompt") == ["one", "two", "three"]
    assert LEASE <= agent.at("prompt", "two") - killed <= LEASE + 2.0
    assert agent.at("prompt", "three") >= agent.at("end", "two")
    responses = later
    positions = [queue_positions(decode_sse(r.content)) for r in responses]
    assert [p[0] for p in positions] == [2, 3]  # behind one (running) and lost (waiting)
    assert all(p == sorted(p, reverse=True) for p in positions)  # lost left with its instance
    assert positions[1][-2:] == [1, 0]
    for verdicts in real_clients.check_many([r.content for r in responses]):
        for major, verdict in verdicts.items():
            assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)


async def test_a_draining_instance_ends_its_waiting_requests_validly(
    redis_url: str, real_clients
) -> None:
    agent = Agent(pause=0.3)
    extra = ("--busy", "queue", "--drain-timeout", "2")
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = agent
        with gateway_processes(upstream.url, redis_url, *extra) as ((a, _), procs):
            first = asyncio.create_task(send(a, body(user("one"))))
            await asyncio.wait_for(_prompted(agent, 1), 10)
            waiting = Pending(a, body(user("one"), user("two")))
            await waiting.in_line()
            procs[0].send_signal(signal.SIGTERM)
            await waiting.task
            _, drained = await first
            ended = waiting
    assert agent.order("prompt") == ["one"]
    chunks = decode_sse(ended.content)
    assert [c["type"] for c in chunks][-2:] == ["error", "finish"]
    assert "restarting" in chunks[-2]["errorText"]
    for verdicts in real_clients.check_many([ended.content, drained.content]):
        for major, verdict in verdicts.items():
            assert verdict.ok and verdict.error_text, (major, verdict.fatal)
