"""The ``gemini`` demo upstream's script (``chunkbridge demo``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chunkbridge.kit import (
    DemoStep,
    Pause,
)


def demo_script(request: dict[str, Any], turn: int, aborted: Any) -> Iterator[DemoStep]:
    """A thought, a short answer, and a function call when asked for the weather."""
    text = ""
    for content in reversed(request.get("contents") or []):
        if content.get("role") == "user":
            text = " ".join(p.get("text", "") for p in content.get("parts", []) if "text" in p)
            break
    head = {"modelVersion": "gemini-demo", "responseId": f"demo-{turn}"}

    def chunk(*parts: dict[str, Any], **candidate: Any) -> dict[str, Any]:
        return {
            "candidates": [{"content": {"role": "model", "parts": list(parts)}, **candidate}],
            **head,
        }

    yield chunk(
        {
            "text": f"The question has {len(text)} characters.",
            "thought": True,
            "thoughtSignature": "ZGVtbw==",
        }
    )
    words = f"You said: {text}. This answer streams from the demo Gemini upstream.".split(" ")
    for word in words:
        if aborted():
            return
        yield Pause(0.04)
        yield chunk({"text": word + " "})
    if "weather" in text.lower():
        yield Pause(0.05)
        yield chunk({"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}})
    usage = {
        "promptTokenCount": 10 + len(text) // 4,
        "candidatesTokenCount": len(words) + 8,
        "totalTokenCount": 18 + len(text) // 4 + len(words),
    }
    yield {**chunk({"text": ""}, finishReason="STOP"), "usageMetadata": usage}
