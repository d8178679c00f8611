"""Durable loop turns (``durable = true``) when their instance stops on purpose (SIGTERM: it
hands its turns over without waiting for the lease; a rolling restart of every instance), is
paused past its lease (SIGSTOP, then SIGCONT: it writes nothing after the takeover), restarts
alone (on SQLite: it recovers its own turn), or keeps dying at one point (``max_recoveries``:
the turn ends with an error). Every followed stream judged by the real ai 5, 6 and 7 clients.
The world is ``tests/durable_harness.py``."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import httpx
from redis import Redis

from tests.conformance.harness import AI7_WITHOUT_RESET_STEP, chat_loop
from tests.durable_harness import (
    FINAL,
    LONG,
    Follower,
    check_turn,
    durable_world,
    executions_of,
    postgres,
    resumed_within,
    shown,
    start_turn,
    wait_for,
)

LEASE = 1.5


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
        redis = Redis.from_url(redis_url)
        entries = redis.xrange("chunkbridge:pause:pause:log")
        cluster.signal(owner, signal.SIGCONT)
        time.sleep(2 * LEASE)  # the paused owner wakes, finds the turn gone
        replay = httpx.get(follower.url, timeout=20).content
        assert redis.xrange("chunkbridge:pause:pause:log") == entries  # not a byte more
        assert [b"e" in fields for _, fields in entries].count(True) == 1
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


def test_a_rolling_restart_of_every_instance_loses_nothing_of_a_long_turn(
    redis_url: str, postgres_url: str, tmp_path: Path, real_clients: Any
) -> None:
    lease = 10.0  # (a hand-over never waits for it)
    store = postgres(postgres_url)
    # slow lookups (1.5 s: the turn takes ~15 s), so the turn is still running when the
    # second instance stops, after the first came back (a start takes seconds on a busy machine)
    with durable_world(tmp_path, store, redis_url, lease=lease, slow=1.5) as world:
        model, cluster, log = world
        first, second = cluster.instances
        start_turn(first.base, "long")
        for instance in (first, second):  # each stopped and started again in turn
            wanted = len(model.steps_of("long")) + 1
            try:
                wait_for(lambda n=wanted: len(model.steps_of("long")) >= n, 30, "one more step")
            except AssertionError:
                cluster.stop_all()
                (tmp_path / "instances.log").write_text("\n".join(cluster.output))
                raise AssertionError(
                    f"no step after {model.steps_of('long')} ({tmp_path / 'instances.log'})"
                ) from None
            assert model.steps_of("long")[-1] < LONG - 1, "the turn ended before the restart"
            cluster.signal(instance, signal.SIGTERM)
            cluster.collect(instance)
            cluster.start(instance)
        wait_for(lambda: model.steps_of("long")[-1:] == [LONG], 60, "the last step")
        follower = Follower(first.base, "long")
        follower.start()
        follower.join(60)
        executions = executions_of(log)
    output = "\n".join(cluster.output)
    (verdicts,) = real_clients.check_many([follower.body])
    assert follower.body.endswith(b"data: [DONE]\n\n"), follower.body[-300:]
    assert not [c for c in follower.chunks if c["type"] == "error"]
    for major, verdict in verdicts.items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
    message = verdicts[7].message
    text = "".join(p["text"] for p in message["parts"] if p["type"] == "text")
    for n in range(1, LONG):
        assert text.count(f"Step {n}.") == 1, text
    assert text.count(FINAL) == 1
    calls = [p for p in message["parts"] if "toolCallId" in p]
    assert [p["toolCallId"] for p in calls] == [f"call_{n}" for n in range(1, LONG)]
    assert all(p["state"] == "output-available" for p in calls), calls
    assert output.count("turn.handed_over") >= 2  # both instances handed the turn over
    # every step asked for; again only one a hand-over cut short (one per hand-over at most)
    asked = model.steps_of("long")
    assert sorted(set(asked)) == list(range(1, LONG + 1))
    assert len(asked) - LONG <= 2, asked
    assert len(executions) >= 2 * (LONG - 1)


def test_a_turn_that_keeps_dying_at_one_point_ends_with_an_error(
    redis_url: str, postgres_url: str, tmp_path: Path, real_clients: Any
) -> None:
    store = postgres(postgres_url)
    extra = ("--max-recoveries", "1")
    with durable_world(tmp_path, store, redis_url, lease=LEASE, extra=extra) as world:
        model, cluster, log = world
        first, second = cluster.instances
        cluster.kill(second)
        cluster.start(second, "1")  # it dies at its first checkpoint write: the takeover's
        start_turn(first.base, "doomed")
        wait_for(lambda: any(e.tool == "lookup" for e in executions_of(log)), 20, "lookup")
        cluster.kill(first)
        assert second.proc is not None
        second.proc.wait(30)  # took the turn over, and died with it
        cluster.collect(second)
        cluster.start(first)  # the second takeover from the same checkpoint: past the budget
        follower = Follower(first.base, "doomed")
        follower.start()
        follower.join(60)
    output = "\n".join(cluster.output)  # (every instance stopped: all it printed)
    chunks = follower.chunks
    errors = [c for c in chunks if c["type"] == "error"]
    assert errors and "too often" in errors[0]["errorText"], chunks[-3:]
    assert follower.body.endswith(b"data: [DONE]\n\n")
    for major, verdict in real_clients.check(follower.body).items():
        assert verdict.ok and verdict.error_text == errors[0]["errorText"], (major, verdict)
    assert "turn.recovery_exhausted" in output


def test_a_continuation_taken_over_before_it_began_sends_its_denials(
    redis_url: str, postgres_url: str, tmp_path: Path, real_clients: Any
) -> None:
    """The app denies the charge; the instance the continuation reaches dies right after its
    first checkpoint: the taker begins the continuation — the denial first — and the model
    answers with it."""
    approve = 'tool_approval = { charge = "always" }\n'
    store = postgres(postgres_url)
    extra = ("--target", "7")
    with durable_world(tmp_path, store, redis_url, lease=LEASE, tools=approve, extra=extra) as w:
        world = w
        model, cluster, log = world
        first, second = cluster.instances
        cluster.kill(second)
        cluster.start(second, "1:after")  # dies once the continuation's checkpoint is written
        apis = [f"{first.base}/api/sessions/appr/chat", f"{second.base}/api/sessions/appr/chat"]
        answers = [{"kind": "approval", "approved": False, "reason": "no"}]
        chat_loop(apis[0], 7, "order appr", answers, False, 60, apis)
        assert second.proc is not None
        second.proc.wait(30)
        cluster.collect(second)
        follower = Follower(first.base, "appr")
        follower.url = f"{first.base}/api/sessions/appr/chat/chat-7/stream"
        follower.start()
        follower.join(60)
        executions = executions_of(log)
    chunks = follower.chunks
    assert follower.body.endswith(b"data: [DONE]\n\n"), follower.body[-300:]
    # after the message it continues (replayed for fresh readers), the continuation's own
    # stream: the denial first, then the answer
    starts = [i for i, c in enumerate(chunks) if c["type"] == "start"]
    assert len(starts) == 2, starts
    own = chunks[starts[1] :]
    charge = [c["type"] for c in own if c.get("toolCallId") == "call_charge"]
    assert charge == ["tool-output-denied"], own[:6]
    assert own.index(next(c for c in own if c.get("toolCallId") == "call_charge")) < next(
        i for i, c in enumerate(own) if c["type"] == "text-start"
    )
    (verdict,) = real_clients.check(follower.body, majors=(7,)).values()  # (a target-7 stream)
    assert verdict.ok and verdict.finish_reason == "stop", verdict.fatal
    assert FINAL in "".join(c.get("delta", "") for c in chunks if c["type"] == "text-delta")
    assert not [e for e in executions if e.tool == "charge"]  # denied: never run
    assert model.steps_of("appr") == [1, 2, 3]


def test_a_step_cut_off_by_a_death_is_withdrawn_where_the_client_takes_reset_step(
    redis_url: str, postgres_url: str, tmp_path: Path, real_clients: Any
) -> None:
    """With ``reset_step`` (an app on ai >= 7.0.70), the answer's step the owner was streaming
    when it died is withdrawn with ``reset-step`` and streamed again as the model says it now,
    instead of continued where readers were: the pinned ai 7 shows it once; ai 7.0.69 would
    refuse the stream, which is why the setting is the app's to turn on."""
    extra = ("--target", "7", "--reset-step")
    with durable_world(tmp_path, postgres(postgres_url), redis_url, lease=LEASE, extra=extra) as w:
        model, cluster, log = w
        owner, other = cluster.instances
        follower = Follower(other.base, "withdraw")
        start_turn(owner.base, "withdraw")
        follower.start()
        wait_for(lambda: 3 in model.steps_of("withdraw"), 30, "the answer's step")
        time.sleep(0.4)  # about a dozen of its words shown (one each 30 ms)
        cluster.kill(owner)
        follower.join(60)
        executions = executions_of(log)
    chunks = follower.chunks
    kinds = [c["type"] for c in chunks]
    assert kinds.count("reset-step") == 1, kinds
    withdrawn = kinds.index("reset-step")
    said = [c["delta"] for c in chunks if c["type"] == "text-delta"]
    before = [c.get("delta") for c in chunks[:withdrawn] if c["type"] == "text-delta"]
    assert "word0" in before  # readers saw the answer begin, then saw it withdrawn
    assert said.count(" word39.") == 1 and said.count("word0") == 2, said
    # the redone step goes on in the step readers saw open: no second step-start
    assert kinds[withdrawn:].count("start-step") == 0, kinds[withdrawn:]
    verdicts = real_clients.check(follower.body, majors=(7, AI7_WITHOUT_RESET_STEP))
    assert check_turn("withdraw", follower, {7: verdicts[7]}, model, executions) >= 1
    message = verdicts[7].message
    steps = [i for i, p in enumerate(message["parts"]) if p["type"] == "step-start"]
    assert len(steps) == 3, message["parts"]  # one per model step, the redone one included
    assert not verdicts[AI7_WITHOUT_RESET_STEP].ok
