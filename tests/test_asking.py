"""An agent that asks the user (a question, a tool approval) ends the turn only when it waits
(issue 22, item 1): its terminal event, a waiting status, its connection ending, or the settle
window of silence; an agent that asks in passing and goes on streams into the same message.

The driver tests run on virtual time (``looptime``): the settle window, the idle timeout and the
keep-alives are exact, whatever the machine is doing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chunkbridge.gateway.devtools.replay import replay_file
from tests.gateway_harness import ScriptedUpstream, events, post, running_gateway, user_body
from tests.helpers import new_turn
from tests.timed_upstream import TimedUpstream, record_writes, settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TURN = "t1"
CREATE = {"type": "message.create", "turnId": TURN}
QUESTION = {"type": "question", "questionId": "q1", "question": "Tabs or spaces?"}
APPROVAL = {
    "type": "message.part.tool-update",
    "turnId": TURN,
    "callId": "c1",
    "toolName": "delete_branch",
    "status": "awaiting_approval",
    "args": {"branch": "old"},
}
FINALIZE = {"type": "message.finalize", "turnId": TURN, "reason": "end_turn"}


def delta(text: str) -> dict[str, Any]:
    return {"type": "message.part.text-delta", "turnId": TURN, "delta": text}


def status(value: str) -> dict[str, Any]:
    return {"type": "agentStatus", "status": value}


def chunks_of(writes: list[tuple[float, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    return [c for _, chunks in writes for c in chunks]


def text(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


pytestmark = pytest.mark.looptime


@pytest.mark.parametrize("ask", [QUESTION, APPROVAL], ids=["question", "approval"])
async def test_an_agent_that_asks_and_falls_silent_ends_the_turn_after_the_settle_window(
    ask: dict[str, Any],
) -> None:
    upstream = TimedUpstream([(0, CREATE), (0.1, delta("One question. ")), (0.2, ask)], ends=False)
    writes, driver = await record_writes(upstream, new_turn("agent-ops-v2", target=7), settings())
    chunks = chunks_of(writes)
    assert chunks[-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert writes[-1][0] == pytest.approx(0.2 + 0.5, abs=0.01)  # the settle window, no more
    # The ask itself reached the client at once, before the turn ended.
    asked_at = next(t for t, cs in writes if any(c["type"].startswith("tool-") for c in cs))
    assert asked_at == pytest.approx(0.2, abs=0.01)
    assert not driver.abandoned and driver.timeout is None  # no abort frame: the agent waits
    assert driver.turn.close_reason is not None and driver.turn.close_reason.value == "completed"


async def test_an_agent_that_asks_in_passing_keeps_every_word_after_the_question() -> None:
    timeline = [
        (0, CREATE),
        (0.1, delta("I will start with the tests. ")),
        (0.2, QUESTION),
        (0.3, status("tool_calling")),
        # a tool that runs for 3 s: far longer than the settle window
        (0.4, {**APPROVAL, "callId": "t", "toolName": "run_tests", "status": "running"}),
        (3.4, {**APPROVAL, "callId": "t", "toolName": "run_tests", "status": "completed"}),
        (3.5, delta("All tests pass. ")),
        (3.6, delta("Spaces until you say otherwise.")),
        (3.7, FINALIZE),
    ]
    writes, driver = await record_writes(
        TimedUpstream(timeline, ends=False), new_turn("agent-ops-v2"), settings()
    )
    chunks = chunks_of(writes)
    assert text(chunks) == (
        "I will start with the tests. All tests pass. Spaces until you say otherwise."
    )
    assert [c["toolCallId"] for c in chunks if c["type"] == "tool-output-available"] == ["t"]
    # The question stays answerable: the agent's own end says so.
    assert chunks[-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert writes[-1][0] == pytest.approx(3.7, abs=0.01)
    assert not driver.abandoned


async def test_text_soon_after_the_question_cancels_the_wait_and_a_later_pause_is_no_end() -> None:
    timeline = [
        (0, CREATE),
        (0.1, QUESTION),
        (0.3, delta("Meanwhile, ")),  # inside the window: the agent went on
        (2.0, delta("after a long think, ")),  # a pause longer than the window, no ending
        (2.1, delta("done.")),
        (2.2, FINALIZE),
    ]
    writes, _ = await record_writes(
        TimedUpstream(timeline, ends=False), new_turn("agent-ops-v2"), settings()
    )
    assert text(chunks_of(writes)) == "Meanwhile, after a long think, done."
    assert writes[-1][0] == pytest.approx(2.2, abs=0.01)


async def test_status_events_after_the_question_do_not_keep_the_turn_open() -> None:
    # Transient status parts are not the agent going on: it still waits, and the window runs
    # from the last of them.
    timeline = [
        (0, CREATE),
        (0.1, QUESTION),
        (0.3, {"type": "status", "state": "waiting"}),
        (0.6, {"type": "status", "state": "waiting"}),
    ]
    writes, driver = await record_writes(
        TimedUpstream(timeline, ends=False), new_turn("agent-ops-v2"), settings()
    )
    assert chunks_of(writes)[-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert writes[-1][0] == pytest.approx(0.6 + 0.5, abs=0.01)
    assert driver.turn.events == 4


async def test_a_waiting_status_ends_the_turn_at_once_and_a_busy_one_keeps_it_open() -> None:
    waits = [(0, CREATE), (0.1, QUESTION), (0.2, status("waiting"))]
    writes, _ = await record_writes(
        TimedUpstream(waits, ends=False), new_turn("agent-ops-v2"), settings()
    )
    assert writes[-1][0] == pytest.approx(0.2, abs=0.01)
    assert chunks_of(writes)[-1]["finishReason"] == "tool-calls"

    busy = [(0, CREATE), (0.1, QUESTION), (0.2, status("thinking")), (5.0, delta("Done.")),
            (5.1, FINALIZE)]  # fmt: skip
    writes, _ = await record_writes(
        TimedUpstream(busy, ends=False), new_turn("agent-ops-v2"), settings()
    )
    assert text(chunks_of(writes)) == "Done."
    assert writes[-1][0] == pytest.approx(5.1, abs=0.01)


async def test_an_upstream_that_hangs_up_after_asking_waits_for_the_answer() -> None:
    # Over HTTP (or a socket the agent closes), the end of the body right after the ask is
    # the agent waiting, not a truncated answer.
    timeline = [(0, CREATE), (0.1, QUESTION), (0.15, None)]
    writes, driver = await record_writes(
        TimedUpstream(timeline), new_turn("agent-ops-v2"), settings()
    )
    chunks = chunks_of(writes)
    assert [c["type"] for c in chunks][-2:] == ["finish-step", "finish"]
    assert chunks[-1]["finishReason"] == "tool-calls"
    assert not any(c["type"] == "error" for c in chunks)
    assert writes[-1][0] == pytest.approx(0.15, abs=0.01)
    # A hang-up after the agent went on is a truncation, as ever.
    cut = [(0, CREATE), (0.1, QUESTION), (0.2, delta("and then")), (0.3, None)]
    writes, _ = await record_writes(TimedUpstream(cut), new_turn("agent-ops-v2"), settings())
    chunks = chunks_of(writes)
    assert "error" in [c["type"] for c in chunks]
    assert chunks[-1] == {"type": "finish", "finishReason": "error"}


async def test_the_idle_timeout_still_ends_an_agent_that_went_on_and_then_hung() -> None:
    timeline = [(0, CREATE), (0.1, QUESTION), (0.2, delta("Working on it"))]
    writes, driver = await record_writes(
        TimedUpstream(timeline, ends=False),
        new_turn("agent-ops-v2"),
        settings(idle_timeout=30, keepalive_interval=10),
    )
    assert driver.timeout is not None and driver.timeout.value == "idle"
    assert writes[-1][0] == pytest.approx(30.2, abs=0.01)
    keepalives = [t for t, chunks in writes if not chunks]
    assert keepalives == pytest.approx([10.2, 20.2], abs=0.01)


# -- through the live gateway, judged by the real ai 5, 6 and 7 clients --------------------------


@pytest.mark.conformance
@pytest.mark.looptime(False)
async def test_the_live_gateway_keeps_what_an_agent_says_after_asking_in_passing(
    real_clients,
) -> None:
    after = ["All 42 tests pass. ", "I will use spaces until you say otherwise."]
    passing = events(
        CREATE,
        delta("I will start with the tests. "),
        QUESTION,
        0.05,
        status("tool_calling"),
        {**APPROVAL, "callId": "t", "toolName": "run_tests", "status": "running"},
        0.9,  # the tool runs longer than the settle window
        {**APPROVAL, "callId": "t", "toolName": "run_tests", "status": "completed"},
        *[delta(words) for words in after],
        FINALIZE,
        close=False,
    )
    waiting = events(CREATE, delta("One question. "), QUESTION, close=False)
    async with ScriptedUpstream() as upstream:
        upstream.scripts["passing"] = passing
        upstream.scripts["waiting"] = waiting
        async with running_gateway(upstream=upstream.url, question_settle=0.3) as (gw, _):
            went_on = await post(gw, "passing", user_body("write the tests"))
            loop = asyncio.get_running_loop()
            started = loop.time()
            waited = await post(gw, "waiting", user_body("merge it"))
            took = loop.time() - started
    assert went_on.status_code == waited.status_code == 200
    verdicts = real_clients.check(went_on.content)
    for major, verdict in verdicts.items():
        assert verdict.ok and verdict.finish_reason == "tool-calls", (major, verdict.fatal)
        assert verdict.text().endswith("".join(after)), (major, verdict.text())
        (question,) = verdict.parts("tool-ask_user")
        assert question["state"] == "input-available"  # still answerable
        assert [p["state"] for p in verdict.parts("tool-run_tests")] == ["output-available"]
    for major, verdict in real_clients.check(waited.content).items():
        assert verdict.ok and verdict.finish_reason == "tool-calls", (major, verdict.fatal)
        assert verdict.parts("tool-ask_user")[0]["state"] == "input-available"
    assert 0.3 <= took < 3  # the settle window, not the idle timeout
    assert not upstream.aborted("waiting") and not upstream.aborted("passing")


def asked_and_waiting(real_clients: Any, name: str) -> Iterator[tuple[int, Any]]:
    """The recording ``name`` replayed for each of ai 5, 6 and 7, as its client reads it: it
    asked, and the question is still answerable."""
    recording = FIXTURES / "agent-ops-v2" / f"{name}.jsonl"
    for target in (5, 6, 7):
        body = replay_file("agent-ops-v2", recording, target=target)
        verdict = real_clients.check(body, majors=(target,))[target]
        assert verdict.ok and verdict.finish_reason == "tool-calls", (target, verdict.fatal)
        assert verdict.parts("tool-ask_user")[0]["state"] == "input-available", target
        yield target, verdict


@pytest.mark.conformance
def test_the_asks_in_passing_recording_keeps_every_word_for_ai_5_6_7(real_clients) -> None:
    after = "All 42 tests pass. Tell me about the indentation when you can; I will use spaces"
    for target, verdict in asked_and_waiting(real_clients, "question-in-passing"):
        assert verdict.text() == "I will start with the tests. " + after + " until then.", target
        assert verdict.parts("tool-run_tests")[0]["state"] == "output-available"


@pytest.mark.conformance
def test_a_question_asked_mid_sentence_leaves_the_sentence_whole_for_ai_5_6_7(real_clients) -> None:
    """The text part stays open across the question's part: the client shows the agent's
    sentence as one text, the question after it (a tool call of the agent still closes it)."""
    sentence = "I will name the module parser for now, and rename it if you prefer another."
    for target, verdict in asked_and_waiting(real_clients, "question-mid-sentence"):
        kinds = [p["type"] for p in verdict.message["parts"] if p["type"] != "step-start"]
        assert kinds == ["text", "tool-ask_user"], target
        assert verdict.parts("text")[0]["text"] == sentence, target


@pytest.mark.conformance
@pytest.mark.looptime(False)
async def test_the_demo_asks_in_passing_on_cue_and_answers_all_the_same(real_clients) -> None:
    from chunkbridge.translators.dialects.agent_ops_v2.demo import DEMO_AFTER_TOOL
    from tests.test_approvals import demo_gateway

    async with demo_gateway() as (gw, upstream):
        response = await post(gw, "demo", user_body("ask in passing, please"))
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "tool-calls", (major, verdict.fatal)
        assert verdict.text().endswith(DEMO_AFTER_TOOL), major  # nothing cut after the question
        (question,) = verdict.parts("tool-ask_user")
        assert question["state"] == "input-available"
    assert not [f for f in upstream.received["demo"] if f.get("type") == "abort"]
