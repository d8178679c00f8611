"""The agent loop: the gateway runs its MCP servers' tools between model calls, for every
provider dialect, in one assistant message the real ai 5, 6 and 7 clients accept.

The model is scripted (:mod:`tests.agent_responses`, served by a stub that records what it was
asked); the tools are a real MCP server (:mod:`tests.mcp.tools_server`) over stdio."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import Response

from chunkbridge.translators.core.agent_loop import AgentLoop, CallKind, LoopEnding, ToolPolicy
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from tests.agent_responses import PROVIDER_DIALECTS, TWO_STEPS, answer
from tests.gateway_harness import http_upstream, post, running_gateway, sse_response, user_body

SERVER = str(Path(__file__).resolve().parent / "mcp" / "tools_server.py")
TOOLS = {"math": {"command": sys.executable, "args": [SERVER]}}


# -- the decisions, without I/O -------------------------------------------------------------------


def completed(reason: str = "tool-calls", **metadata: Any) -> CloseRequest:
    return CloseRequest(CloseReason.COMPLETED, finish_reason=reason, message_metadata=metadata)


def test_the_loop_goes_on_while_the_model_calls_only_gateway_tools() -> None:
    loop = AgentLoop(ToolPolicy({"add": False, "rm": True}, frozenset({"ask_user"})), 10)
    assert loop.call("add") is CallKind.RUN
    assert loop.step_ended(completed(usage={"inputTokens": 10, "outputTokens": 2})) is None
    assert loop.step == 2
    ending = loop.step_ended(completed("stop", usage={"inputTokens": 30, "outputTokens": 5}))
    assert ending is not None and ending.finish_reason == "stop"
    metadata = ending.message_metadata
    assert metadata["usage"] == {"inputTokens": 40, "outputTokens": 7}
    assert metadata["agentLoop"] == {
        "ending": "done",
        "steps": [
            {"finishReason": "tool-calls", "usage": {"inputTokens": 10, "outputTokens": 2}},
            {"finishReason": "stop", "usage": {"inputTokens": 30, "outputTokens": 5}},
        ],
    }


@pytest.mark.parametrize(
    ("calls", "ending"),
    [
        (["add", "ask_user"], LoopEnding.APP_TOOLS),  # the app's call ends the turn
        (["add", "rm"], LoopEnding.APPROVAL),  # a call waits for approval
        (["invented"], None),  # an error result for the model: it goes on
    ],
)
def test_what_ends_a_step_of_the_loop(calls: list[str], ending: LoopEnding | None) -> None:
    loop = AgentLoop(ToolPolicy({"add": False, "rm": True}, frozenset({"ask_user"})), 10)
    kinds = [loop.call(name) for name in calls]
    assert CallKind.UNKNOWN not in kinds or calls == ["invented"]
    result = loop.step_ended(completed("stop"))
    if ending is None:
        assert result is None
    else:
        assert result is not None and result.finish_reason == "tool-calls"
        assert result.message_metadata["agentLoop"]["ending"] == ending.value


def test_the_step_limit_ends_the_loop_after_the_last_steps_results() -> None:
    loop = AgentLoop(ToolPolicy({"add": False}), 2)
    loop.call("add")
    assert loop.step_ended(completed()) is None
    loop.call("add")
    ending = loop.step_ended(completed())
    assert ending is not None and ending.finish_reason == "tool-calls"
    assert ending.message_metadata["agentLoop"]["ending"] == "max-steps"
    with pytest.raises(ValueError):
        AgentLoop(ToolPolicy({}), 0)


# -- through the gateway --------------------------------------------------------------------------

Script = Callable[[int, dict[str, Any]], list[str]]


class Model:
    """A scripted model API: the n-th request gets ``script(n, body)``; requests are kept."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []

    async def handle(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests.append(body)
        frames = self.script(len(self.requests), body)
        return sse_response([f.encode() for f in frames], 0.001)


def steps_script(dialect: str, steps: list[tuple[str, list[Any]]]) -> Script:
    return lambda n, body: answer(dialect, *steps[min(n, len(steps)) - 1], n=n)


@asynccontextmanager
async def agent_gateway(model: Model, dialect: str, **settings: Any) -> AsyncIterator[str]:
    async with http_upstream("/{path:path}", model.handle) as upstream:
        async with running_gateway(dialect=dialect, upstream=upstream, tools=TOOLS, **settings) as (
            base,
            _,
        ):
            yield base


def parts_of(message: dict[str, Any]) -> list[tuple[str, Any]]:
    """(type, what matters) per part of a final message."""
    out = []
    for part in message["parts"]:
        kind = part["type"]
        if kind == "text":
            out.append((kind, part["text"]))
        elif kind == "dynamic-tool":
            out.append((kind, (part["toolName"], part["state"], part.get("output"))))
        elif kind == "step-start":
            out.append((kind, None))
    return out


@pytest.mark.parametrize("dialect", PROVIDER_DIALECTS)
async def test_two_tools_in_two_steps_make_one_message(dialect: str, real_clients: Any) -> None:
    model = Model(steps_script(dialect, TWO_STEPS))
    async with agent_gateway(model, dialect) as base:
        response = await post(base, "s1", user_body("What is (2 + 3) × 4?", id="chat-1"))
    assert response.status_code == 200, response.text
    verdicts = real_clients.check(response.content)
    expected = [
        ("step-start", None),
        ("text", "I'll add first."),
        ("dynamic-tool", ("add", "output-available", {"result": 5})),
        ("step-start", None),
        ("text", "Now the product."),
        ("dynamic-tool", ("multiply", "output-available", {"result": 20})),
        ("step-start", None),
        ("text", "(2 + 3) × 4 = 20."),
    ]
    for major, verdict in verdicts.items():
        assert verdict.ok, (major, verdict.fatal, response.text)
        assert verdict.finish_reason == "stop"
        assert parts_of(verdict.message) == expected, major
    metadata = verdicts[7].message["metadata"]
    assert metadata["agentLoop"]["ending"] == "done"
    steps = metadata["agentLoop"]["steps"]
    assert [step["finishReason"] for step in steps] == ["tool-calls", "tool-calls", "stop"]
    for key, total in metadata["usage"].items():  # summed over the steps
        assert total == sum(step["usage"][key] for step in steps), key
    assert 600 in metadata["usage"].values()  # 100 + 200 + 300 prompt tokens
    # the model was called three times, each time with the results so far
    assert len(model.requests) == 3
    asked = [orjson.dumps({k: v for k, v in r.items() if k != "tools"}) for r in model.requests]
    assert b"add" not in asked[0]
    assert b"add" in asked[1] and b"multiply" not in asked[1]
    assert b"multiply" in asked[2] and b"20" in asked[2]
    offered = orjson.dumps(model.requests[0])
    assert b"multiply" in offered and b"delete_branch" in offered
