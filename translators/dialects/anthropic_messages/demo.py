"""The ``anthropic-messages`` demo upstream's script (``chunkbridge demo``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chunkbridge.kit import (
    DemoStep,
    Pause,
)


def demo_script(request: dict[str, Any], turn: int, aborted: Any) -> Iterator[DemoStep]:
    """A short answer with a signed thinking block, and a tool call when asked for the weather."""
    text = ""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            text = " ".join(
                c.get("text", "") for c in message.get("content", []) if c.get("type") == "text"
            )
            break
    usage = {"input_tokens": 12 + len(text) // 4, "output_tokens": 1}
    yield {
        "type": "message_start",
        "message": {
            "id": f"msg_demo_{turn}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "demo"),
            "content": [],
            "usage": usage,
        },
    }
    yield from _thinking(text)
    yield {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}
    words = f"You said: {text}. This answer streams from the demo Anthropic upstream.".split(" ")
    for word in words:
        if aborted():
            return
        yield Pause(0.04)
        yield {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": word + " "},
        }
    yield {"type": "content_block_stop", "index": 1}
    reason = "end_turn"
    if "weather" in text.lower():
        reason = "tool_use"
        yield from _weather_call(turn)
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": len(words) + 12},
    }
    yield {"type": "message_stop"}


def _thinking(text: str) -> Iterator[DemoStep]:
    """The thinking block (index 0): three pieces, then its signature."""
    yield {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    }
    for piece in ("The user wrote ", f"{len(text)} characters", "; I answer briefly."):
        yield Pause(0.05)
        yield {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": piece},
        }
    yield {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "signature_delta", "signature": "ZGVtby1zaWduYXR1cmU="},
    }
    yield {"type": "content_block_stop", "index": 0}


def _weather_call(turn: int) -> Iterator[DemoStep]:
    """The tool use block (index 2), its input streamed in two pieces."""
    yield {
        "type": "content_block_start",
        "index": 2,
        "content_block": {
            "type": "tool_use",
            "id": f"toolu_demo_{turn}",
            "name": "get_weather",
            "input": {},
        },
    }
    for piece in ('{"city": ', '"Paris"}'):
        yield Pause(0.05)
        yield {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": piece},
        }
    yield {"type": "content_block_stop", "index": 2}
