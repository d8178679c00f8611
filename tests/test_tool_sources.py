"""Tool sources: real MCP servers (the ``mcp`` package's server) over stdio and Streamable HTTP
through the gateway's sources — listing, calls, errors for the model, timeouts, cancellation
seen by the server, the environment a stdio server gets, headers, allow/deny, name collisions,
approvals from annotations and configuration, capped outputs."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.tool_settings import ApprovalPolicy, ToolServerSettings
from chunkbridge.gateway.tools import ToolSources, ToolSourceUnavailable
from chunkbridge.gateway.tools.catalog import RemoteTool, build_catalog, capped
from tests import components
from tests.conftest import TOOLS_SERVER, ToolServer, stdio_tools
from tests.gateway_harness import running_gateway, uvicorn_server
from tests.helpers import result_of
from tests.mcp.tools_server import build

#: The tools of tests/mcp/tools_server.py.
SERVER_TOOLS = {
    *("add", "multiply", "slow", "env_of", "archive", "delete_branch", "learn", "big", "count"),
    *("rename", "move", "traced", "request_meta"),
}


def stdio(**more: Any) -> ToolServerSettings:
    return ToolServerSettings(command=sys.executable, args=[TOOLS_SERVER], **more)


class Recorded:
    """An ASGI app that notes the headers of each request it passes on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.headers: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


async def wait_for(path: Path, seconds: float) -> float | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if await asyncio.to_thread(path.exists):
            return time.monotonic()
        await asyncio.sleep(0.02)
    return None


async def test_a_stdio_server_lists_runs_and_is_cancelled(tmp_path: Path) -> None:
    mark = tmp_path / "cancelled"
    os.environ["CHUNKBRIDGE_TEST_SECRET"] = "never passed on"
    settings = stdio(env={"CANCEL_MARK": str(mark), "ONLY_THIS": "yes"}, tool_timeout=5)
    sources = ToolSources({"probe": settings})
    await sources.start()
    try:
        names = set(sources.catalog)
        added = await sources.call("add", {"a": 2, "b": 3})
        secret = await sources.call("env_of", {"variable": "CHUNKBRIDGE_TEST_SECRET"})
        given = await sources.call("env_of", {"variable": "ONLY_THIS"})
        failed = await sources.call("delete_branch", {"branch": "main"})
        invented = await sources.call("rm_rf", {})
        call = asyncio.create_task(sources.call("slow", {"seconds": 30}))
        assert await wait_for(mark.with_name("cancelled.started"), 10), "slow never started"
        stopped_at = time.monotonic()
        call.cancel()  # a stop
        with pytest.raises(asyncio.CancelledError):
            await call
        seen = await wait_for(mark, 2)
    finally:
        await sources.aclose()
    assert names == SERVER_TOOLS
    assert added.error is None and result_of(added.output) == {"result": 5}
    assert result_of(secret.output) == {"result": "<unset>"}  # only its configured environment
    assert result_of(given.output) == {"result": "yes"}
    assert failed.output is None and "branch main is protected" in (failed.error or "")
    assert invented.error == "there is no tool named 'rm_rf'"
    assert seen is not None and seen - stopped_at < 1.0, "the server must see the cancel in 1 s"
    assert sources.catalog["add"].needs_approval is False  # readOnlyHint
    assert sources.catalog["delete_branch"].needs_approval is True


async def test_a_streamable_http_server_gets_its_headers_and_times_out_a_call(
    tmp_path: Path,
) -> None:
    mark = tmp_path / "cancelled"
    recorded = Recorded(build(str(mark)).streamable_http_app())
    components.used("mcp")  # a server of the test's own, in this process
    async with uvicorn_server(recorded) as base:
        settings = ToolServerSettings(
            url=f"{base}/mcp", headers={"x-api-key": "k1"}, tool_timeout=0.5, deny=["big"]
        )
        sources = ToolSources({"http": settings})
        await sources.start()
        try:
            added = await sources.call("add", {"a": 1, "b": 1})
            late = await sources.call("slow", {"seconds": 30})
            seen = await wait_for(mark, 2)
            denied = await sources.call("big", {"size": 1})
        finally:
            await sources.aclose()
    assert result_of(added.output) == {"result": 2}
    assert late.error == "slow took longer than 0.5 s"
    assert seen is not None  # the timed-out call was cancelled on the server too
    assert denied.error == "there is no tool named 'big'"
    assert recorded.headers and all(h.get("x-api-key") == "k1" for h in recorded.headers)


