"""The scripted model of ``chunkbridge demo --agent``: an Anthropic Messages look-alike that
calls the demo MCP server's tools (:mod:`~chunkbridge.gateway.devtools.demo_tools`) the way a
model would, so the agent loop can be watched without a key.

Each request is one model step. The script reads the conversation the gateway sends — the
user's question and the ``tool_result`` blocks of the steps since — and either calls the next
tools or answers with their results:

* two or three numbers: ``add`` the first two, then ``multiply`` the sum by the third (two steps);
* "weather in Paris and Oslo": ``weather`` for each city, in one step (the calls run side by side);
* "note …": ``save_note``, which waits for the user's approval;
* "slow": ``count_slowly`` to 20, for Stop;
* anything else: a plain answer that says what to try.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from chunkbridge.kit import DemoStep, Pause

__all__ = ["HINTS", "agent_script"]

HINTS = "try “what is (2 + 3) × 4?”, “weather in Paris and Oslo”, “note: buy milk” or “slow”"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_CITY = re.compile(r"\b[A-Z][a-zà-ÿ]+(?:\s[A-Z][a-zà-ÿ]+)?")

Call = tuple[str, dict[str, Any]]


def _conversation(request: dict[str, Any]) -> tuple[str, list[Any]]:
    """The user's question and the results of the tools called since, oldest first."""
    messages = request.get("messages") or []
    question = ""
    results: list[Any] = []
    for message in messages:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
        if message.get("role") == "user" and any(texts):
            question, results = " ".join(texts), []  # a new question: its own tools
        for block in blocks:
            if block.get("type") == "tool_result":
                results.append(_result(block))
    return question, results


def _result(block: dict[str, Any]) -> Any:
    content = block.get("content")
    if isinstance(content, list):
        content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
    if block.get("is_error"):
        return {"error": content}
    try:
        value = orjson.loads(content or "null")
    except orjson.JSONDecodeError:
        return content
    return value.get("result", value) if isinstance(value, dict) else value


def _number(value: Any) -> float:
    """``value`` as a number, whole ones without a decimal point (``5.0`` reads ``5``)."""
    number = float(value)
    return int(number) if number.is_integer() else number


def _next(question: str, results: list[Any]) -> tuple[str, list[Call]] | None:
    """The next step's words and calls, or ``None`` when the model answers now."""
    lowered = question.lower()
    first = not results
    if not first and any(word in lowered for word in ("slow", "note", "weather")):
        return None  # one step each: the answer follows the results
    if "slow" in lowered:
        return "Counting to 20 on the server: press Stop.", [("count_slowly", {"to": 20})]
    if "note" in lowered:
        text = question.split(":", 1)[-1].strip() or question
        return "I'll save that note (it asks you first).", [("save_note", {"text": text})]
    if "weather" in lowered:
        cities = _CITY.findall(question.split("weather", 1)[-1]) or ["Paris"]
        calls: list[Call] = [("weather", {"city": city}) for city in cities[:4]]
        return f"Checking {len(calls)} forecast(s) at once.", calls
    numbers = [_number(n) for n in _NUMBER.findall(question)][:3]
    if len(numbers) >= 2 and first:
        return f"First {numbers[0]} + {numbers[1]}.", [("add", {"a": numbers[0], "b": numbers[1]})]
    if len(numbers) == 3 and len(results) == 1 and isinstance(results[0], (int, float)):
        product = {"a": _number(results[0]), "b": numbers[2]}
        return f"Now × {numbers[2]}.", [("multiply", product)]
    return None


def _said(result: Any) -> str:
    if isinstance(result, dict) and "city" in result:
        return f"{result['city']}: {result['celsius']} °C, {result['sky']}"
    if isinstance(result, dict) and "error" in result:
        return f"failed ({result['error']})"
    return str(_number(result) if isinstance(result, (int, float)) else result)


def _answer(question: str, results: list[Any]) -> str:
    if not results:
        return f"You said: {question}. I run tools through the gateway — {HINTS}."
    said = "; ".join(_said(result) for result in results)
    return f"Done in {len(results)} tool call(s): {said}."


def agent_script(request: dict[str, Any], turn: int, aborted: Any) -> Iterator[DemoStep]:
    """One model step of the demo agent (see the module), as Anthropic Messages events."""
    question, results = _conversation(request)
    planned = _next(question, results)
    text, calls = planned if planned is not None else (_answer(question, results), [])
    yield {
        "type": "message_start",
        "message": {
            "id": f"msg_agent_{turn}",
            "type": "message",
            "role": "assistant",
            "model": "demo-agent",
            "content": [],
            "usage": {"input_tokens": len(orjson.dumps(request)) // 4, "output_tokens": 1},
        },
    }
    yield {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    words = text.split(" ")
    for word in words:
        if aborted():
            return
        yield Pause(0.03)
        yield {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": word + " "},
        }
    yield {"type": "content_block_stop", "index": 0}
    for index, (name, arguments) in enumerate(calls, start=1):
        block = {"type": "tool_use", "id": f"toolu_{turn}_{index}", "name": name, "input": {}}
        yield {"type": "content_block_start", "index": index, "content_block": block}
        json = {"type": "input_json_delta", "partial_json": orjson.dumps(arguments).decode()}
        yield {"type": "content_block_delta", "index": index, "delta": json}
        yield {"type": "content_block_stop", "index": index}
    reason = "tool_use" if calls else "end_turn"
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": len(words) + 10 * len(calls)},
    }
    yield {"type": "message_stop"}
