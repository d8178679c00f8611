"""Thousands of turns (some aborted by the client): sockets, tasks and memory stay flat; and the
one-line-per-turn log never carries credentials or message contents."""

from __future__ import annotations

import asyncio
import gc
import os
import weakref

import httpx
import orjson
import pytest
from structlog.testing import capture_logs

from tests.gateway_harness import (
    ScriptedUpstream,
    agent_ops_turn,
    events,
    post,
    running_gateway,
    user_body,
)
from tests.helpers import until

pytestmark = pytest.mark.asyncio

TURNS = 2000
CONCURRENCY = 20


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.slow
async def test_soak_thousands_of_turns_leaves_nothing_behind() -> None:
    async with ScriptedUpstream() as up, running_gateway(upstream=up.url) as (base, app):
        up.scripts["*"] = events(*agent_ops_turn("a few words of text"), 0.02)

        async def until_aborted(ws, upstream, session):
            await upstream.send(ws, session, {"type": "message.create", "turnId": "t"})
            for _ in range(500):  # bounded: 5 s
                await upstream.send(
                    ws,
                    session,
                    {"type": "message.part.text-delta", "turnId": "t", "delta": "more "},
                )
                await asyncio.sleep(0.01)
                if upstream.aborted(session):
                    return

        for i in range(0, 200 + TURNS, 10):
            up.scripts[f"soak-{i}"] = until_aborted
        body = orjson.dumps(user_body())
        limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
        async with httpx.AsyncClient(trust_env=False, limits=limits, timeout=30) as client:

            async def turn(i: int) -> None:
                url = f"{base}/api/sessions/soak-{i}/chat"
                headers = {"content-type": "application/json"}
                if i % 10 == 0:  # the user presses Stop after the first bytes
                    async with client.stream("POST", url, content=body, headers=headers) as r:
                        async for _ in r.aiter_bytes():
                            break
                    return
                response = await client.post(url, content=body, headers=headers)
                assert response.status_code == 200 and response.content.endswith(b"[DONE]\n\n")

            async def run(start: int, count: int) -> None:
                queue = iter(range(start, start + count))

                async def worker() -> None:
                    for i in queue:
                        await turn(i)

                await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

            def settled() -> bool:  # aborted upstream sockets have finished closing
                return up.open_connections == 0 and not app.state.gateway.turns.runs

            await run(0, 200)  # warm-up: pools, caches, lazy imports
            await until(settled)
            gc.collect()
            fds_before, rss_before = open_fds(), rss_kb()
            tasks_before = len(asyncio.all_tasks())
            await run(200, TURNS)
            await until(settled)
            gc.collect()
            fds_after, rss_after = open_fds(), rss_kb()
            tasks_after = len(asyncio.all_tasks())
        state = app.state.gateway
        assert not state.turns.runs and not state.turns.sessions
        assert up.open_connections == 0
        assert fds_after - fds_before <= 5, (fds_before, fds_after)
        assert tasks_after - tasks_before <= 2, (tasks_before, tasks_after)
        assert rss_after - rss_before < 40_000, (rss_before, rss_after)  # KiB
        aborted = sum(
            1 for s, frames in up.received.items() if any(f.get("type") == "abort" for f in frames)
        )
        assert aborted >= TURNS // 10 * 0.9


class _RecordingSet(set):
    """``OpenTurns.runs`` that also keeps a weak reference to every stream added."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[weakref.ref] = []

    def add(self, item) -> None:
        self.refs.append(weakref.ref(item))
        super().add(item)


async def test_finished_turns_are_freed_without_the_cycle_collector() -> None:
    """A turn's stream, translator and upstream socket go away by reference counting as soon as
    it ends, completed or aborted: memory held until the cyclic collector happens to run grows
    with traffic (and makes each collection slower)."""
    async with ScriptedUpstream() as up, running_gateway(upstream=up.url) as (base, app):
        up.scripts["*"] = events(*agent_ops_turn("some words"))
        up.scripts["stop-me"] = events(*agent_ops_turn("some words")[:2], close=False)
        state = app.state.gateway
        state.turns.runs = recorded = _RecordingSet()
        gc.collect()
        gc.disable()
        try:
            for i in range(3):
                assert (await post(base, f"done-{i}")).status_code == 200
            async with httpx.AsyncClient(trust_env=False, timeout=10) as client:
                url = f"{base}/api/sessions/stop-me/chat"
                async with client.stream("POST", url, json=user_body()) as response:
                    async for _ in response.aiter_bytes():
                        break
            for _ in range(100):  # bounded: the aborted turn closes its upstream within 1 s
                if not state.turns.runs:
                    break
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.05)
            alive = [ref() for ref in recorded.refs if ref() is not None]
        finally:
            gc.enable()
        assert len(recorded.refs) == 4
        assert alive == [], [type(s).__name__ for s in alive]


async def test_one_log_line_per_turn_without_secrets() -> None:
    async with (
        ScriptedUpstream() as up,
        running_gateway(upstream=up.url, auth="bearer-forward") as (base, _),
    ):
        up.scripts["*"] = events(*agent_ops_turn("super secret answer"))
        with capture_logs() as logs:
            await post(
                base,
                "s1",
                user_body("my private question"),
                headers={"authorization": "Bearer tok-SECRET-1"},
            )
            await post(base, "s1")  # no token: 401
    ends = [e for e in logs if e["event"] == "stream.end"]
    rejected = [e for e in logs if e["event"] == "request.rejected"]
    assert len(ends) == 1 and len(rejected) == 1
    line = ends[0]
    assert line["session_id"] == "s1" and line["dialect"] == "agent-ops-v2"
    assert line["close_reason"] == "completed" and line["finish_reason"] == "stop"
    assert line["timeout"] is None and line["error"] is None
    for key in (
        "request_id",
        "duration_ms",
        "chunks",
        "upstream_events",
        "guard_repairs",
        "client_disconnected",
    ):
        assert key in line
    assert rejected[0]["status"] == 401
    text = repr(logs)
    assert "tok-SECRET-1" not in text and "secret answer" not in text and "private" not in text
