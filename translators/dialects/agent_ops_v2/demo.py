"""The ``agent-ops-v2`` demo upstream's script (``chunkbridge demo``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator
from typing import Any

from chunkbridge.kit import (
    DemoStep,
    Pause,
)

DEMO_DELAY = 0.03
DEMO_ANSWER = (
    "## What chunkbridge does\n\n"
    "It sits **between** your agent backend and any `useChat` app:\n\n"
    "1. the app POSTs the chat request,\n"
    "2. chunkbridge opens the session's WebSocket and sends the prompt,\n"
    "3. every upstream event becomes AI SDK UI message chunks.\n\n"
)
DEMO_AFTER_TOOL = "The search found **3 matches**. Ask me anything else to see another turn."
DEMO_RESULT = {"matches": 3, "top": "README.md#usage"}
DEMO_FAILURE = "The demo agent failed on purpose (you asked)."
#: The tool the demo asks permission for ("approve" in the prompt).
DEMO_GATED_TOOL = "delete_branch"
DEMO_GATED_ARGS = {"branch": "feature/old-demo"}


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


def demo_turn(
    prompt: dict[str, Any], number: int, aborted: Callable[[], bool]
) -> Iterator[DemoStep]:
    """One scripted, realistic turn: status updates, a markdown answer streamed word by word, a
    tool going pending → running → completed, more text. "fail" in the prompt makes the agent
    report an error mid-answer; "slow" streams eight times slower (for trying Stop); "ask" makes
    it ask a question (the answer frame continues the turn), "passing" ask one in passing and
    go on with its answer without waiting; "approve" makes it ask permission
    before a tool runs (the approval frame continues it). After the abort frame the turn is
    finalized as ``canceled``."""
    text = str(prompt.get("content", "")) if isinstance(prompt, dict) else ""
    pace = DEMO_DELAY * (8 if "slow" in text.lower() else 1)
    turn, call = f"turn_{number:04d}", f"prt_{number:04d}"
    if isinstance(prompt, dict) and prompt.get("type") == "answer":  # the user answered
        yield from _answered(prompt, turn, pace, aborted)
        return
    if isinstance(prompt, dict) and prompt.get("type") == "approval":  # the user decided
        yield from _decided(prompt, turn, pace, aborted)
        return
    if "approve" in text.lower():
        yield from _opening(turn, "I can clean that up, with your permission.", pace)
        yield {
            "type": "message.part.tool-update",
            "turnId": turn,
            "callId": call,
            "toolName": DEMO_GATED_TOOL,
            "status": "awaiting_approval",
            "args": DEMO_GATED_ARGS,
            "approvalId": f"apr_{number:04d}",
            "reason": "Deleting a branch cannot be undone.",
        }
        return
    passing = "passing" in text.lower()
    question = {
        "type": "question",
        "questionId": f"q_{number:04d}",
        "question": "Which color do you prefer?",
        "options": ["red", "green", "blue"],
    }
    if not passing and ("ask" in text.lower().split() or "ask?" in text.lower()):
        yield from _opening(turn, "Before I answer, one question.", pace)
        yield question
        return
    yield from _answer(text, turn, call, pace, aborted, question if passing else None)


def _answer(
    text: str,
    turn: str,
    call: str,
    pace: float,
    aborted: Callable[[], bool],
    in_passing: dict[str, Any] | None,
) -> Iterator[DemoStep]:
    """The scripted answer: words, a search tool's run, more words; ``in_passing``, a question
    asked after the first words without waiting for its answer."""
    tool = {"type": "message.part.tool-update", "turnId": turn, "callId": call}
    tool["toolName"] = "search_docs"
    query = {"query": text[:80]}
    answer: list[Any] = [
        _status("thinking"),
        {"type": "message.create", "turnId": turn, "channelType": "web"},
        _status("streaming"),
        *_deltas(turn, f"You said: *{text[:200]}*\n\n" + DEMO_ANSWER),
    ]
    after = [
        _status("tool_calling"),
        {**tool, "status": "pending", "args": {}},
        {**tool, "status": "running", "args": query},
        Pause(pace * 5),
        {**tool, "status": "completed", "args": query, "result": DEMO_RESULT},
        _status("streaming"),
        *_deltas(turn, DEMO_AFTER_TOOL),
    ]
    if in_passing is not None:  # it asks, and works on without waiting for the answer
        answer[7:7] = [in_passing, Pause(pace * 10)]  # after its first words
    ok = yield from _play(answer, pace, aborted)
    if ok and "fail" in text.lower():
        yield {"type": "error", "messageId": turn, "error": DEMO_FAILURE}
        return
    ok = ok and (yield from _play(after, pace, aborted))
    reason = "end_turn" if ok else "canceled"
    yield {"type": "message.finalize", "turnId": turn, "reason": reason}
    yield _status("idle")
    yield {"type": "complete"}


def _status(value: str) -> dict[str, Any]:
    return {"type": "agentStatus", "status": value}


def _deltas(turn: str, body: str) -> list[dict[str, Any]]:
    return [{"type": "message.part.text-delta", "turnId": turn, "delta": w} for w in _words(body)]


def _opening(turn: str, text: str, pace: float) -> Iterator[DemoStep]:
    """A turn's start and its first words, before the agent asks something."""
    yield {"type": "message.create", "turnId": turn, "channelType": "web"}
    for word in _words(text):
        yield {"type": "message.part.text-delta", "turnId": turn, "delta": word}
        yield Pause(pace)


