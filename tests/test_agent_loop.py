"""The agent loop: the gateway runs its MCP servers' tools between model calls, for every
provider dialect, in one assistant message the real ai 5, 6 and 7 clients accept.

The model is scripted (:mod:`tests.agent_responses`, served by a stub that records what it was
asked); the tools are a real MCP server (:mod:`tests.mcp.tools_server`): the worker's shared one
over Streamable HTTP, or one of the test's own over stdio where the transport is the point."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import httpx
import orjson
import pytest
from starlette.requests import Request
from starlette.responses import Response

from chunkbridge.kit import counter_ids
from chunkbridge.translators.core.agent_loop import (
    AgentLoop,
    CallKind,
    LoopEnding,
    LoopPhase,
    ToolPolicy,
)
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.steps import ReadyCall
from tests.agent_responses import PROVIDER_DIALECTS, TWO_STEPS, answer
from tests.conftest import ToolServer, stdio_tools
from tests.gateway_harness import (
    follow,
    http_upstream,
    post,
    running_gateway,
    sse_response,
    user_body,
)
from tests.helpers import result_of
from tests.test_tool_sources import wait_for

# -- the decisions, without I/O -------------------------------------------------------------------


def completed(reason: str = "tool-calls", **metadata: Any) -> CloseRequest:
    return CloseRequest(CloseReason.COMPLETED, finish_reason=reason, message_metadata=metadata)


def new_loop(policy: ToolPolicy, max_steps: int) -> AgentLoop:
    return AgentLoop(policy, max_steps, ids=counter_ids())


def test_the_loop_goes_on_while_the_model_calls_only_gateway_tools() -> None:
    loop = new_loop(ToolPolicy({"add": False, "rm": True}, frozenset({"ask_user"})), 10)
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
    loop = new_loop(ToolPolicy({"add": False, "rm": True}, frozenset({"ask_user"})), 10)
    kinds = [loop.call(name) for name in calls]
    assert CallKind.UNKNOWN not in kinds or calls == ["invented"]
    result = loop.step_ended(completed("stop"))
    if ending is None:
        assert result is None
    else:
        assert result is not None and result.finish_reason == "tool-calls"
        assert result.message_metadata["agentLoop"]["ending"] == ending.value


def test_what_the_loop_adds_to_the_stream_is_the_same_every_time() -> None:
    """Approval requests, errors, results and questions come from the loop with the ids of its
    factory: a loop turn's output is as deterministic as its model's (golden-testable)."""

    def one_step() -> tuple[AgentLoop, list[dict[str, Any]]]:
        loop = new_loop(ToolPolicy({"add": False, "rm": True, "book": False}), 10)
        calls = [
            ReadyCall("c1", "add", {"a": 1}),
            ReadyCall("c2", "rm", {"path": "/"}),
            ReadyCall("c3", "invented", {}),
            ReadyCall("c4", "book", {"day": 1.0}),
        ]
        run, out = loop.dispatch(calls)
        assert [call.call_id for call in run] == ["c1", "c4"]
        question = SimpleNamespace(key="k", message="Which room?", schema={}, state=None)
        out.append(loop.result(run[0], SimpleNamespace(output=2, error=None, asks=None)))
        out.append(loop.result(run[1], SimpleNamespace(output=None, error=None, asks=question)))
        return loop, out + loop.questions()

    loop, first = one_step()
    assert one_step()[1] == first
    assert first[0] == {
        "type": "tool-approval-request",
        "approvalId": "approval-1",
        "toolCallId": "c2",
    }
    assert first[1]["errorText"] == "there is no tool named 'invented'"
    assert first[2] == {"type": "tool-output-available", "toolCallId": "c1", "output": 2}
    assert first[3]["preliminary"] is True
    ask = first[-1]
    assert ask["toolCallId"] == "c4-ask-1" and ask["toolName"] == "ask_user"
    assert [c["type"] for c in first[4:6]] == ["finish-step", "start-step"]
    ending = loop.step_ended(completed())  # the question ends the turn for the app to answer
    assert ending is not None and loop.phase is LoopPhase.ENDED
    assert ending.message_metadata["agentLoop"]["ending"] == "app-tools"


def test_the_loop_holds_its_phase() -> None:
    loop = AgentLoop(ToolPolicy({"add": False}), 3, ids=counter_ids(), resumed=True)
    assert loop.phase is LoopPhase.RELEASED
    assert loop.released_ran() is None and loop.phase is LoopPhase.CALLING
    loop.model_called()
    assert loop.phase is LoopPhase.STREAMING
    loop.call("add")
    loop.model_finished()
    assert loop.phase is LoopPhase.RESULTS
    assert loop.step_ended(completed()) is None and loop.phase is LoopPhase.CALLING


def test_the_step_limit_ends_the_loop_after_the_last_steps_results() -> None:
    loop = new_loop(ToolPolicy({"add": False}), 2)
    loop.call("add")
    assert loop.step_ended(completed()) is None
    loop.call("add")
    ending = loop.step_ended(completed())
    assert ending is not None and ending.finish_reason == "tool-calls"
    assert ending.message_metadata["agentLoop"]["ending"] == "max-steps"
    with pytest.raises(ValueError):
        new_loop(ToolPolicy({}), 0)


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
async def agent_gateway(
    model: Model, dialect: str, tools: dict[str, Any], **settings: Any
) -> AsyncIterator[str]:
    async with http_upstream("/{path:path}", model.handle) as upstream:
        async with running_gateway(dialect=dialect, upstream=upstream, tools=tools, **settings) as (
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
            out.append((kind, (part["toolName"], part["state"], result_of(part.get("output")))))
        elif kind == "step-start":
            out.append((kind, None))
    return out


@pytest.mark.parametrize(
    ("dialect", "transport"),
    [*((dialect, "http") for dialect in PROVIDER_DIALECTS), ("anthropic-messages", "stdio")],
)
async def test_two_tools_in_two_steps_make_one_message(
    dialect: str, transport: str, tool_server: ToolServer, real_clients: Any
) -> None:
    model = Model(steps_script(dialect, TWO_STEPS))
    tools = stdio_tools() if transport == "stdio" else tool_server.settings()
    async with agent_gateway(model, dialect, tools) as base:
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


ARCHIVE: list[tuple[str, list[Any]]] = [
    ("Archiving it.", [("call_arch", "archive", {"name": "q3"})]),
    ("Done.", []),
]


@pytest.mark.parametrize("approved", [True, False])
@pytest.mark.parametrize("major", [5, 6, 7])
async def test_a_destructive_tool_waits_for_approval_and_runs_once(
    major: int, approved: bool, tool_server: ToolServer, real_clients: Any
) -> None:
    model = Model(steps_script("anthropic-messages", ARCHIVE))
    tools = tool_server.settings()
    async with http_upstream("/{path:path}", model.handle) as upstream:
        async with running_gateway(
            dialect="anthropic-messages", upstream=upstream, tools=tools, target=major
        ) as (base, _):
            api = f"{base}/api/sessions/s-{major}/chat"
            answers = [{"kind": "approval", "approved": approved, "reason": "not now"}]
            result = await real_clients.chat_loop(api, major, "archive q3", answers)
            last = result["requests"][-1]
            again = await post(base, f"s-{major}", last)  # the same answer once more
    calls = tool_server.calls()
    assert result["error"] is None and result["status"] == "ready", result
    assert calls == (["q3"] if approved else [])  # approved: exactly once; denied: never
    assert again.status_code == 409
    message = result["messages"][-1]
    tool = next(p for p in message["parts"] if p.get("toolName") == "archive")
    texts = [p["text"] for p in message["parts"] if p["type"] == "text"]
    assert texts == ["Archiving it.", "Done."]
    if approved:
        assert tool["state"] == "output-available"
        assert result_of(tool["output"]) == {"result": "archived q3"}
    elif major == 5:  # no denials on ai 5: an error output says it
        assert tool["state"] == "output-error"
    else:
        assert tool["state"] == "output-denied"
    # the model heard of the call and of its result (or denial) before it answered
    assert len(model.requests) == 2
    heard = orjson.dumps(model.requests[1]["messages"])
    assert (b"archived q3" in heard) is approved
    assert b"tool_result" in heard and b"call_arch" in heard


APPROVE_SLOW: list[tuple[str, list[Any]]] = [
    ("Waiting a moment.", [("call_slow", "slow", {"seconds": 1.0})]),
    ("Done waiting.", []),
]


@pytest.mark.parametrize("approval", ["always", "never"])
async def test_a_call_goes_on_when_its_client_leaves_mid_call(
    approval: str, tool_server: ToolServer, real_clients: Any
) -> None:
    """The client goes away while a gateway call runs — a call the model just made, or (after
    an approval) the call a continuation runs first. With resume on the turn goes on detached:
    the call's result and the model's answer still come, and a reader resuming the stream reads
    them to the end."""
    model = Model(steps_script("anthropic-messages", APPROVE_SLOW))
    tools = tool_server.settings(tool_approval={"slow": approval})
    async with agent_gateway(model, "anthropic-messages", tools, target=7, resume="memory") as (
        base
    ):
        body = user_body("wait a moment", id="c1")
        if approval == "always":
            first = await post(base, "s1", body)
            message = real_clients.check(first.content, (7,))[7].message
            (slow,) = [p for p in message["parts"] if p.get("toolName") == "slow"]
            assert slow["state"] == "approval-requested", slow
            slow["state"] = "approval-responded"  # what addToolApprovalResponse does
            slow["approval"] |= {"approved": True}
            body["messages"].append(message)
        async with httpx.AsyncClient(timeout=20, trust_env=False) as client:
            url = f"{base}/api/sessions/s1/chat"
            async with client.stream("POST", url, json=body) as response:
                assert response.status_code == 200, await response.aread()
                started = tool_server.cancel_mark.with_name("cancelled.started")
                assert await wait_for(started, 10), "the call never started"
        # the client is gone, the call still runs: a fresh page resumes the stream
        status, resumed = await follow(base, "s1", asyncio.Event(), chat="c1")
    assert status == 200 and resumed.endswith(b"data: [DONE]\n\n"), resumed[-300:]
    assert not tool_server.cancel_mark.exists(), "the call was cancelled"
    assert len(model.requests) == 2  # the model heard the result and answered
    verdict = real_clients.check(resumed, (7,))[7]
    assert verdict.ok and verdict.finish_reason == "stop", (verdict.fatal, resumed[-500:])
    (slow,) = [p for p in verdict.message["parts"] if p.get("toolName") == "slow"]
    assert slow["state"] == "output-available" and result_of(slow["output"]) == {"result": "done"}
    texts = [p["text"] for p in verdict.message["parts"] if p["type"] == "text"]
    assert texts == ["Waiting a moment.", "Done waiting."]


SLOW: list[tuple[str, list[Any]]] = [
    ("Waiting.", [("call_slow", "slow", {"seconds": 30}), ("call_add", "add", {"a": 1, "b": 2})]),
    ("Never asked.", []),
]


async def read_until(pieces: AsyncIterator[bytes], marker: bytes, seconds: float = 10) -> bytes:
    body = b""
    async with asyncio.timeout(seconds):
        async for piece in pieces:
            body += piece
            if marker in body:
                return body
    raise AssertionError(f"{marker!r} never came: {body!r}")


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("how", ["stop", "disconnect"])
async def test_stop_during_a_slow_tool_cancels_it_on_the_server(
    how: str, transport: str, tool_server: ToolServer, real_clients: Any
) -> None:
    """The cancellation reaches the server over either transport (a notification on the stdio
    pipe; over HTTP, a request of its own beside the call's open response)."""
    model = Model(steps_script("anthropic-messages", SLOW))
    mark = tool_server.cancel_mark
    if transport == "stdio":
        tools = stdio_tools(env={"CANCEL_MARK": str(mark)}, tool_approval={"slow": "never"})
    else:
        tools = tool_server.settings(tool_approval={"slow": "never"})
    async with http_upstream("/{path:path}", model.handle) as upstream:
        async with running_gateway(
            dialect="anthropic-messages",
            upstream=upstream,
            tools=tools,
            resume="memory" if how == "stop" else "off",  # resumable: a disconnect detaches
        ) as (base, _):
            url = f"{base}/api/sessions/s1/chat"
            async with httpx.AsyncClient(timeout=20, trust_env=False) as client:
                async with client.stream("POST", url, json=user_body("wait", id="c1")) as response:
                    pieces = response.aiter_bytes()
                    body = await read_until(pieces, b'"structuredContent":{"result":3}')
                    stopped_at = time.monotonic()
                    if how == "stop":
                        stop = await client.post(f"{base}/api/sessions/s1/chat/c1/stop")
                        assert stop.status_code == 202
                        async for piece in pieces:
                            body += piece
                if how == "disconnect":
                    stopped_at = time.monotonic()
                seen = await wait_for(mark, 3)
    assert seen is not None, "the MCP server never saw the cancellation"
    assert seen - stopped_at < 1.0
    assert len(model.requests) == 1  # the model is not called after a stop
    if how == "stop":
        verdicts = real_clients.check(body)
        for major, verdict in verdicts.items():
            assert verdict.ok, (major, verdict.fatal, body)
            tools_seen = {
                p["toolName"]: p for p in verdict.message["parts"] if p["type"] == "dynamic-tool"
            }
            assert tools_seen["add"]["state"] == "output-available"
            assert tools_seen["slow"]["state"] == "output-error"  # interrupted, not the app's
        assert verdicts[7].finish_reason == "other"  # "interrupted" is 7-only (target 5 here)


MIXED: list[tuple[str, list[Any]]] = [
    ("", [("call_add", "add", {"a": 1, "b": 1}), ("call_pick", "pick_color", {})]),
    ("Two, in blue.", []),
]


async def test_a_tool_the_app_runs_ends_the_turn_and_the_continuation_resumes_the_loop(
    tool_server: ToolServer, real_clients: Any
) -> None:
    model = Model(steps_script("openai-chat", MIXED))
    app_tool = {"pick_color": {"description": "The user picks a color.", "input_schema": {}}}
    settings = {"openai-chat": {"tools": app_tool}}
    tools = tool_server.settings()
    async with agent_gateway(model, "openai-chat", tools, target=7, dialect_settings=settings) as (
        base
    ):
        first = await post(base, "s1", user_body("count in color", id="c1"))
        verdict = real_clients.check(first.content, (7,))[7]
        assert verdict.ok and verdict.finish_reason == "tool-calls", verdict.fatal
        message = verdict.message
        assert message["metadata"]["agentLoop"]["ending"] == "app-tools"
        states = {p["type"]: p["state"] for p in message["parts"] if "toolCallId" in p}
        assert states == {"dynamic-tool": "output-available", "tool-pick_color": "input-available"}
        assert len(model.requests) == 1  # the gateway's call ran; the app's waits
        for part in message["parts"]:
            if part["type"] == "tool-pick_color":
                part.update(state="output-available", output="blue")
        user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "count in color"}]}
        body = {"id": "c1", "messages": [user, message], "trigger": "submit-message"}
        second = await post(base, "s1", body)
    verdict = real_clients.check(second.content, (7,), message)[7]
    assert verdict.ok and verdict.finish_reason == "stop", verdict.fatal
    texts = [p["text"] for p in verdict.message["parts"] if p["type"] == "text"]
    assert texts == ["Two, in blue."]
    asked = orjson.dumps(model.requests[1]["messages"])
    # the MCP result as the AI SDK writes it into a chat completion's tool message
    assert b'"content":"blue"' in asked and b'[{\\"type\\":\\"text\\",\\"text\\":\\"2\\"}]' in asked


