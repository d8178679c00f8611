"""A model's streamed answer in each provider dialect's wire format: some text, then tool calls.

The agent-loop tests script the model with these: step 1 calls tools, the next step answers.
The frames follow the recorded fixtures of each dialect (``fixtures/<dialect>/``): Anthropic's
``message_start`` … ``message_stop``, OpenAI chat completion chunks and ``[DONE]``, Responses
events, Gemini candidates. ``fixtures/agent-loop/`` holds the sequences of the acceptance run,
written by :func:`write_fixtures` (a test checks they are current).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

Call = tuple[str, str, dict[str, Any]]  # (id, name, arguments)

PROVIDER_DIALECTS = ("anthropic-messages", "openai-responses", "openai-chat", "gemini")
FIXTURES = Path(__file__).parent.parent / "fixtures" / "agent-loop"


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def anthropic(text: str, calls: list[Call], n: int = 1) -> list[str]:
    frames: list[Any] = [
        {
            "type": "message_start",
            "message": {
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 100 * n, "output_tokens": 1},
            },
        }
    ]
    index = 0
    if text:
        frames.append(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
        for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
            delta = {"type": "text_delta", "text": piece}
            frames.append({"type": "content_block_delta", "index": 0, "delta": delta})
        frames.append({"type": "content_block_stop", "index": 0})
        index = 1
    for call_id, name, arguments in calls:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        frames.append({"type": "content_block_start", "index": index, "content_block": block})
        delta = {"type": "input_json_delta", "partial_json": _dumps(arguments)}
        frames.append({"type": "content_block_delta", "index": index, "delta": delta})
        frames.append({"type": "content_block_stop", "index": index})
        index += 1
    stop = "tool_use" if calls else "end_turn"
    frames.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 10 * n},
        }
    )
    frames.append({"type": "message_stop"})
    return [_dumps(f) for f in frames]


def openai_chat(text: str, calls: list[Call], n: int = 1) -> list[str]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _dumps({"id": f"chatcmpl-{n}", "model": "gpt-4.1-mini", "choices": [choice]})

    frames = [chunk({"role": "assistant", "content": ""})]
    if text:
        frames.append(chunk({"content": text}))
    for index, (call_id, name, arguments) in enumerate(calls):
        function = {"name": name, "arguments": ""}
        frames.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": index, "id": call_id, "type": "function", "function": function}
                    ]
                }
            )
        )
        args = {"arguments": _dumps(arguments)}
        frames.append(chunk({"tool_calls": [{"index": index, "function": args}]}))
    frames.append(chunk({}, "tool_calls" if calls else "stop"))
    usage = {"prompt_tokens": 100 * n, "completion_tokens": 10 * n, "total_tokens": 110 * n}
    frames.append(_dumps({"id": f"chatcmpl-{n}", "choices": [], "usage": usage}))
    frames.append("[DONE]")
    return frames


def openai_responses(text: str, calls: list[Call], n: int = 1) -> list[str]:
    response = {
        "id": f"resp_{n}",
        "object": "response",
        "status": "in_progress",
        "model": "gpt-5-mini",
        "output": [],
    }
    frames: list[Any] = [{"type": "response.created", "response": response}]
    index = 0
    if text:
        item = {"id": f"msg_{n}", "type": "message", "role": "assistant", "content": []}
        frames.append({"type": "response.output_item.added", "output_index": 0, "item": item})
        part = {"type": "output_text", "text": ""}
        frames.append(
            {
                "type": "response.content_part.added",
                "item_id": f"msg_{n}",
                "output_index": 0,
                "content_index": 0,
                "part": part,
            }
        )
        frames.append(
            {
                "type": "response.output_text.delta",
                "item_id": f"msg_{n}",
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            }
        )
        frames.append(
            {
                "type": "response.output_text.done",
                "item_id": f"msg_{n}",
                "output_index": 0,
                "content_index": 0,
                "text": text,
            }
        )
        done = {**item, "status": "completed", "content": [{"type": "output_text", "text": text}]}
        frames.append({"type": "response.output_item.done", "output_index": 0, "item": done})
        index = 1
    for call_id, name, arguments in calls:
        item_id = f"fc_{call_id}"
        args = _dumps(arguments)
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call_id,
            "name": name,
        }
        frames.append({"type": "response.output_item.added", "output_index": index, "item": item})
        frames.append(
            {
                "type": "response.function_call_arguments.delta",
                "item_id": item_id,
                "output_index": index,
                "delta": args,
            }
        )
        frames.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": item_id,
                "output_index": index,
                "arguments": args,
            }
        )
        done = {**item, "status": "completed", "arguments": args}
        frames.append({"type": "response.output_item.done", "output_index": index, "item": done})
        index += 1
    usage = {"input_tokens": 100 * n, "output_tokens": 10 * n, "total_tokens": 110 * n}
    frames.append(
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "usage": usage},
        }
    )
    return [_dumps(f) for f in frames]


def gemini(text: str, calls: list[Call], n: int = 1) -> list[str]:
    def candidate(parts: list[Any], finish: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            out["finishReason"] = finish
        return out

    frames: list[Any] = []
    if text:
        frames.append(
            {"candidates": [candidate([{"text": text}])], "modelVersion": "gemini-2.5-flash"}
        )
    parts = [
        {"functionCall": {"id": call_id, "name": name, "args": arguments}}
        for call_id, name, arguments in calls
    ]
    usage = {
        "promptTokenCount": 100 * n,
        "candidatesTokenCount": 10 * n,
        "totalTokenCount": 110 * n,
    }
    frames.append(
        {
            "candidates": [candidate(parts or [{"text": ""}], "STOP")],
            "usageMetadata": usage,
            "modelVersion": "gemini-2.5-flash",
        }
    )
    return [_dumps(f) for f in frames]


WRITERS = {
    "anthropic-messages": anthropic,
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "gemini": gemini,
}


def answer(dialect: str, text: str, calls: list[Call] | None = None, n: int = 1) -> list[str]:
    """One model response of ``dialect``: ``text`` then ``calls``."""
    return WRITERS[dialect](text, calls or [], n)


#: The acceptance run: "(2 + 3) × 4?" needs two tools in two steps, then the answer.
TWO_STEPS: list[tuple[str, list[Call]]] = [
    ("I'll add first.", [("call_add", "add", {"a": 2, "b": 3})]),
    ("Now the product.", [("call_mul", "multiply", {"a": 5, "b": 4})]),
    ("(2 + 3) × 4 = 20.", []),
]


def write_fixtures() -> dict[Path, str]:
    """The files of ``fixtures/agent-loop`` (path → text), one sequence per dialect."""
    files = {}
    for dialect in PROVIDER_DIALECTS:
        for n, (text, calls) in enumerate(TWO_STEPS, 1):
            frames = answer(dialect, text, calls, n)
            files[FIXTURES / dialect / f"two-steps-{n}.jsonl"] = "\n".join(frames) + "\n"
    return files


if __name__ == "__main__":
    for path, text in write_fixtures().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
