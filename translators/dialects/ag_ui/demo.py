"""The ``ag-ui`` demo upstream's script (``chunkbridge demo``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chunkbridge.kit import (
    DemoStep,
    Pause,
)


def demo_script(request: dict[str, Any], turn: int, aborted: Any) -> Iterator[DemoStep]:
    """A step, reasoning, state, an agent tool with its result, and an answer."""
    text = ""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else ""
            break
    run = {"threadId": request.get("threadId", "demo"), "runId": request.get("runId", "run")}
    yield {"type": "RUN_STARTED", **run}
    resume = request.get("resume") or []
    if resume or "approve" in text.lower():
        yield from _demo_approval(resume, run, turn)
        return
    yield {"type": "STEP_STARTED", "stepName": "plan"}
    yield {"type": "REASONING_MESSAGE_CONTENT", "messageId": f"r{turn}", "delta": "Planning. "}
    yield {"type": "REASONING_MESSAGE_END", "messageId": f"r{turn}"}
    yield {"type": "STATE_SNAPSHOT", "snapshot": {"turn": turn, "todo": ["search", "answer"]}}
    yield {"type": "STEP_FINISHED", "stepName": "plan"}
    yield {"type": "TOOL_CALL_START", "toolCallId": f"call-{turn}", "toolCallName": "search"}
    yield {"type": "TOOL_CALL_ARGS", "toolCallId": f"call-{turn}", "delta": '{"q": "demo"}'}
    yield {"type": "TOOL_CALL_END", "toolCallId": f"call-{turn}"}
    yield Pause(0.1)
    yield {
        "type": "TOOL_CALL_RESULT",
        "messageId": f"t{turn}",
        "toolCallId": f"call-{turn}",
        "content": '{"hits": 3}',
    }
    yield {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/todo/0"}]}
    for word in f"You said: {text}. This answer streams from the demo AG-UI agent.".split(" "):
        if aborted():
            return
        yield Pause(0.04)
        yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m{turn}", "delta": word + " "}
    yield {"type": "TEXT_MESSAGE_END", "messageId": f"m{turn}"}
    yield {"type": "RUN_FINISHED", **run, "outcome": {"type": "success"}}


def _demo_approval(resume: list[Any], run: dict[str, Any], turn: int) -> Iterator[DemoStep]:
    """ "approve" in the prompt: a tool call the run stops at (an interrupt on it); the run
    that resumes it runs the tool if approved."""
    if not resume:
        call = f"call-{turn}"
        yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m{turn}", "delta": "May I? "}
        yield {"type": "TEXT_MESSAGE_END", "messageId": f"m{turn}"}
        yield {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "archive_chat"}
        yield {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": '{"keep_days": 30}'}
        yield {"type": "TOOL_CALL_END", "toolCallId": call}
        interrupt = {
            "id": f"int-{call}",
            "reason": "tool_call",
            "toolCallId": call,
            "message": "Archive this chat?",
        }
        outcome = {"type": "interrupt", "interrupts": [interrupt]}
        yield {"type": "RUN_FINISHED", **run, "outcome": outcome}
        return
    entry = resume[0] if isinstance(resume[0], dict) else {}
    payload = entry.get("payload")
    call = str(entry.get("interruptId", "int-call")).removeprefix("int-")
    if isinstance(payload, dict) and payload.get("approved") is True:
        result = {"type": "TOOL_CALL_RESULT", "messageId": f"t{turn}", "toolCallId": call}
        yield {**result, "content": '{"archived": true}'}
        text = "Archived."
    else:
        text = "Left as it is."
    yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m{turn}", "delta": text}
    yield {"type": "TEXT_MESSAGE_END", "messageId": f"m{turn}"}
    yield {"type": "RUN_FINISHED", **run, "outcome": {"type": "success"}}
