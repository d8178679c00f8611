"""Durable loop turns (``durable = true``): the instance running a turn dies — SIGKILL at
seeded random points, or by its own hand at a chosen checkpoint write — or is stopped (SIGTERM)
or paused (SIGSTOP) mid-turn, and another instance goes on with the turn from its last
checkpoint. A reader following each turn from the surviving instance sees one message to
``[DONE]`` (judged by the real ai 5, 6 and 7 clients): no error, no text twice, the
non-idempotent tool never run twice, the read-only one run again with the same idempotency key.
The world is ``tests/durable_harness.py``: real processes, Redis, PostgreSQL (or SQLite), a real
MCP server, a scripted model."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import httpx

from tests.durable_harness import (
    FINAL,
    Execution,
    Follower,
    Model,
    durable_world,
    executions_of,
    start_turn,
    wait_for,
)

LEASE = 1.5
#: Turns started on the instance to be killed, per round (each at another point when it dies).
TURNS = 8


def postgres(url: str) -> list[str]:
    return ["--store", "postgres", "--store-url", url]


def check_turn(
    session: str,
    follower: Follower,
    verdicts: dict[int, Any],
    model: Model,
    executions: list[Execution],
) -> int:
    """Every check of one turn's followed stream; its recoveries."""
    assert follower.status == 200, (session, follower.status, follower.body[-300:])
    assert follower.body.endswith(b"data: [DONE]\n\n"), (session, follower.body[-300:])
    chunks = follower.chunks
    assert not [c for c in chunks if c["type"] == "error"], (session, chunks[-5:])
    for major, verdict in verdicts.items():
        assert verdict.ok, (session, major, verdict.fatal)
    message = verdicts[7].message
    text = "".join(p["text"] for p in message["parts"] if p["type"] == "text")
    for said in ("Let me look that up.", "Now the charge.", FINAL):
        assert text.count(said) == 1, (session, text)
    parts = {p["toolCallId"]: p for p in message["parts"] if "toolCallId" in p}
    assert parts["call_look"]["state"] == "output-available", (session, parts["call_look"])
    charge = parts["call_charge"]
    if charge["state"] == "output-error":
        assert "interrupted" in charge["errorText"], (session, charge)
    else:
        assert charge["state"] == "output-available", (session, charge)
    ran = [e for e in executions if e.session == session and e.event == "start"]
    charges = [e for e in ran if e.tool == "charge"]
    assert len(charges) <= 1, (session, charges)  # never twice
    looks = [e for e in ran if e.tool == "lookup"]
    assert looks and len({e.key for e in looks}) == 1, (session, looks)  # again: the same key
    assert model.steps_of(session)[-1] == 3, (session, model.steps_of(session))
    finish = [c for c in chunks if c["type"] == "finish"][-1]
    recoveries: int = finish["messageMetadata"]["agentLoop"].get("recoveries", 0)
    return recoveries


def shown(message: dict[str, Any]) -> list[tuple[str, Any]]:
    """What a message shows: its texts, its calls' states and outputs."""
    return [
        (p["type"], p.get("text") or (p.get("state"), p.get("output"), p.get("errorText")))
        for p in message["parts"]
        if p["type"] == "text" or "toolCallId" in p
    ]


def resumed_within(
    session: str, model: Model, executions: list[Execution], killed: float, limit: float
) -> None:
    """The turn's next model request or tool call after ``killed`` came within ``limit``."""
    after = [at for at, s, _ in model.requests if s == session and at > killed]
    after += [e.at for e in executions if e.session == session and e.event == "start"]
    after = [at for at in after if at > killed]
    if after:
        assert min(after) - killed <= limit, (session, min(after) - killed)


