"""MCP roots: a server's ``roots`` are declared as the client's ``roots`` capability and given
when it asks (``roots/list``); unset, the capability is not declared. Judged by the third-party
server-everything, whose ``get-roots-list`` tool exists only for a client that declares roots
and lists the ones it was given."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools import ToolSources
from tests.agent_responses import answer
from tests.gateway_harness import http_upstream, post, running_gateway, user_body
from tests.mcp.everything import everything_over, everything_stdio
from tests.test_agent_loop import Model

ROOTS = ["file:///srv/project", "file:///home/me/notes%20and%20drafts"]
LISTING: list[tuple[str, list[Any]]] = [
    ("Looking.", [("call_roots", "get-roots-list", {})]),
    ("Two roots.", []),
]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_configured_roots_reach_the_server_and_the_model(
    transport: str, real_clients: Any
) -> None:
    model = Model(lambda n, body: answer("anthropic-messages", *LISTING[min(n, 2) - 1], n=n))
    with everything_over(transport, roots=ROOTS, approval="never") as server:
        async with (
            http_upstream("/{path:path}", model.handle) as upstream,
            running_gateway(
                dialect="anthropic-messages", upstream=upstream, tools={"everything": server}
            ) as (base, _),
        ):
            response = await post(base, "s1", user_body("which roots?", id="c-1"))
    assert response.status_code == 200
    for verdict in real_clients.check(response.content, (5, 6, 7)).values():
        assert verdict.ok and verdict.finish_reason == "stop", verdict.fatal
        (listed,) = [p for p in verdict.message["parts"] if p.get("toolName") == "get-roots-list"]
        assert listed["state"] == "output-available", listed
        output = orjson.dumps(listed["output"]).decode()
        assert "Current MCP Roots (2 total)" in output
        assert all(f"URI: {root}" in output for root in ROOTS), output
    told = orjson.dumps(model.requests[1]["messages"]).decode()  # the model reads the result
    assert all(root in told for root in ROOTS)


async def test_without_roots_the_capability_is_not_declared() -> None:
    sources = ToolSources({"everything": ToolServerSettings(**everything_stdio())})
    await sources.start()
    try:
        assert "get-sum" in sources.catalog
        assert "get-roots-list" not in sources.catalog  # the server saw no roots capability
    finally:
        await sources.aclose()


def test_a_root_is_a_file_uri() -> None:
    with pytest.raises(ValidationError, match="a root is a file:// URI"):
        ToolServerSettings(command="x", roots=["/srv/project"])
    assert ToolServerSettings(command="x", roots=[]).roots == []  # declared, with none
