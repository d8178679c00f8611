"""The ``pi-agent`` demo upstream's script (``chunkbridge demo``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chunkbridge.kit import (
    DemoStep,
    Pause,
)


def demo_script(frame: dict[str, Any], turn: int, aborted: Any) -> Iterator[DemoStep]:
    """One turn that reads a file with a tool, then a turn that answers."""
    text = frame.get("message", "")
    usage = {"input": 20, "output": 12, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 32}
    assistant = {"role": "assistant", "content": [], "stopReason": "toolUse", "usage": usage}
    yield {"type": "agent_start"}
    yield from _reading_turn(assistant, f"call-{turn}")
    yield {"type": "turn_start"}
    answer = {**assistant, "stopReason": "stop"}
    yield {"type": "message_start", "message": answer}
    for word in f"You said: {text}. This answer streams from the demo pi agent.".split(" "):
        if aborted():
            return
        yield Pause(0.04)
        yield {
            "type": "message_update",
            "message": answer,
            "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": word + " "},
        }
    yield {"type": "message_end", "message": answer}
    yield {"type": "turn_end", "message": answer, "toolResults": []}
    yield {"type": "agent_end", "messages": []}


def _reading_turn(assistant: dict[str, Any], call_id: str) -> Iterator[DemoStep]:
    """The first turn: a thought, a ``read`` tool call, and the agent running it."""
    call = {
        "type": "toolCall",
        "id": call_id,
        "name": "read",
        "arguments": {"path": "README.md"},
    }
    yield {"type": "turn_start"}
    yield {"type": "message_start", "message": assistant}
    yield {
        "type": "message_update",
        "message": assistant,
        "assistantMessageEvent": {
            "type": "thinking_delta",
            "contentIndex": 0,
            "delta": "I should read the README first.",
        },
    }
    yield {
        "type": "message_update",
        "message": assistant,
        "assistantMessageEvent": {
            "type": "toolcall_start",
            "contentIndex": 1,
            "id": call["id"],
            "toolName": "read",
        },
    }
    yield {
        "type": "message_update",
        "message": assistant,
        "assistantMessageEvent": {"type": "toolcall_end", "contentIndex": 1, "toolCall": call},
    }
    yield {"type": "message_end", "message": assistant}
    yield {
        "type": "tool_execution_start",
        "toolCallId": call["id"],
        "toolName": "read",
        "args": call["arguments"],
    }
    yield Pause(0.2)
    result = {"content": [{"type": "text", "text": "# chunkbridge …"}], "details": {"lines": 512}}
    yield {
        "type": "tool_execution_end",
        "toolCallId": call["id"],
        "toolName": "read",
        "result": result,
        "isError": False,
    }
    yield {"type": "turn_end", "message": assistant, "toolResults": []}
