"""``busy`` in one gateway (``resume = memory``) in front of a scripted agent that records what
it was asked and when each turn ended: with ``queue`` messages sent while a turn runs wait in
order and say their position, a full line is refused, a client that goes away leaves it, a
message that waits too long ends with an error, and the answer waited for is in the next
turn's history as it ended; with ``interrupt`` the running turn ends at once; ``reject`` is
today's 409. Every stream is judged by the real ai 5, 6 and 7 clients."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from tests.gateway_harness import ScriptedUpstream, running_gateway
from tests.helpers import decode_sse, text_of, until

pytestmark = pytest.mark.conformance

WORDS = 12


class Agent:
    """The scripted agent: each prompt is answered ``<text>0 <text>1 …`` a word every
    ``pause`` seconds; ``log`` holds (time, "prompt" | "end", text) in order, ``prompts`` the
    prompt frames."""

    def __init__(self, pause: float = 0.05) -> None:
        self.pause = pause
        self.log: list[tuple[float, str, str]] = []
        self.prompts: list[dict[str, Any]] = []
        #: Words sent, all turns together.
        self.words = 0

    async def __call__(self, ws: Any, up: ScriptedUpstream, session: str) -> None:
        prompt = up.received[session][-1]
        text = prompt.get("content", "")
        self.prompts.append(prompt)
        self.log.append((time.monotonic(), "prompt", text))
        await up.send(ws, session, {"type": "message.create", "turnId": text})
        for i in range(WORDS):
            await asyncio.sleep(self.pause)
            delta = {"type": "message.part.text-delta", "turnId": text, "delta": f"{text}{i} "}
            await up.send(ws, session, delta)
            self.words += 1
        await up.send(ws, session, {"type": "message.finalize", "turnId": text, "reason": "stop"})
        await up.send(ws, session, {"type": "complete"})
        self.log.append((time.monotonic(), "end", text))
        await ws.close()

    def at(self, what: str, text: str) -> float:
        return next(t for t, w, x in self.log if w == what and x == text)

    def order(self, what: str) -> list[str]:
        return [x for _, w, x in self.log if w == what]


def answer_text(text: str) -> str:
    return "".join(f"{text}{i} " for i in range(WORDS))


def user(text: str) -> dict[str, Any]:
    return {"id": f"u-{text}", "role": "user", "parts": [{"type": "text", "text": text}]}


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chat1", "messages": list(messages), "trigger": "submit-message"}


@contextlib.asynccontextmanager
async def world(agent: Agent, **settings: Any) -> AsyncIterator[str]:
    settings = {"busy": "queue", "resume": "memory", "keepalive_interval": 0.3, **settings}
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = agent
        async with running_gateway(upstream=upstream.url, **settings) as (gw, _):
            yield gw


async def send(gw: str, payload: dict[str, Any], session: str = "s") -> httpx.Response:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        return await client.post(f"{gw}/api/sessions/{session}/chat", json=payload)


def queue_positions(chunks: list[dict[str, Any]]) -> list[int]:
    return [c["data"]["position"] for c in chunks if c["type"] == "data-queue"]


async def busy_counts(gw: str) -> dict[str, float]:
    """``chunkbridge_busy_total`` by event, from the gateway's ``/metrics``."""
    async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
        text = (await client.get(f"{gw}/metrics")).text
    found = re.findall(r'^chunkbridge_busy_total\{event="(\w+)"\} (\S+)$', text, re.M)
    return {event: float(value) for event, value in found}


class Pending:
    """A POST read as its bytes come: a test waits for it to be in the line (:meth:`in_line`)
    instead of guessing how long that takes."""

    def __init__(
        self, gw: str, payload: dict[str, Any], session: str = "s", url: str | None = None
    ) -> None:
        self.url = url or f"{gw}/api/sessions/{session}/chat"
        self.payload = payload
        self.content = b""
        self.status_code = 0
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> bytes:
        async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
            async with client.stream("POST", self.url, json=self.payload) as response:
                self.status_code = response.status_code
                async for piece in response.aiter_bytes():
                    self.content += piece
        return self.content

    async def in_line(self) -> None:
        await until(lambda: b'"data-queue"' in self.content, 10)


