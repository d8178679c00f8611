"""Resumable streams (resume = memory): a dropped client detaches, GET …/stream replays from the
first chunk and follows live, stop ends the turn for every reader; judged by the real clients."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from tests.gateway_harness import (
    ScriptedUpstream,
    events,
    follow,
    post,
    running_gateway,
    user_body,
)
from tests.helpers import decode_sse, text_of, until

WORDS = 40


def slow_turn(pause: float = 0.02) -> list[Any]:
    items: list[Any] = [{"type": "message.create", "turnId": "t1"}]
    for i in range(WORDS):
        items += [pause, {"type": "message.part.text-delta", "turnId": "t1", "delta": f"w{i} "}]
    items += [
        {"type": "message.finalize", "turnId": "t1", "reason": "end_turn"},
        {"type": "complete"},
    ]
    return items


EXPECTED = "".join(f"w{i} " for i in range(WORDS))


@contextlib.asynccontextmanager
async def gateway(upstream: ScriptedUpstream, **settings: Any) -> AsyncIterator[str]:
    async with running_gateway(upstream=upstream.url, resume="memory", **settings) as (gw, _):
        yield gw


async def read_until(gw: str, session: str, marker: bytes, body: dict[str, Any]) -> bytes:
    """POST a turn and drop the connection once ``marker`` arrived."""
    got = b""
    async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
        url = f"{gw}/api/sessions/{session}/chat"
        async with client.stream("POST", url, json=body) as response:
            async for chunk in response.aiter_bytes():
                got += chunk
                if marker in got:
                    break
    return got


async def get_stream(gw: str, session: str, chat: str = "chat1") -> httpx.Response:
    async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
        return await client.get(f"{gw}/api/sessions/{session}/chat/{chat}/stream")


async def test_a_dropped_turn_resumes_from_the_first_chunk_for_every_client(real_clients) -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = events(*slow_turn())
        async with gateway(upstream) as gw:
            reference = await post(gw, "ref", user_body("hi"))
            partial = await read_until(gw, "s1", b'"w5 "', user_body("hi"))
            resumed = await get_stream(gw, "s1")
    assert not upstream.aborted("s1")  # detached, not aborted
    assert resumed.status_code == 200
    assert resumed.headers["x-vercel-ai-ui-message-stream"] == "v1"
    chunks = decode_sse(resumed.content)
    assert text_of(chunks) == EXPECTED and chunks[0]["type"] == "start"
    assert chunks[0]["messageId"] == decode_sse(partial)[0]["messageId"]  # the same message
    expected = real_clients.check(reference.content)
    for major, verdict in real_clients.check(resumed.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
        parts = verdict.message["parts"] if verdict.message else []
        assert parts == (expected[major].message or {})["parts"], major


async def test_readers_join_mid_turn_and_after_the_end_and_leave_without_harm() -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = events(*slow_turn(0.03))
        async with gateway(upstream) as gw:
            owner = asyncio.create_task(post(gw, "s2", user_body("hi")))
            await until(lambda: upstream.sent["s2"] >= 8)  # mid-turn
            # A reader that leaves at once, and 100 that stay.
            async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
                url = f"{gw}/api/sessions/s2/chat/chat1/stream"
                async with client.stream("GET", url) as response:
                    async for _ in response.aiter_bytes():
                        break
            readers = await asyncio.gather(*(get_stream(gw, "s2") for _ in range(100)))
            done = await owner
            after = await get_stream(gw, "s2")
    assert text_of(decode_sse(done.content)) == EXPECTED
    for response in [*readers, after]:
        assert response.status_code == 200
        assert text_of(decode_sse(response.content)) == EXPECTED
        assert response.content.endswith(b"data: [DONE]\n\n")


async def test_nothing_to_resume_is_204_and_resume_off_is_404() -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = events(*slow_turn(0))
        async with gateway(upstream) as gw:
            none = await get_stream(gw, "s3", "never-started")
            stop = await _stop(gw, "s3", "never-started")
            bad = await get_stream(gw, "bad%20id", "x")
        async with running_gateway(upstream=upstream.url) as (gw, _):
            off = await get_stream(gw, "s3")
    assert (none.status_code, stop.status_code, bad.status_code) == (204, 204, 400)
    assert off.status_code == 404


async def _stop(gw: str, session: str, chat: str = "chat1") -> httpx.Response:
    async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
        return await client.post(f"{gw}/api/sessions/{session}/chat/{chat}/stop")


async def test_stop_ends_the_turn_upstream_and_for_every_reader(real_clients) -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = events(*slow_turn(0.05), close=False)
        async with gateway(upstream) as gw:
            await read_until(gw, "s4", b'"w2 "', user_body("hi"))  # the client left: detached
            attached = asyncio.Event()
            reader = asyncio.create_task(follow(gw, "s4", attached))
            await asyncio.wait_for(attached.wait(), 10)
            stopped = await _stop(gw, "s4")
            _, resumed = await reader
            again = await _stop(gw, "s4")
            await asyncio.wait_for(upstream.closed["s4"].wait(), 2)
            next_turn = await post(gw, "s4", user_body("next"))  # the session is free
    assert stopped.status_code == 202 and again.status_code == 204
    assert upstream.aborted("s4")
    assert next_turn.status_code == 200
    text = text_of(decode_sse(resumed))
    assert text.startswith("w0 w1 w2 ") and len(text) < len(EXPECTED)
    for major, verdict in real_clients.check(resumed).items():
        assert verdict.ok, (major, verdict.fatal)


async def test_a_client_that_resumes_three_times_in_a_row_gets_the_same_message() -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = events(*slow_turn(0.03))
        async with gateway(upstream) as gw:
            await read_until(gw, "s5", b'"w1 "', user_body("hi"))
            bodies = []
            for marker in (b'"w8 "', b'"w16 "'):
                got = b""
                async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
                    url = f"{gw}/api/sessions/s5/chat/chat1/stream"
                    async with client.stream("GET", url) as response:
                        async for chunk in response.aiter_bytes():
                            got += chunk
                            if marker in got:
                                break
                bodies.append(got)
            final = await get_stream(gw, "s5")
    assert all(b'"type":"start"' in body for body in bodies)
    assert text_of(decode_sse(final.content)) == EXPECTED


async def test_a_continuation_resumed_on_a_fresh_page_shows_the_whole_message(real_clients) -> None:
    # A question answered: the continuation streams only what follows the answer. A page that
    # reloads mid-continuation has no message to add it to — the replay rebuilds the continued
    # message first (the client's copy, with its answer), then follows the continuation.
    async def script(ws: Any, up: ScriptedUpstream, session: str) -> None:
        if up.received[session][-1].get("type") == "answer":
            await events(*slow_turn())(ws, up, session)
            return
        opening = {"type": "message.part.text-delta", "turnId": "t0", "delta": "One question. "}
        question = {"type": "question", "questionId": "q1", "question": "Tabs or spaces?"}
        await events({"type": "message.create", "turnId": "t0"}, opening, question)(ws, up, session)

    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = script
        async with gateway(upstream) as gw:
            asked = await post(gw, "s6", user_body("ask me"))
            message = real_clients.check(asked.content, (7,))[7].message
            assert message is not None
            (ask,) = [p for p in message["parts"] if p["type"] == "tool-ask_user"]
            ask.update(state="output-available", output="tabs")  # the page's addToolOutput
            answer = user_body("ask me", messageId=message["id"])
            answer["messages"].append(message)
            await read_until(gw, "s6", b'"w5 "', answer)  # the page reloads mid-continuation
            resumed = await get_stream(gw, "s6")
            live = await post(gw, "s6", user_body("next"))  # (the session is free again)
    assert live.status_code == 200
    chunks = decode_sse(resumed.content)
    assert (chunks[0]["type"], chunks[0]["messageId"]) == ("start", message["id"])
    events_ = [e + b"\n\n" for e in resumed.content.split(b"\n\n") if e]
    starts = [i for i, e in enumerate(events_) if e.startswith(b'data: {"type":"start"')]
    continuation = b"".join(events_[starts[1] :])  # the turn's own stream, as the page had it
    expected = real_clients.check(continuation, (5, 6, 7), message)
    for major, verdict in real_clients.check(resumed.content).items():
        assert verdict.ok, (major, verdict.fatal)
        assert verdict.message == expected[major].message, major
        text = "".join(p.get("text", "") for p in verdict.message["parts"] if p["type"] == "text")
        assert text == "One question. " + EXPECTED, major
