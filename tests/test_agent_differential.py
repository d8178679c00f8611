"""The agent loop against the AI SDK's own: Node ``streamText`` with ``stopWhen:
stepCountIs(n)``, ``@ai-sdk/anthropic`` and the AI SDK's MCP client (``@ai-sdk/mcp`` over
Streamable HTTP) on one side (``tests/conformance/agent_loop.mjs``), chunkbridge's loop on the
other, the same scripted model (:mod:`tests.agent_responses`) and the same MCP server under both
(the worker's shared ``tests/mcp/tools_server.py``, over Streamable HTTP). The real ai 7 client
reads both bodies; the final ``UIMessage``s must agree in substance — the same parts in the same
order: steps, texts, tool calls by name with their input, state and result.

What differs, each on purpose (asserted below so a change on either side shows):

* a failed call (``isError``): the AI SDK shows the ``CallToolResult`` as ``output-available``
  with ``isError: true``; chunkbridge makes it ``output-error`` with the server's message (the
  part's state says it failed, as for any other tool) — a result that did not fail is the same
  ``CallToolResult`` on both sides;
* ``toolMetadata`` (ai 7): the AI SDK names the MCP client and copies the tool's annotations
  there; chunkbridge sends none;
* ``custom`` parts: ``@ai-sdk/anthropic`` adds an ``anthropic.message_start`` part per step;
  chunkbridge's anthropic dialect does not (the same as without the loop);
* message metadata: the AI SDK sends none by default; chunkbridge sends the model, the usage
  summed over the steps and ``agentLoop`` (why the turn ended, each step's usage).
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from tests.agent_responses import TWO_STEPS, answer
from tests.conformance.harness import run_script
from tests.conftest import ToolServer
from tests.gateway_harness import post, user_body
from tests.test_agent_loop import Model, agent_gateway, steps_script

PROMPT = "What is (2 + 3) × 4?"


def ai_sdk_loop(steps: int, mcp_url: str) -> bytes:
    payload = {
        "responses": [
            answer("anthropic-messages", t, c, n) for n, (t, c) in enumerate(TWO_STEPS, 1)
        ],
        "prompt": PROMPT,
        "steps": steps,
        "mcp_url": mcp_url,
    }
    result = run_script("agent_loop.mjs", payload, 120)
    return base64.b64decode(result["body_b64"])


def substance(message: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for part in message["parts"]:
        kind = part["type"]
        if kind == "step-start":
            out.append(kind)
        elif kind == "text":
            out.append((kind, part["text"]))
        elif kind == "dynamic-tool":
            out.append((kind, part["toolName"], part["input"], part["state"]))
    return out


async def test_the_loop_agrees_with_the_ai_sdks_own(
    tool_server: ToolServer, real_clients: Any
) -> None:
    node_body = await asyncio.to_thread(ai_sdk_loop, 5, tool_server.url)
    model = Model(steps_script("anthropic-messages", TWO_STEPS))
    async with agent_gateway(model, "anthropic-messages", tool_server.settings(), target=7) as (
        base
    ):
        ours = await post(base, "s1", user_body(PROMPT, id="c1"))
    theirs_v, ours_v = (real_clients.check(body, (7,))[7] for body in (node_body, ours.content))
    assert theirs_v.ok and ours_v.ok, (theirs_v.fatal, ours_v.fatal)
    theirs, mine = theirs_v.message, ours_v.message
    assert substance(mine) == substance(theirs)
    assert theirs_v.finish_reason == ours_v.finish_reason == "stop"
    # the differences of the module docstring, one by one
    their_tools = [p for p in theirs["parts"] if p["type"] == "dynamic-tool"]
    my_tools = [p for p in mine["parts"] if p["type"] == "dynamic-tool"]
    for their, my in zip(their_tools, my_tools, strict=True):
        assert their["output"] == my["output"]  # MCP's CallToolResult, on both sides
        assert their["toolMetadata"]["clientName"] == "ai-sdk-mcp-client"
        assert "toolMetadata" not in my
    assert {p["type"] for p in theirs["parts"]} - {p["type"] for p in mine["parts"]} == {"custom"}
    assert theirs.get("metadata") is None
    assert mine["metadata"]["agentLoop"]["ending"] == "done"