async def test_messages_sent_during_a_turn_run_in_order_each_after_the_last_ended(
    real_clients,
) -> None:
    agent = Agent()
    async with world(agent) as gw:
        first = asyncio.create_task(send(gw, body(user("one"))))
        await until(lambda: agent.log, 10)
        second = Pending(gw, body(user("one"), user("two")))
        await second.in_line()
        third = Pending(gw, body(user("one"), user("two"), user("three")))
        await asyncio.gather(second.task, third.task)
        responses = [await first, second, third]
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert agent.order("prompt") == ["one", "two", "three"]
    assert agent.at("prompt", "two") >= agent.at("end", "one")
    assert agent.at("prompt", "three") >= agent.at("end", "two")
    chunks = [decode_sse(r.content) for r in responses]
    assert queue_positions(chunks[0]) == []
    assert queue_positions(chunks[1]) == [1, 0]  # 0: it runs
    assert queue_positions(chunks[2]) == [2, 1, 0]
    assert b": keep-alive\n\n" in responses[2].content  # (keepalive_interval 0.3 s)
    for waited in chunks[1:]:
        starts = [c for c in waited if c["type"] == "start"]
        assert waited[0]["type"] == "start" and len({c["messageId"] for c in starts}) == 1
        assert all(c["transient"] is True for c in waited if c["type"] == "data-queue")
    bodies = [r.content for r in responses]
    for text, verdicts in zip(
        ("one", "two", "three"), real_clients.check_many(bodies), strict=True
    ):
        for major, verdict in verdicts.items():
            assert verdict.ok and verdict.finish_reason == "stop", (text, major, verdict.fatal)
            assert verdict.text() == answer_text(text), (text, major)
            assert not verdict.parts("data-queue")  # transient: never in the message


async def test_a_full_line_and_what_never_waits_are_refused_before_any_stream() -> None:
    agent = Agent(pause=0.1)
    async with world(agent, queue_max=1) as gw:
        first = asyncio.create_task(send(gw, body(user("one"))))
        await until(lambda: agent.log, 10)
        waiting = Pending(gw, body(user("one"), user("two")))
        await waiting.in_line()
        full = await send(gw, body(user("one"), user("three")))
        regenerate = await send(gw, {**body(user("one")), "trigger": "regenerate-message"})
        edit = await send(gw, {**body(user("one")), "messageId": "u-one"})
        answered = {"id": "a0", "role": "assistant", "parts": [{"type": "text", "text": "hm"}]}
        continuation = await send(gw, body(user("one"), answered))
        await asyncio.gather(first, waiting.task)
        assert await busy_counts(gw) == {"queued": 1, "full": 1, "ran": 1}
    assert (full.status_code, full.headers["content-type"]) == (409, "text/plain; charset=utf-8")
    assert "too many messages wait" in full.text
    for refused in (regenerate, edit, continuation):  # today's 409: only a new message waits
        assert refused.status_code == 409 and "already answering" in refused.text
    assert agent.order("prompt") == ["one", "two"]


async def test_a_waiting_client_that_goes_away_leaves_the_line_and_the_next_moves_up() -> None:
    agent = Agent(pause=0.25)  # turn one: 3 s
    async with world(agent, keepalive_interval=0.5) as gw:
        first = asyncio.create_task(send(gw, body(user("one"))))
        await until(lambda: agent.log, 10)
        bodies = {"two": b"", "three": b""}
        go = asyncio.Event()
        moved_up: list[float] = []

        async def waiting(text: str) -> None:
            async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
                url = f"{gw}/api/sessions/s/chat"
                async with client.stream("POST", url, json=body(user(text))) as response:
                    async for piece in response.aiter_bytes():
                        bodies[text] += piece
                        if text == "two" and go.is_set():
                            break  # the client goes away
                        if text == "three" and queue_positions(decode_sse(bodies[text])) == [2, 1]:
                            moved_up.append(time.monotonic())

        two = asyncio.create_task(waiting("two"))
        await until(lambda: b'"position":1' in bodies["two"], 5)
        three = asyncio.create_task(waiting("three"))
        await until(lambda: b'"position":2' in bodies["three"], 5)
        go.set()  # the next bytes two gets (a keep-alive) find its client gone
        await asyncio.wait_for(two, 5)
        left_at = time.monotonic()
        await until(lambda: moved_up, 5)
        await asyncio.gather(first, three)
        assert await busy_counts(gw) == {"queued": 2, "left": 1, "ran": 1}
    assert agent.order("prompt") == ["one", "three"]  # the one that left never ran
    assert moved_up[0] - left_at <= 0.5 + 1.0
    assert text_of(decode_sse(bodies["three"])) == answer_text("three")