def _answered(
    frame: dict[str, Any], turn: str, pace: float, aborted: Callable[[], bool]
) -> Iterator[DemoStep]:
    """The continuation after the user answered the demo's question."""
    answer = frame.get("answer")
    text = f"You chose **{answer}**: a fine choice." if not frame.get("error") else "No answer."
    steps = [
        {"type": "message.create", "turnId": turn, "channelType": "web"},
        *[{"type": "message.part.text-delta", "turnId": turn, "delta": w} for w in _words(text)],
    ]
    ok = yield from _play(steps, pace, aborted)
    yield {"type": "message.finalize", "turnId": turn, "reason": "end_turn" if ok else "canceled"}
    yield {"type": "complete"}


def _decided(
    frame: dict[str, Any], turn: str, pace: float, aborted: Callable[[], bool]
) -> Iterator[DemoStep]:
    """The continuation after the user approved or denied the demo's tool call."""
    call = frame.get("callId", "call")
    steps: list[Any] = [{"type": "message.create", "turnId": turn, "channelType": "web"}]
    if frame.get("approved") is True:
        tool = {"type": "message.part.tool-update", "turnId": turn, "callId": call}
        tool |= {"toolName": DEMO_GATED_TOOL, "args": DEMO_GATED_ARGS}
        steps += [
            {**tool, "status": "running"},
            Pause(pace * 5),
            {**tool, "status": "completed", "result": {"deleted": DEMO_GATED_ARGS["branch"]}},
        ]
        text = "Done: the branch is deleted."
    else:
        reason = frame.get("reason")
        text = "Understood, I left the branch alone" + (f" ({reason})." if reason else ".")
    steps += [{"type": "message.part.text-delta", "turnId": turn, "delta": w} for w in _words(text)]
    ok = yield from _play(steps, pace, aborted)
    yield {"type": "message.finalize", "turnId": turn, "reason": "end_turn" if ok else "canceled"}
    yield {"type": "complete"}


def _play(
    steps: list[Any], pace: float, aborted: Callable[[], bool]
) -> Generator[DemoStep, None, bool]:
    """Each event followed by a pause, until the end (True) or the abort frame (False)."""
    for step in steps:
        if isinstance(step, Pause):
            yield step
            continue
        if aborted():
            return False
        yield step
        yield Pause(pace)
        if aborted():
            return False
    return True