@pytest.mark.parametrize("failure", ["truncated", "refused"])
async def test_a_model_call_failing_mid_loop_ends_the_message_validly(
    failure: str, tool_server: ToolServer, real_clients: Any
) -> None:
    """Step 1 ran a tool; the second model call is cut off (or refused): the message ends with
    the step's results kept and an error every client accepts."""

    def script(n: int, body: dict[str, Any]) -> list[str]:
        frames = answer("anthropic-messages", *TWO_STEPS[n - 1], n=n)
        return frames if n == 1 else frames[:4]  # the second: its start and some text only

    model = Model(script)
    if failure == "refused":
        plain = model.handle

        async def handle(request: Request) -> Response:
            if model.requests:
                model.requests.append({})
                return Response(b'{"type":"error","error":{"message":"overloaded"}}', 400)
            return await plain(request)

        model.handle = handle  # type: ignore[method-assign]
    async with agent_gateway(model, "anthropic-messages", tool_server.settings()) as base:
        response = await post(base, "s1", user_body("(2 + 3) × 4?", id="c1"))
    assert len(model.requests) == 2
    assert b'"finishReason":"error"' in response.content
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok, (major, verdict.fatal)
        assert verdict.error_text  # the client stops reading at the error chunk
        tools = [p for p in verdict.message["parts"] if p["type"] == "dynamic-tool"]
        assert [(t["toolName"], t["state"]) for t in tools] == [("add", "output-available")]


async def test_a_tool_nobody_has_is_a_dynamic_part_with_its_error(
    tool_server: ToolServer, real_clients: Any
) -> None:
    """A name the model made up is never run: its part is the runtime's (``dynamic-tool``, as
    the AI SDK shows a call of an unknown tool), its error what the model reads next."""
    steps = [("Trying.", [("c_x", "rm_rf", {"path": "/"})]), ("It does not exist.", [])]
    model = Model(steps_script("anthropic-messages", steps))
    async with agent_gateway(model, "anthropic-messages", tool_server.settings()) as base:
        response = await post(base, "s1", user_body("clean up", id="c1"))
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
        (part,) = [p for p in verdict.message["parts"] if p.get("toolCallId") == "c_x"]
        assert part["type"] == "dynamic-tool" and part["toolName"] == "rm_rf", major
        assert part["state"] == "output-error"
        assert part["errorText"] == "there is no tool named 'rm_rf'"
    assert b"there is no tool named 'rm_rf'" in orjson.dumps(model.requests[1])
