"""The ``openai-responses`` demo upstream's script (``chunkbridge demo``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chunkbridge.kit import (
    DemoStep,
    Pause,
)


def demo_script(request: dict[str, Any], turn: int, aborted: Any) -> Iterator[DemoStep]:
    """A reasoning summary and a short answer; a function call when asked for the weather."""
    text = ""
    for item in reversed(request.get("input") or []):
        if item.get("role") == "user":
            text = " ".join(c.get("text", "") for c in item.get("content", []) if "text" in c)
            break
    rid, model = f"resp_demo_{turn}", request.get("model", "demo")
    response = {"id": rid, "object": "response", "status": "in_progress", "model": model}
    yield {"type": "response.created", "response": response}
    yield from _reasoning(turn, text)
    message = {"id": f"msg_demo_{turn}", "type": "message", "role": "assistant", "content": []}
    yield {"type": "response.output_item.added", "output_index": 1, "item": message}
    words = f"You said: {text}. This answer streams from the demo OpenAI upstream.".split(" ")
    for word in words:
        if aborted():
            return
        yield Pause(0.04)
        yield {
            "type": "response.output_text.delta",
            "item_id": message["id"],
            "output_index": 1,
            "content_index": 0,
            "delta": word + " ",
        }
    yield {"type": "response.output_item.done", "output_index": 1, "item": message}
    if "weather" in text.lower():
        yield from _weather_call(turn)
    usage = {
        "input_tokens": 12 + len(text) // 4,
        "output_tokens": len(words) + 20,
        "total_tokens": 32 + len(text) // 4 + len(words),
    }
    yield {
        "type": "response.completed",
        "response": {**response, "status": "completed", "usage": usage},
    }


def _reasoning(turn: int, text: str) -> Iterator[DemoStep]:
    """The reasoning item (output 0): a summary streamed in two pieces."""
    reasoning = {"id": f"rs_demo_{turn}", "type": "reasoning", "summary": []}
    yield {"type": "response.output_item.added", "output_index": 0, "item": reasoning}
    for piece in ("**Reading the question**\n\n", f"It has {len(text)} characters."):
        yield Pause(0.05)
        yield {
            "type": "response.reasoning_summary_text.delta",
            "item_id": reasoning["id"],
            "output_index": 0,
            "summary_index": 0,
            "delta": piece,
        }
    yield {"type": "response.output_item.done", "output_index": 0, "item": reasoning}


def _weather_call(turn: int) -> Iterator[DemoStep]:
    """The function call item (output 2), its arguments streamed in two pieces."""
    call = {
        "id": f"fc_demo_{turn}",
        "type": "function_call",
        "call_id": f"call_demo_{turn}",
        "name": "get_weather",
        "arguments": "",
    }
    yield {"type": "response.output_item.added", "output_index": 2, "item": call}
    for piece in ('{"city": ', '"Paris"}'):
        yield Pause(0.05)
        yield {
            "type": "response.function_call_arguments.delta",
            "item_id": call["id"],
            "output_index": 2,
            "delta": piece,
        }
    yield {
        "type": "response.output_item.done",
        "output_index": 2,
        "item": {**call, "arguments": '{"city": "Paris"}'},
    }
