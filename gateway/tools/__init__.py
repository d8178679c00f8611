"""Tools the gateway runs itself: the configured MCP servers (``[tools.<server>]``), one source
each (:mod:`~chunkbridge.gateway.tools.mcp_source`), and the catalog the model is offered
(:mod:`~chunkbridge.gateway.tools.catalog`: names, allow/deny, approvals, output caps).

:class:`ToolSources` connects every server at start-up (a server that cannot be reached fails
the start-up with its name and reason) and runs a call by the name the model used: a name the
catalog does not hold — one the model invented — is an error result, never a call.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools.catalog import (
    CatalogTool,
    ToolOutcome,
    build_catalog,
    unknown_tool,
)
from chunkbridge.gateway.tools.mcp_source import McpToolSource, ToolSourceUnavailable

__all__ = ["CatalogTool", "ToolOutcome", "ToolSourceUnavailable", "ToolSources", "unknown_tool"]


class ToolSources:
    """Every configured tool server, and the catalog of their tools (see the module)."""

    def __init__(self, settings: Mapping[str, ToolServerSettings]) -> None:
        self.settings = dict(settings)
        self.sources = {name: McpToolSource(name, s) for name, s in self.settings.items()}
        self.catalog: dict[str, CatalogTool] = {}
        self.log = get_logger("chunkbridge.tools")

    async def start(self) -> None:
        started: list[McpToolSource] = []
        try:
            for source in self.sources.values():
                await source.start()
                started.append(source)
        except ToolSourceUnavailable:
            for source in reversed(started):
                await source.aclose()
            raise
        listed = {name: source.tools for name, source in self.sources.items()}
        self.catalog = build_catalog(listed, self.settings)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run the catalog's tool ``name``."""
        entry = self.catalog.get(name)
        if entry is None:
            return unknown_tool(name)
        started = time.monotonic()
        outcome = await self.sources[entry.server].call(entry.tool.name, arguments)
        self.log.info(
            "tool.call",
            tool=name,
            server=entry.server,
            ok=outcome.error is None,
            seconds=round(time.monotonic() - started, 4),
        )
        return outcome

    def definitions(self) -> dict[str, dict[str, Any]]:
        """The model's tool definitions (a provider dialect's ``tools`` setting's shape)."""
        return {
            name: {"description": entry.tool.description, "input_schema": entry.tool.input_schema}
            for name, entry in self.catalog.items()
        }

    async def aclose(self) -> None:
        for source in reversed(list(self.sources.values())):
            await source.aclose()
