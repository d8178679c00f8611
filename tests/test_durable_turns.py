"""Durable loop turns (``durable = true``) under SIGKILL: turns started at seeded random offsets
on an instance that dies — SIGKILLed the moment a call of a tool starts, or by its own hand at a
random checkpoint write (the ``CB_FAULT_KILL_AT`` hook), each turn then at another point — go on
on the other instance from their last checkpoint. A reader
following each turn from the surviving instance sees one message to ``[DONE]`` (judged by the
real ai 5, 6 and 7 clients): no error, no text twice, the non-idempotent tool never run twice,
the read-only one run again with the same idempotency key, the continuation within
``owner_lease`` + 2 s of the death. The seed is printed; ``DURABLE_SEED`` replays it. The world
is ``tests/durable_harness.py``."""

from __future__ import annotations

import functools
import os
import random
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.durable_harness import (
    Follower,
    check_turn,
    durable_world,
    executions_of,
    postgres,
    resumed_within,
    start_turn,
    wait_for,
)

LEASE = 1.5
#: Turns started on the instance to be killed, per round (each at another point when it dies).
TURNS = 8


def test_turns_killed_at_random_points_go_on_on_the_other_instance(
    redis_url: str, postgres_url: str, tmp_path: Path, real_clients: Any
) -> None:
    seed = int(os.environ.get("DURABLE_SEED", random.randrange(1 << 30)))
    print(f"durable kill points: DURABLE_SEED={seed}")
    rng = random.Random(seed)
    with durable_world(tmp_path, postgres(postgres_url), redis_url, lease=LEASE) as world:
        model, cluster, log = world
        rounds: list[tuple[list[str], list[Follower], float]] = []
        # SIGKILL at a random time, the moment a turn's call of that tool starts (so one call
        # of each is cut off); then the victim kills itself at a random checkpoint write
        faults = ["lookup", "charge", str(rng.randrange(6, 16)), f"{rng.randrange(6, 16)}:after"]
        for number, fault in enumerate(faults):
            victim, survivor = cluster.instances[number % 2], cluster.instances[1 - number % 2]
            hook = fault[:1].isdigit()
            if hook:
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
            if not hook:  # the next call of the tool to start (the last turn's, at least)
                started = functools.partial(_started, log, fault, sessions, len(executions_of(log)))
                wait_for(started, 20, fault)
                cluster.kill(victim)
                killed = time.time()
            else:
                assert victim.proc is not None
                try:
                    victim.proc.wait(30)
                except subprocess.TimeoutExpired:
                    cluster.kill(victim)
                    (tmp_path / "instances.log").write_text("\n".join(cluster.output))
                    raise AssertionError(
                        f"round {number}: the victim never reached checkpoint write {fault}"
                        f" (its output: {tmp_path / 'instances.log'})"
                    ) from None
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
            print(f"round {number} ({fault}): {time.monotonic() - began:.1f} s")
        executions = executions_of(log)
    bodies = [f.body for _, followers, _ in rounds for f in followers]
    verdicts = iter(real_clients.check_many(bodies))
    for number, (sessions, followers, killed) in enumerate(rounds):
        recovered = 0
        for session, follower in zip(sessions, followers, strict=True):
            try:
                recovered += check_turn(session, follower, next(verdicts), model, executions)
                resumed_within(session, model, executions, killed, LEASE + 2.0)
            except AssertionError:
                (tmp_path / "instances.log").write_text("\n".join(cluster.output))
                print(f"the instances' output: {tmp_path / 'instances.log'}")
                raise
        assert recovered >= 1, f"round {number}: no turn was taken over"
    # the first round cut a lookup off: it ran again; the second a charge: it was refused
    looks = [e for e in executions if e.tool == "lookup" and e.event == "start"]
    first = [e for e in looks if e.session.startswith("r0")]
    assert len(first) > len({e.session for e in first}), "no lookup was run again"
    assert any(_interrupted(f.chunks) for f in rounds[1][1]), "no charge was cut off"


def _started(log: Path, tool: str, sessions: list[str], after: int) -> bool:
    """A call of ``tool`` by a turn of ``sessions`` started past the log's first ``after``
    lines (it runs now: the kill cuts it off)."""
    fresh = executions_of(log)[after:]
    return any(e.tool == tool and e.event == "start" and e.session in sessions for e in fresh)


def _interrupted(chunks: list[dict[str, Any]]) -> bool:
    return any(
        c["type"] == "tool-output-error" and c["toolCallId"] == "call_charge" for c in chunks
    )