async def test_a_message_that_waits_longer_than_queue_timeout_ends_with_an_error(
    real_clients,
) -> None:
    agent = Agent(pause=0.2)
    async with world(agent, queue_timeout=0.6) as gw:
        first = asyncio.create_task(send(gw, body(user("one"))))
        await until(lambda: agent.log, 10)
        started = time.monotonic()
        late = await send(gw, body(user("one"), user("two")))
        waited = time.monotonic() - started
        await first
        assert await busy_counts(gw) == {"queued": 1, "timeout": 1}
    assert late.status_code == 200 and 0.6 <= waited < 2.5
    chunks = decode_sse(late.content)
    assert [c["type"] for c in chunks][-2:] == ["error", "finish"]
    assert agent.order("prompt") == ["one"]
    for major, verdict in real_clients.check(late.content).items():
        assert verdict.ok and "busy for too long" in (verdict.error_text or ""), major


HISTORY_FRAME = {"type": "prompt", "content": "{text}", "messageId": "{message_id}"}


@pytest.mark.parametrize("history", ["full", "stored"])
async def test_the_answer_waited_for_is_in_the_next_request_as_it_ended(
    history: str, tmp_path: Any
) -> None:
    """The ai 7 client sends the answer cut where it was when the user typed: the turn that
    waited sends the whole of it upstream (``full``: the server's copy replaces the client's;
    ``stored``: the store has it)."""
    agent = Agent()
    frame = {**HISTORY_FRAME, "messages": "{messages}"}
    store = {"store": "sqlite", "store_path": tmp_path / "chats.sqlite3"}
    extra = store if history == "stored" else {}
    async with world(agent, history=history, prompt_frame=frame, **extra) as gw:
        first = asyncio.create_task(send(gw, body(user("one"))))
        await until(lambda: agent.log, 10)
        await asyncio.sleep(0.2)
        answer_id = await running_answer(gw)  # what the page has of it so far
        cut = {
            "id": answer_id,
            "role": "assistant",
            "parts": [{"type": "text", "text": "one0 ", "state": "streaming"}],
        }
        second = await send(gw, body(user("one"), cut, user("two")))
        await first
    assert second.status_code == 200
    sent = agent.prompts[1]["messages"]
    assert [m["id"] for m in sent] == ["u-one", answer_id, "u-two"]
    texts = [p["text"] for p in sent[1]["parts"] if p["type"] == "text"]
    assert texts == [answer_text("one")], orjson.dumps(sent[1])


@pytest.mark.parametrize(
    ("major", "queue"), [(7, False), (7, True), (6, False), (5, False)], ids=str
)
async def test_the_ai_sdk_chat_that_sends_while_the_answer_streams_gets_every_answer(
    major: int, queue: bool, real_clients
) -> None:
    """The real chat: without its experimental queue every message is POSTed at once and waits
    here; with it the chat sends one at a time, after each answer, and never meets the line."""
    agent = Agent()
    async with world(agent) as gw:
        result = await real_clients.busy_chat(
            api=f"{gw}/api/sessions/s/chat",
            major=major,
            chatId="chat1",
            texts=["one", "two", "three"],
            gapMs=100,
            queue=queue,
        )
    assert result["status"] == "ready" and not result["errors"], result
    shown = [(m["role"][0], m["parts"][-1].get("text")) for m in result["messages"]]
    said = {text: ("a", answer_text(text)) for text in ("one", "two", "three")}
    asked = {text: ("u", text) for text in ("one", "two", "three")}
    order = ["one", "two", "three"]
    if queue:  # one at a time
        assert shown == [x for text in order for x in (asked[text], said[text])]
    else:  # each user message shows when it is sent, each answer when it begins
        assert sorted(shown) == sorted([*asked.values(), *said.values()])
        assert [x for x in shown if x[0] == "u"] == [asked[text] for text in order]
        assert [x for x in shown if x[0] == "a"] == [said[text] for text in order]
        assert all(shown.index(asked[text]) < shown.index(said[text]) for text in order)
    assert agent.order("prompt") == ["one", "two", "three"]
    waited = [queue_positions(decode_sse(b)) for b in result["bodies"]]
    assert waited == ([[], [], []] if queue else [[], [1, 0], [2, 1, 0]])
    for verdicts in real_clients.check_many(result["bodies"]):
        for checked, verdict in verdicts.items():
            assert verdict.ok and verdict.finish_reason == "stop", (checked, verdict.fatal)