async def test_two_servers_with_the_same_tool_are_told_apart_and_outputs_are_capped(
    tool_server: ToolServer,
) -> None:
    """Two servers offering ``add``: the worker's shared server, configured twice (two
    sessions of it, each as its own tool server)."""
    shared = ToolServerSettings(url=tool_server.url)
    sources = ToolSources(
        {
            "left": shared.model_copy(update={"allow": ["add", "big"], "max_output_bytes": 20}),
            "right": shared.model_copy(
                update={"allow": ["add"], "tool_approval": {"add": ApprovalPolicy.ALWAYS}}
            ),
        }
    )
    await sources.start()
    try:
        catalog = dict(sources.catalog)
        left = await sources.call("left_add", {"a": 1, "b": 2})
        long = await sources.call("big", {"size": 100})
    finally:
        await sources.aclose()
    assert set(catalog) == {"left_add", "right_add", "big"}
    assert catalog["right_add"].needs_approval and not catalog["left_add"].needs_approval
    assert result_of(left.output) == {"result": 3}
    assert [block["text"] for block in long.output["content"]] == [
        "éééééééééé\n[output cut: 200 bytes, 20 kept]",  # the text cut, and the structured
        "[structured content left out: more than max_output_bytes (20)]",  # content left out
    ]
    assert "structuredContent" not in long.output


async def test_an_unreachable_server_fails_the_start_up_with_its_name() -> None:
    sources = ToolSources(
        {"gone": ToolServerSettings(url="http://127.0.0.1:1/mcp", connect_timeout=2)}
    )
    with pytest.raises(ToolSourceUnavailable, match="tool server 'gone'"):
        await sources.start()


def test_the_catalog_and_the_settings_decide_without_a_server() -> None:
    read = RemoteTool("read", "", {"type": "object"}, read_only=True)
    write = RemoteTool("write", "", {"type": "object"})
    policies = {
        "a": stdio(approval=ApprovalPolicy.NEVER),
        "b": stdio(deny=["w*"]),
        "c": stdio(tool_approval={"read": ApprovalPolicy.ALWAYS}),
    }
    catalog = build_catalog({"a": [read, write], "b": [read, write], "c": [read]}, policies)
    assert {n: t.needs_approval for n, t in catalog.items()} == {
        "a_read": False,
        "write": False,  # approval = never: configuration wins over the (missing) hint
        "b_read": False,
        "c_read": True,  # tool_approval wins over readOnlyHint
    }
    assert capped("ab€", 3) == "ab\n[output cut: 5 bytes, 3 kept]"  # never inside a character
    with pytest.raises(ValueError, match="either url"):
        ToolServerSettings()
    with pytest.raises(ValueError, match="http"):
        ToolServerSettings(url="ftp://x")
    config = GatewayConfig(
        dialect="openai-chat",
        upstream="http://127.0.0.1:1",
        tools={"fs": {"command": "mcp-fs", "env": {"TOKEN": "s3cret"}}},
    )
    assert config.tools["fs"].command == "mcp-fs"
    assert "s3cret" not in repr(config)  # secrets never in a repr (or a log line)


async def test_the_gateway_connects_its_tool_servers_at_start_up() -> None:
    settings = {"probe": stdio_tools()["math"]}
    gateway = running_gateway(
        dialect="anthropic-messages", upstream="http://127.0.0.1:1", tools=settings
    )
    async with (
        gateway as (
            _,
            app,
        )
    ):
        tools = app.state.gateway.tools
        catalog = set(tools.catalog)
        added = await tools.call("add", {"a": 20, "b": 22})
    assert catalog == SERVER_TOOLS
    assert result_of(added.output) == {"result": 42}
