"""Calls run again after their instance died: which may (the servers' ``replay`` policies, their
tools' annotations), and the idempotency key a call carries to its server in the ``_meta`` of
its ``tools/call`` — proved with the real MCP test server, whose ``request_meta`` tool returns
the ``_meta`` it got, over stdio and Streamable HTTP."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pydantic import ValidationError

from chunkbridge.gateway.tool_settings import ReplayPolicy, ToolServerSettings
from chunkbridge.gateway.tools import ToolAnswer, ToolSources
from chunkbridge.gateway.tools.catalog import RemoteTool, build_catalog
from chunkbridge.gateway.tools.mcp_source import IDEMPOTENCY_KEY_META
from chunkbridge.protocol_specs import meta_tools
from tests.conftest import TOOLS_SERVER, ToolServer
from tests.helpers import result_of


def _tool(name: str, **hints: bool) -> RemoteTool:
    return RemoteTool(name, "", {"type": "object"}, **hints)


def test_replay_follows_the_annotations_unless_the_configuration_says() -> None:
    read, same, write = _tool("read", read_only=True), _tool("same", idempotent=True), _tool("w")
    servers = {
        "auto": ToolServerSettings(command="x"),
        "safe": ToolServerSettings(command="x", replay=ReplayPolicy.SAFE),
        "never": ToolServerSettings(command="x", replay="never"),
        "picky": ToolServerSettings(
            command="x", tool_replay={"read": ReplayPolicy.NEVER, "w": ReplayPolicy.SAFE}
        ),
    }
    listed = {server: [read, same, write] for server in servers}
    catalog = build_catalog(listed, servers)
    assert {name: entry.replay_safe for name, entry in catalog.items()} == {
        "auto_read": True,  # readOnlyHint
        "auto_same": True,  # idempotentHint
        "auto_w": False,  # no hint: the default is not to run it twice
        "safe_read": True,
        "safe_same": True,
        "safe_w": True,  # the configuration wins over the (missing) hints
        "never_read": False,
        "never_same": False,  # … and over the hints
        "never_w": False,
        "picky_read": False,  # tool_replay wins over replay and the hint
        "picky_same": True,
        "picky_w": True,
    }
    with pytest.raises(ValidationError, match="replay"):
        ToolServerSettings(command="x", replay="sometimes")


@asynccontextmanager
async def sources_over(
    transport: str, tool_server: ToolServer, **more: Any
) -> AsyncIterator[ToolSources]:
    """The test MCP server's tools: a stdio process of the test's own, or the worker's shared
    Streamable HTTP server."""
    if transport == "stdio":
        settings = ToolServerSettings(command=sys.executable, args=[TOOLS_SERVER], **more)
    else:
        settings = ToolServerSettings(**tool_server.settings(**more)["math"])
    sources = ToolSources({"math": settings})
    await sources.start()
    try:
        yield sources
    finally:
        await sources.aclose()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_idempotency_key_reaches_the_server_in_the_calls_meta(
    transport: str, tool_server: ToolServer
) -> None:
    reports: list[dict[str, Any]] = []
    async with sources_over(transport, tool_server) as sources:
        bare = await sources.call("request_meta", {})
        keyed = await sources.call("request_meta", {}, idempotency_key="turn-7/call_1")
        # with a progress token beside it, and a 2026-07-28 call made again with an answer
        counted = await sources.call(
            "count", {"to": 2, "pause": 0}, reports.append, idempotency_key="k"
        )
        asked = await sources.call("rename", {"file": "a.txt"}, idempotency_key="k")
        assert asked.asks is not None, asked
        answer = ToolAnswer(asked.asks.key, "accept", {"name": "b.txt"}, asked.asks.state)
        renamed = await sources.call(
            "rename", {"file": "a.txt"}, answer=answer, idempotency_key="k"
        )
    got, got_keyed = result_of(bare.output), result_of(keyed.output)
    assert IDEMPOTENCY_KEY_META not in got  # without a key, nothing of ours is added
    assert got_keyed[IDEMPOTENCY_KEY_META] == "turn-7/call_1"
    # and nothing else: the same keys as without it (their values may differ: a traceparent)
    assert set(got_keyed) - {IDEMPOTENCY_KEY_META} == set(got)
    assert result_of(counted.output) == {"result": "counted to 2"}
    assert [report["progress"] for report in reports] == [1, 2]
    assert result_of(renamed.output) == {"result": "renamed a.txt to b.txt"}


async def test_which_calls_of_real_servers_may_run_again(tool_server: ToolServer) -> None:
    """The annotations the server lists (``add`` read-only, ``request_meta`` idempotent,
    ``archive`` neither), the configuration over them, and the meta-tools of a meta server."""
    direct = ToolServerSettings(**tool_server.settings(deny=["multiply", "slow"])["math"])
    meta = ToolServerSettings(
        **tool_server.settings(
            mode="meta", allow=["multiply", "slow"], tool_replay={"slow": "safe"}
        )["math"]
    )
    sources = ToolSources({"direct": direct, "meta": meta})
    await sources.start()
    try:
        safe = {name: sources.replay_safe(name) for name in sources.catalog}
        metas = {name: sources.replay_safe(name) for name in meta_tools.NAMES}
        invented = sources.replay_safe("rm_rf")
    finally:
        await sources.aclose()
    assert safe["add"] and safe["request_meta"] and not safe["archive"]
    assert safe["multiply"]  # read-only, offered through the meta-tools
    assert safe["slow"]  # no hint, but the configuration says so
    assert metas == dict.fromkeys(meta_tools.NAMES, True)  # answered without a server
    assert invented is False  # what it would run is unknown
    without_meta = ToolSources({"direct": direct})
    assert without_meta.replay_safe(meta_tools.LIST) is False  # no meta server: no such tool
