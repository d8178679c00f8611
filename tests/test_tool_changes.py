"""A tool server whose tools change while the gateway runs: on ``notifications/tools/list_changed``
the gateway lists them again, and the next turn offers — and runs — the new ones (a turn under
way keeps the tools it started with)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from tests import components
from tests.agent_responses import answer
from tests.conftest import stdio_tools
from tests.gateway_harness import http_upstream, post, running_gateway, user_body, uvicorn_server
from tests.mcp.tools_server import build
from tests.test_agent_loop import Model, parts_of

LEARN: list[tuple[str, list[Any]]] = [
    ("Learning.", [("c1", "learn", {"name": "greet"})]),
    ("Learned.", []),
    ("Greeting.", [("c2", "greet", {})]),
    ("Greeted.", []),
]


@contextlib.asynccontextmanager
async def tool_server(transport: str) -> AsyncIterator[dict[str, Any]]:
    """The test MCP server's settings: over stdio, or over Streamable HTTP (the change then
    comes on a stream the server holds open, through the gateway's HTTP transport)."""
    if transport == "stdio":
        yield stdio_tools()
        return
    async with uvicorn_server(build().streamable_http_app()) as base:
        components.used("mcp")  # a server of the test's own: it learns a tool
        yield {"math": {"url": f"{base}/mcp"}}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_changed_tool_list_is_offered_to_the_next_turn(
    transport: str, real_clients: Any
) -> None:
    model = Model(lambda n, body: answer("anthropic-messages", *LEARN[min(n, 4) - 1], n=n))
    async with (
        http_upstream("/{path:path}", model.handle) as upstream,
        tool_server(transport) as servers,
    ):
        async with running_gateway(
            dialect="anthropic-messages", upstream=upstream, tools=servers, target=7
        ) as (base, app):
            tools = app.state.gateway.tools
            changed, offer = asyncio.Event(), tools.on_change
            tools.on_change = lambda: (offer(), changed.set())
            first = await post(base, "s1", user_body("learn greet", id="c-1"))
            await asyncio.wait_for(changed.wait(), 10)
            assert "greet" in tools.catalog
            second = await post(base, "s2", user_body("greet", id="c-2"))
    assert first.status_code == 200 and second.status_code == 200
    offered = [[tool["name"] for tool in request["tools"]] for request in model.requests]
    assert "learn" in offered[0] and "greet" not in offered[0] and "greet" not in offered[1]
    assert "greet" in offered[2] and "greet" in offered[3]  # the next turn's model calls
    verdict = real_clients.check(second.content, (7,))[7]
    assert verdict.ok and verdict.finish_reason == "stop", verdict.fatal
    greeted = ("dynamic-tool", ("greet", "output-available", {"result": "greet ran"}))
    assert greeted in parts_of(verdict.message)
    assert b"greet ran" in orjson.dumps(model.requests[3]["messages"])
