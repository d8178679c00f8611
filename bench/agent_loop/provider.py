"""The scripted model of the agent-loop benchmark: an Anthropic Messages look-alike over SSE.

Stateless, so any number of turns can run at once: the step is read from the request — the
number of ``tool_result`` blocks in its messages. Step 1 calls ``add`` and ``multiply``, step 2
calls them again with step 1's numbers, step 3 answers: a 3-step turn with 2 tool calls per
step. Each ``tool_use`` input carries ``ts`` (``time.time_ns()`` when its block was written, in
the same write as the block's end), so the MCP server can tell how long the gateway took from
the completed call to the MCP request (dispatch latency).

    python provider.py PORT
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

TEXT = "The numbers are being worked out step by step by the tools of this gateway."


def _frame(event: dict[str, Any]) -> bytes:
    return b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def _calls(results: int) -> list[tuple[str, dict[str, int]]]:
    if results == 0:
        return [("add", {"a": 2, "b": 3}), ("multiply", {"a": 4, "b": 5})]
    if results == 2:
        return [("add", {"a": 5, "b": 20}), ("multiply", {"a": 5, "b": 20})]
    return []


async def messages(request: Request) -> Response:
    body = await request.body()
    results = body.count(b'"type":"tool_result"')
    calls = _calls(results)

    async def stream() -> AsyncIterator[bytes]:
        start = {
            "type": "message_start",
            "message": {
                "id": f"msg_{results}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 100 + len(body) // 4, "output_tokens": 1},
            },
        }
        text_start = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        }
        yield _frame(start) + _frame(text_start)
        for word in TEXT.split(" "):
            delta = {"type": "text_delta", "text": word + " "}
            yield _frame({"type": "content_block_delta", "index": 0, "delta": delta})
        yield _frame({"type": "content_block_stop", "index": 0})
        for index, (name, arguments) in enumerate(calls, start=1):
            call_id = f"toolu_{results}_{index}"
            block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            head = _frame({"type": "content_block_start", "index": index, "content_block": block})
            json = orjson.dumps({**arguments, "ts": time.time_ns()}).decode()
            delta = {"type": "input_json_delta", "partial_json": json}
            yield (
                head
                + _frame({"type": "content_block_delta", "index": index, "delta": delta})
                + _frame({"type": "content_block_stop", "index": index})
            )
        reason = "tool_use" if calls else "end_turn"
        end = {
            "type": "message_delta",
            "delta": {"stop_reason": reason},
            "usage": {"output_tokens": 30},
        }
        yield _frame(end) + _frame({"type": "message_stop"})

    return StreamingResponse(stream(), media_type="text/event-stream")


app = Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
