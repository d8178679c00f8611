"""Calls run again after their instance died: which may — the servers' ``replay`` policies over
their tools' annotations, as the real MCP test server lists them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from chunkbridge.gateway.tool_settings import ReplayPolicy, ToolServerSettings
from chunkbridge.gateway.tools import ToolSources
from chunkbridge.gateway.tools.catalog import RemoteTool, build_catalog
from chunkbridge.protocol_specs import meta_tools
from tests.conftest import ToolServer


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