def test_turns_killed_at_random_points_go_on_on_the_other_instance(
    redis_url: str, postgres_url: str, tmp_path: Path, real_clients: Any
) -> None:
    seed = int(os.environ.get("DURABLE_SEED", random.randrange(1 << 30)))
    print(f"durable kill points: DURABLE_SEED={seed}")
    rng = random.Random(seed)
    with durable_world(tmp_path, postgres(postgres_url), redis_url, lease=LEASE) as world:
        model, cluster, log = world
        rounds: list[tuple[list[str], list[Follower], float]] = []
        # SIGKILL at a random time; then the victim kills itself at a checkpoint write
        faults = ["", "", str(rng.randrange(6, 16)), f"{rng.randrange(6, 16)}:after"]
        for number, fault in enumerate(faults):
            victim, survivor = cluster.instances[number % 2], cluster.instances[1 - number % 2]
            if fault:
                cluster.kill(victim)
                cluster.start(victim, fault)
            sessions = [f"r{number}t{i}" for i in range(TURNS)]
            kill_at = rng.uniform(1.0, 3.0)
            began = time.monotonic()
            posts, followers = [], []
            for session in sessions:
                posts.append(start_turn(victim.base, session))
                followers.append(Follower(survivor.base, session, posts[-1]))
                followers[-1].start()
                time.sleep(rng.uniform(0.0, kill_at / TURNS))
            if not fault:
                time.sleep(max(0.0, kill_at - (time.monotonic() - began)))
                cluster.kill(victim)
                killed = time.time()
            else:
                assert victim.proc is not None
                victim.proc.wait(30)
                killed = time.time()
                cluster.collect(victim)
            for follower in followers:
                follower.join(60)
            begun = []
            for session, post, follower in zip(sessions, posts, followers, strict=True):
                if model.steps_of(session):
                    begun.append((session, follower))
                else:  # its instance died before its first checkpoint: its POST failed
                    assert post.status != 200, post.url
            assert len(begun) >= 3, [f.status for f in followers]
            rounds.append(([s for s, _ in begun], [f for _, f in begun], killed))
            cluster.start(victim)
            print(f"round {number} ({fault or 'SIGKILL'}): {time.monotonic() - began:.1f} s")
        executions = executions_of(log)
    bodies = [f.body for _, followers, _ in rounds for f in followers]
    verdicts = iter(real_clients.check_many(bodies))
    recovered = 0
    for sessions, followers, killed in rounds:
        for session, follower in zip(sessions, followers, strict=True):
            try:
                recovered += check_turn(session, follower, next(verdicts), model, executions)
                resumed_within(session, model, executions, killed, LEASE + 2.0)
            except AssertionError:
                (tmp_path / "instances.log").write_text("\n".join(cluster.output))
                print(f"the instances' output: {tmp_path / 'instances.log'}")
                raise
    assert recovered >= len(faults)  # every round took turns over


def test_a_stopped_instance_hands_its_turns_over_without_the_lease(
    redis_url: str, postgres_url: str, tmp_path: Path, real_clients: Any
) -> None:
    lease = 10.0  # waiting for it would be seen
    with durable_world(tmp_path, postgres(postgres_url), redis_url, lease=lease) as world:
        model, cluster, log = world
        owner, other = cluster.instances
        follower = Follower(other.base, "term")
        start_turn(owner.base, "term")
        follower.start()
        wait_for(lambda: any(e.tool == "lookup" for e in executions_of(log)), 20, "lookup")
        stopped = time.time()
        cluster.signal(owner, signal.SIGTERM)
        follower.join(60)
        cluster.collect(owner)
        executions = executions_of(log)
    (verdicts,) = real_clients.check_many([follower.body])
    output = "\n".join(cluster.output)
    taken = [line for line in output.splitlines() if "turn.taken_over" in line]
    assert check_turn("term", follower, verdicts, model, executions) == 1, taken
    # the owner let the running lookup end (its checkpoint), then handed over: the other
    # instance called the model for the next step at once, not after the lease
    resumed_within("term", model, executions, stopped, 0.6 + 1.5)
    assert "turn.handed_over" in output


def test_a_paused_owner_writes_nothing_after_the_takeover(
    redis_url: str, postgres_url: str, tmp_path: Path, real_clients: Any
) -> None:
    with durable_world(tmp_path, postgres(postgres_url), redis_url, lease=LEASE) as world:
        model, cluster, log = world
        owner, other = cluster.instances
        follower = Follower(other.base, "pause")
        start_turn(owner.base, "pause")
        follower.start()
        wait_for(lambda: any(e.tool == "charge" for e in executions_of(log)), 20, "charge")
        cluster.signal(owner, signal.SIGSTOP)
        follower.join(60)  # the other instance took the turn over and ended it
        requests = len(model.requests)
        runs = len(executions_of(log))
        cluster.signal(owner, signal.SIGCONT)
        time.sleep(2 * LEASE)  # the paused owner wakes, finds the turn gone
        replay = httpx.get(follower.url, timeout=20).content
        stored = httpx.get(f"{other.base}/api/sessions/pause/chat/pause/messages", timeout=20)
        executions = executions_of(log)
        assert len(model.requests) == requests  # no model request from the paused owner
        assert len(executions) in (runs, runs + 1)  # its charge may end, nothing starts
        assert all(e.event == "end" for e in executions[runs:])
    (verdicts,) = real_clients.check_many([follower.body])
    assert check_turn("pause", follower, verdicts, model, executions) == 1
    assert replay == follower.body  # nothing appended after the takeover's [DONE]
    assert shown(stored.json()[-1]) == shown(verdicts[7].message)  # stored as streamed


def test_a_single_instance_restarted_on_sqlite_recovers_its_own_turns(
    redis_url: str, tmp_path: Path, real_clients: Any
) -> None:
    store = ["--store", "sqlite", "--store-path", str(tmp_path / "chats.db")]
    with durable_world(tmp_path, store, redis_url, count=1, lease=LEASE) as world:
        model, cluster, log = world
        (only,) = cluster.instances
        start_turn(only.base, "solo")
        wait_for(lambda: any(e.tool == "lookup" for e in executions_of(log)), 20, "lookup")
        cluster.kill(only)
        cluster.start(only)
        follower = Follower(only.base, "solo")
        follower.start()
        follower.join(60)
        executions = executions_of(log)
    (verdicts,) = real_clients.check_many([follower.body])
    assert check_turn("solo", follower, verdicts, model, executions) == 1
