"""``busy``: the session's line as a sans-I/O state machine, the same rules in Redis (a real
redis-server, several clients racing), the policy's settings, the splice of the answer a
waiting message waited for, and the loop's ending when a message steers it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest
import redis.asyncio as aioredis

from chunkbridge.gateway.config import ConfigError
from chunkbridge.gateway.config_sources import load_config
from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.stores.line import (
    Admitted,
    Gone,
    Joined,
    Refused,
    SessionLine,
    Taken,
    Waiter,
    Waiting,
    WaitKind,
    wait_kind,
)
from chunkbridge.gateway.stores.local_line import LocalLines
from chunkbridge.gateway.stores.redis_line import RedisLine
from chunkbridge.gateway.stores.redis_resume import RedisResumeStore
from chunkbridge.gateway.turn.history import with_answer_copy
from chunkbridge.kit import counter_ids
from chunkbridge.translators.core.agent_loop import (
    AgentLoop,
    CallKind,
    LoopEnding,
    LoopPhase,
    ToolPolicy,
)
from chunkbridge.translators.core.closing import CloseReason, CloseRequest


def waiter(n: int, kind: WaitKind = WaitKind.QUEUE, chat: str = "c") -> Waiter:
    return Waiter(f"m{n}", kind, f"u{n}", chat)


# -- the state machine -------------------------------------------------------------------------


def test_a_free_session_admits_and_a_busy_one_lines_up_in_admission_order() -> None:
    line = SessionLine()
    assert line.enter(waiter(1), limit=1, queue_max=2) == Admitted()
    assert line.enter(waiter(2), limit=1, queue_max=2) == Waiting(1)
    assert line.enter(waiter(3), limit=1, queue_max=2) == Waiting(2)
    assert line.enter(waiter(4), limit=1, queue_max=2) == Refused(full=True)
    assert line.enter(None, limit=1, queue_max=2) == Refused(full=False)  # may not wait
    assert line.take("m3", limit=1) == Waiting(2)  # not first
    assert line.take("m2", limit=1) == Waiting(1)  # first, but the turn is held
    line.release()
    assert line.take("m3", limit=1) == Waiting(2)  # the turn is free: still not first
    assert line.take("m2", limit=1) == Admitted()
    assert line.take("m3", limit=1) == Waiting(1)
    assert line.head() == waiter(3)


def test_nobody_jumps_the_line_at_the_moment_a_turn_is_free() -> None:
    line = SessionLine()
    line.enter(waiter(1), 1, 4)
    line.enter(waiter(2), 1, 4)
    line.release()  # turn 1 ended; m2 has not looked yet
    assert line.enter(waiter(3), 1, 4) == Waiting(2)  # behind m2, though a turn is free
    assert line.seize(1)  # what never waits (a continuation) takes a free turn, as today
    assert line.take("m2", 1) == Waiting(1)


def test_a_request_that_leaves_or_lapses_moves_those_behind_it_up() -> None:
    line = SessionLine()
    line.enter(waiter(1), 1, 4)
    line.enter(waiter(2), 1, 4, now=0, lapses=10)
    line.enter(waiter(3), 1, 4, now=0, lapses=30)
    line.enter(waiter(4), 1, 4, now=0, lapses=30)
    assert line.leave("m3") and not line.leave("m3")
    assert line.take("m4", 1, now=5) == Waiting(2)
    line.renew("m4", 40)
    assert line.take("m4", 1, now=20) == Waiting(1)  # m2's entry lapsed (its instance died)
    assert line.take("m2", 1, now=20) == Gone()
    line.release()
    assert line.take("m4", 1, now=35) == Admitted()
    line.release()
    assert line.idle


@pytest.mark.parametrize(
    ("busy", "steerable", "kind"),
    [
        ("reject", True, None),
        ("queue", False, WaitKind.QUEUE),
        ("interrupt", False, WaitKind.INTERRUPT),
        ("steer", True, WaitKind.STEER),
        ("steer", False, WaitKind.QUEUE),  # nothing to steer: it waits as queued
    ],
)
def test_the_policy_says_how_a_message_waits(
    busy: str, steerable: bool, kind: WaitKind | None
) -> None:
    assert wait_kind(busy, steerable) is kind


async def test_the_process_line_counts_the_turns_and_wakes_who_waits() -> None:
    lines = LocalLines()
    lines.hold("s", 1)
    assert await lines.enter("s", waiter(2), 1, 4) == Waiting(1)
    woke = asyncio.create_task(lines.changed("s", 5))
    await asyncio.sleep(0)
    lines.free("s")  # the turn ended: whoever waits looks again at once
    await asyncio.wait_for(woke, 1)
    assert await lines.take("s", "m2", 1) == Admitted()
    assert lines.sessions == {"s": 1}
    lines.free("s")
    assert lines.sessions == {}


# -- the same rules in Redis, raced --------------------------------------------------------------


def redis_line(url: str) -> tuple[aioredis.Redis, RedisLine]:
    client = aioredis.Redis.from_url(url)
    resume = RedisResumeStore(client, ttl=60, lease=2.0, log=get_logger("test"))
    return client, RedisLine(resume)


async def test_redis_admits_one_and_lines_up_the_rest_in_one_order_across_clients(
    redis_url: str,
) -> None:
    """Twelve requests from three "instances" at once: one runs, ``queue_max`` wait with the
    positions 1…n once each, the rest are refused — a race no interleaving breaks."""
    pairs = [redis_line(redis_url) for _ in range(3)]
    try:
        lines = [line for _, line in pairs]
        entries = await asyncio.gather(
            *(lines[i % 3].enter("s", waiter(i), 1, 5) for i in range(12))
        )
        assert entries.count(Admitted()) == 1
        positions = sorted(e.position for e in entries if isinstance(e, Waiting))
        assert positions == [1, 2, 3, 4, 5]
        assert entries.count(Refused(full=True)) == 6
        order = {e.position: i for i, e in enumerate(entries) if isinstance(e, Waiting)}
        first = order[1]
        assert await lines[1].take("s", f"m{first}", 1) == Waiting(1)  # the turn is held
        head = await lines[2].head("s")
        assert head == waiter(first)
    finally:
        for client, _ in pairs:
            await client.aclose()


async def test_redis_a_freed_turn_goes_to_the_first_and_lapsed_entries_leave(
    redis_url: str,
) -> None:
    client, line = redis_line(redis_url)
    try:
        assert await line.enter("s", waiter(1), 1, 4) == Admitted()
        assert await line.enter("s", waiter(2), 1, 4) == Waiting(1)
        assert await line.enter("s", waiter(3, WaitKind.STEER), 1, 4) == Waiting(2)
        await line.resume.release_turn("s", "m1")
        assert await line.take("s", "m3", 1) == Waiting(2)
        assert await line.take("s", "m2", 1) == Admitted()
        assert await line.head("s") == waiter(3, WaitKind.STEER)
        # m3's instance stops renewing it: after the lease (2 s) it has left
        await client.zadd("chunkbridge:line:s:lapse", {"m3": 0})
        assert await line.take("s", "m3", 1) == Gone()
        assert await line.head("s") is None
    finally:
        await client.aclose()


async def test_redis_answers_are_noted_per_chat(redis_url: str) -> None:
    client, line = redis_line(redis_url)
    try:
        assert await line.answer_of(("s", "c")) is None
        line.note_answer(("s", "c"), "a1", "u1", ttl=60)
        assert await line.answer_of(("s", "c")) == ("a1", "u1")
        assert await line.answer_of(("s", "other")) is None
    finally:
        await client.aclose()


async def _taken_then_joined_or_waiting_again(line: Any) -> None:
    """A running turn takes the first waiter as a steer: it is neither let in when a turn
    frees nor shown to another turn, until the steer lands (joined: it leaves once it follows
    its answer) or the turn ends without it (it waits again, first)."""
    steer = waiter(2, WaitKind.STEER)
    assert await line.enter("s", waiter(1), 2, 4) == Admitted()
    assert await line.enter("s", waiter(9), 2, 4) == Admitted()
    assert await line.enter("s", steer, 2, 4) == Waiting(1)
    assert await line.claim("s", "m3", "m1") is False  # not in the line
    assert await line.claim("s", "m2", "m1") is True  # by the turn m1 holds
    assert await line.claim("s", "m2", "m1") is False  # taken once
    assert await line.head("s") is None  # nothing else may be steered before it
    await _free_one(line, "m9")  # a turn frees: the taken message is not let in
    assert await line.take("s", "m2", 2) == Taken(1)
    assert await line.unclaim("s", "m2") is True  # the run ended without it
    assert await line.unclaim("s", "m2") is False
    assert await line.take("s", "m2", 2) == Admitted()
    # again, and this time the steer lands
    assert await line.enter("s", waiter(4, WaitKind.STEER), 1, 4) == Waiting(1)
    assert await line.claim("s", "m4", "m2") and await line.join("s", "m4")
    assert await line.join("s", "m4") is False  # (joined once)
    assert await line.take("s", "m4", 9) == Joined()  # never admitted: it follows its answer
    assert await line.head("s") is None  # until it leaves
    await line.leave("s", "m4")
    assert await line.take("s", "m4", 9) == Gone()


async def _free_one(line: Any, member: str) -> None:
    if isinstance(line, LocalLines):
        line.free("s")
    else:
        await line.resume.release_turn("s", member)


async def test_a_taken_steer_in_one_process() -> None:
    await _taken_then_joined_or_waiting_again(LocalLines())


async def test_a_taken_steer_in_redis(redis_url: str) -> None:
    client, line = redis_line(redis_url)
    try:
        await _taken_then_joined_or_waiting_again(line)
    finally:
        await client.aclose()


async def test_redis_a_message_taken_by_a_turn_whose_instance_died_waits_again(
    redis_url: str,
) -> None:
    """The turn that took the steer held ``m1``; its instance dies (its hold's lease lapses,
    here set in the past): the message is first again, and let in when a turn is free."""
    client, line = redis_line(redis_url)
    try:
        assert await line.enter("s", waiter(1), 1, 4) == Admitted()
        assert await line.enter("s", waiter(2, WaitKind.STEER), 1, 4) == Waiting(1)
        assert await line.claim("s", "m2", "m1")
        assert await line.take("s", "m2", 1) == Taken(1)
        await client.zadd("chunkbridge:turns:s", {"m1": 0})  # m1's lease ended
        assert await line.take("s", "m2", 1) == Admitted()
    finally:
        await client.aclose()


def test_a_lapsed_entry_takes_its_steer_state_with_it() -> None:
    line = SessionLine()
    line.held = 1
    line.enter(waiter(1, WaitKind.STEER), 1, 4, now=0.0, lapses=5.0)
    assert line.claim("m1")
    line.expire(10.0)
    assert line.states == {} and line.take("m1", 1, 10.0) == Gone()


# -- settings ----------------------------------------------------------------------------------


def test_busy_defaults_to_reject_and_needs_resume_otherwise() -> None:
    config = load_config().config
    assert (config.busy, config.queue_max, config.queue_timeout) == ("reject", 4, 300.0)
    assert load_config(busy="queue", resume="memory").config.busy == "queue"
    with pytest.raises(ConfigError) as info:
        load_config(busy="interrupt")
    assert "busy = interrupt" in str(info.value) and "resume" in str(info.value)


def test_serve_refuses_to_start_with_a_busy_policy_and_resume_off() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chunkbridge", "serve", "--dialect", "agent-ops-v2"]
        + ["--busy", "steer", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "busy = steer" in said and "resume" in said, said


# -- the answer waited for, the server's copy ----------------------------------------------------


def _m(message_id: str, role: str = "user", text: str = "") -> dict[str, Any]:
    return {"id": message_id, "role": role, "parts": [{"type": "text", "text": text}]}


def test_the_servers_copy_replaces_the_clients_cut_one_or_is_put_after_its_question() -> None:
    full = _m("a1", "assistant", "the whole answer")
    cut = [_m("u1"), _m("a1", "assistant", "the wh"), _m("u2")]
    assert with_answer_copy(cut, full, "u1") == [_m("u1"), full, _m("u2")]
    missing = [_m("u1"), _m("u2"), _m("u3")]  # sent before the answer's first part
    assert with_answer_copy(missing, full, "u1") == [_m("u1"), full, _m("u2"), _m("u3")]
    unknown = [_m("u0"), _m("u2")]
    assert with_answer_copy(unknown, full, "") == [_m("u0"), full, _m("u2")]


def test_a_steered_loop_ends_at_the_boundary_with_the_steps_it_ran() -> None:
    loop = AgentLoop(ToolPolicy({"lookup": False}), 10, ids=counter_ids())
    assert loop.call("lookup") is CallKind.RUN
    step = CloseRequest(
        CloseReason.COMPLETED, finish_reason="tool-calls", message_metadata={"usage": {"a": 1}}
    )
    assert loop.step_ended(step) is None  # the loop would call the model again…
    ending = loop.steered("u2", step)  # …but a new user message steers it
    assert ending.finish_reason == "tool-calls" and loop.phase is LoopPhase.ENDED
    assert ending.message_metadata == {
        "usage": {"a": 1},
        "agentLoop": {
            "ending": "steered",
            "steps": [{"finishReason": "tool-calls", "usage": {"a": 1}}],
        },
        "steeredBy": "u2",
    }
    assert loop.step == 1 and loop.ending is LoopEnding.STEERED
