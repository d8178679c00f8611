"""pi's ``steer`` on the real pi upstream (pi-agent-core's ``Agent`` over its RPC socket): where a
steered message lands in the event stream — the boundary a gateway would split a steered turn at.
A steer sent while a tool runs is taken after that turn's ``turn_end`` (the tool batch done), as a
``user`` ``message_start``/``message_end`` of the next turn, before its model call; the run goes on
in the same socket and ends in one ``agent_end``."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from websockets.asyncio.client import connect

from tests.test_pi_agent import pi_upstream

#: Longest wait for one pi event.
EVENT_WAIT = 10.0


async def run(url: str, prompt: str, steer_on: str | None, steer: str) -> list[dict[str, Any]]:
    """The events of one prompt on a fresh socket, the steer sent when ``steer_on`` first comes."""
    events: list[dict[str, Any]] = []
    async with connect(url.replace("http://", "ws://")) as socket:
        await socket.send(orjson.dumps({"type": "prompt", "message": prompt}).decode())
        for _ in range(10_000):  # bounded
            event = orjson.loads(await asyncio.wait_for(socket.recv(), EVENT_WAIT))
            events.append(event)
            if event["type"] == steer_on:
                steer_on = None
                await socket.send(orjson.dumps({"type": "steer", "message": steer}).decode())
            if event["type"] == "agent_end":
                return events
    raise AssertionError("no agent_end")


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """Event types, a message's role appended (``message_start:user``)."""
    out = []
    for event in events:
        role = (event.get("message") or {}).get("role") if "message" in event else None
        out.append(
            f"{event['type']}:{role}" if event["type"] in ("message_start",) else event["type"]
        )
    return out


def test_a_steer_while_a_tool_runs_lands_after_the_tool_batch() -> None:
    with pi_upstream() as base:
        events = asyncio.run(
            run(base, "slow weather please", "tool_execution_start", "Rome instead")
        )
    seen = kinds(events)
    assert seen.count("agent_end") == 1 and seen[-1] == "agent_end"
    prompt = seen.index("message_start:user")
    user = seen.index("message_start:user", prompt + 1)
    assert seen[user - 2 : user] == ["turn_end", "turn_start"], seen
    assert seen.index("tool_execution_end") < user - 2  # the whole tool batch came first
    assert events[user]["message"]["content"][0]["text"] == "Rome instead"
    # the next model call answers the steer, not the tool result
    answer = next(
        e
        for e in events[user:]
        if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    )
    assert answer["message"]["content"][0]["text"] == "You said: Rome instead"
    assert not any(
        e["type"] == "message_end" and "Done:" in str(e["message"].get("content")) for e in events
    )


def test_a_steer_during_a_plain_answer_runs_after_it_in_the_same_run() -> None:
    """No tool: pi still asks for steering after the turn, so the run goes on with it."""
    with pi_upstream() as base:
        events = asyncio.run(run(base, "long", "message_start", "and then?"))
    seen = kinds(events)
    assert seen.count("agent_end") == 1
    turn_end = seen.index("turn_end")  # the first turn's
    assert seen[turn_end + 1 : turn_end + 3] == ["turn_start", "message_start:user"], seen
    texts = [
        e["message"]["content"][0]["text"]
        for e in events
        if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert texts[-1] == "You said: and then?" and texts[0].startswith("word ")


def test_without_a_steer_the_tool_run_answers_the_tool_result() -> None:
    """The control: the same prompt, no steer, answers with the tool's result."""
    with pi_upstream() as base:
        events = asyncio.run(run(base, "slow weather please", None, ""))
    assert kinds(events).count("message_start:user") == 1  # the prompt's own
    answer = [e for e in events if e["type"] == "message_end"][-1]
    assert answer["message"]["content"][0]["text"] == "Done: sunny in slow."