async def test_interrupt_in_one_process_stops_the_turn_and_runs_the_message(real_clients) -> None:
    agent = Agent(pause=0.1)
    async with world(agent, busy="interrupt") as gw:
        first = asyncio.create_task(send(gw, body(user("one"))))
        await until(lambda: agent.words >= 2, 10)  # a few words in
        started = time.monotonic()
        second = await send(gw, body(user("one"), user("two")))
        interrupted = await first
    assert agent.order("prompt") == ["one", "two"]
    assert agent.at("prompt", "two") - started <= 1.5
    finish = decode_sse(interrupted.content)[-1]
    assert finish["messageMetadata"] == {"interruptedBy": "u-two"}
    verdicts = real_clients.check_many([interrupted.content, second.content])
    for major, verdict in verdicts[0].items():
        assert verdict.ok and 0 < len(verdict.text()) < len(answer_text("one")), major
    for major, verdict in verdicts[1].items():
        assert verdict.ok and verdict.text() == answer_text("two"), major


async def test_reject_is_todays_409_whatever_the_line() -> None:
    agent = Agent(pause=0.1)
    async with world(agent, busy="reject") as gw:
        first = asyncio.create_task(send(gw, body(user("one"))))
        await until(lambda: agent.log, 10)
        refused = await send(gw, body(user("one"), user("two")))
        await first
    assert refused.status_code == 409
    assert refused.text == "This session is already answering; wait for it or stop it first."
    assert agent.order("prompt") == ["one"]


async def test_expected_turn_id_must_be_the_chats_newest_answer_running_or_ended() -> None:
    """The stale guard: ``expectedTurnId`` (the newest answer the client shows) is compared,
    before any waiting, with the running answer, or the last one once it ended."""
    agent = Agent(pause=0.05)
    async with world(agent) as gw:
        first = asyncio.create_task(send(gw, body(user("one"))))
        await until(lambda: agent.log, 10)
        stale = await send(gw, {**body(user("one"), user("two")), "expectedTurnId": "msg_old"})
        assert stale.status_code == 409 and "not seen yet" in stale.text
        running = await running_answer(gw)
        fresh = await send(gw, {**body(user("one"), user("two")), "expectedTurnId": running})
        assert queue_positions(decode_sse(fresh.content)) == [1, 0]  # it waited for "one"
        assert decode_sse((await first).content)[0]["messageId"] == running
        after = await send(gw, {**body(user("one"), user("three")), "expectedTurnId": running})
        unsent = await send(gw, body(user("one"), user("four")))  # no field: no guard
        assert (await busy_counts(gw))["stale"] == 2
    assert fresh.status_code == 200
    newest = decode_sse(fresh.content)[0]["messageId"]
    assert after.status_code == 409  # "two" answered since: the client has not seen it
    assert unsent.status_code == 200 and newest != running
    assert agent.order("prompt") == ["one", "two", "four"]


async def running_answer(gw: str, session: str = "s") -> str:
    """The ``messageId`` of the chat's running answer, as a page that resumes it sees it."""
    seen = b""
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        url = f"{gw}/api/sessions/{session}/chat/chat1/stream"
        async with client.stream("GET", url) as response:
            async for piece in response.aiter_bytes():
                seen += piece
                if b'"messageId"' in seen and seen.endswith(b"\n\n"):
                    break
    return str(next(c for c in decode_sse(seen) if c["type"] == "start")["messageId"])


async def test_over_the_websocket_transport_a_second_send_waits_its_turn() -> None:
    """ai 7's WebSocketChatTransport: two sends on one socket, the second while the first's
    answer runs — it waits (its position as transient chunks) and gets its answer."""
    from tests.test_chat_socket import run_transport, ws_url

    agent = Agent()
    async with world(agent) as gw:
        results = await run_transport(
            ws_url(gw, "s"),
            [
                {"action": "send", "chatId": "chat1", "messages": [user("one")]},
                {
                    "action": "send",
                    "chatId": "chat1",
                    "messages": [user("one"), user("two")],
                    "parallel": True,
                },
            ],
        )
    assert agent.order("prompt") == ["one", "two"]
    assert agent.at("prompt", "two") >= agent.at("end", "one")
    for text, result in zip(("one", "two"), results, strict=True):
        assert result.get("failure") is None and result["finishReason"] == "stop", result
        said = [p["text"] for p in result["message"]["parts"] if p["type"] == "text"]
        assert said == [answer_text(text)]
