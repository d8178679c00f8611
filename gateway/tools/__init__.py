"""Tools the gateway runs itself: the configured MCP servers (``[tools.<server>]``), one source
each (:mod:`~chunkbridge.gateway.tools.mcp_source`), and the catalog the model is offered
(:mod:`~chunkbridge.gateway.tools.catalog`: names, allow/deny, approvals, output caps) — each
tool as a definition of its own, or for servers in meta mode the four meta-tools
(:mod:`~chunkbridge.gateway.tools.meta`) that list, search, describe and call them.

:class:`ToolSources` connects every server at start-up (a server that cannot be reached fails
the start-up with its name and reason) and runs a call by the name the model used: a name the
catalog does not hold — one the model invented — is an error result, never a call. When a
server's tools change, or it goes down or comes back up (its tools leave the catalog while it is
down; the names stay those of every server listed, so a name does not change under a turn), the
catalog is built again and ``on_change`` tells the gateway, whose next turns offer the new list
(turns under way keep theirs).

Whether a call interrupted by its instance's death may run again on the instance that takes
the turn over is :meth:`ToolSources.replay_safe`'s answer (the servers' ``replay`` policies);
a call made again carries the idempotency key its caller gives
(:data:`~chunkbridge.gateway.tools.mcp_source.IDEMPOTENCY_KEY_META`).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any

from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools.catalog import (
    CatalogTool,
    Progress,
    ToolAnswer,
    ToolOutcome,
    ToolQuestion,
    build_catalog,
    unknown_tool,
)
from chunkbridge.gateway.tools.mcp_sampling import Complete, SampleReport
from chunkbridge.gateway.tools.mcp_source import McpToolSource, ToolSourceUnavailable
from chunkbridge.gateway.tools.meta import answer as meta_answer
from chunkbridge.gateway.tools.relayed import Relay, served
from chunkbridge.protocol_specs import meta_tools

__all__ = [
    "CatalogTool",
    "Progress",
    "ToolAnswer",
    "ToolOutcome",
    "ToolQuestion",
    "ToolSourceUnavailable",
    "SampleReport",
    "ToolSources",
    "Relay",
    "unknown_tool",
]


class ToolSources:
    """Every configured tool server, and the catalog of their tools (see the module)."""

    def __init__(
        self,
        settings: Mapping[str, ToolServerSettings],
        tls: ssl.SSLContext | None = None,
        metrics: Metrics | None = None,
        model: Complete | None = None,
    ) -> None:
        """``model``: the gateway's, for the servers that may sample (``sampling = true``)."""
        self.settings = dict(settings)
        #: Whether each server is up (``chunkbridge_tool_servers_up``), how often it went down.
        self.metrics = metrics
        self.sources = {
            name: McpToolSource(name, s, tls, model) for name, s in self.settings.items()
        }
        self.catalog: dict[str, CatalogTool] = {}
        #: Every server's tools, those of the servers down too (a call of one gets an error
        #: that says the server is down, not that the tool does not exist).
        self._listed: dict[str, CatalogTool] = {}
        self.log = get_logger("chunkbridge.tools")
        #: Called after the catalog was built again (a server's tools changed).
        self.on_change: Callable[[], None] = lambda: None
        for source in self.sources.values():
            source.on_change = self._changed
            source.health.on_health = self._health_changed

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
        for source in self.sources.values():
            self._count(source)
        self._build()

    def _build(self) -> None:
        listed = {name: source.tools for name, source in self.sources.items()}
        self._listed = build_catalog(listed, self.settings)
        self.catalog = {n: e for n, e in self._listed.items() if self.sources[e.server].up}

    def _count(self, source: McpToolSource) -> None:
        if self.metrics is not None:
            self.metrics.tool_servers_up.labels(source.name).set(1 if source.up else 0)
            if not source.up:
                self.metrics.tool_server_downs.labels(source.name).inc()

    def _health_changed(self, source: McpToolSource) -> None:
        self._count(source)
        self._build()
        self.on_change()

    def _changed(self, source: McpToolSource) -> None:
        self._build()
        self.log.info("tools.changed", server=source.name, tools=len(source.tools))
        self.on_change()

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        answer: ToolAnswer | None = None,
        sampled: SampleReport | None = None,
        idempotency_key: str | None = None,
    ) -> ToolOutcome:
        """Run the catalog's tool ``name`` (again, with the user's ``answer`` to its question);
        its progress reports go to ``progress``, what its server sampled for it to
        ``sampled``. ``idempotency_key`` goes to the server with the call (the same for every
        run of one call: the caller's to keep)."""
        entry = self._listed.get(name)
        started = time.monotonic()
        if entry is not None:
            server = entry.server
            source = self.sources[server]
            with source.sampling_budget(sampled):
                outcome = await source.call(
                    entry.tool.name, arguments, progress, answer, idempotency_key
                )
        elif name in meta_tools.NAMES and self.meta:
            server = None
            outcome = meta_answer(name, arguments, self.catalog)
        else:
            return unknown_tool(name)
        self.log.info(
            "tool.call",
            tool=name,
            server=server,
            ok=outcome.error is None,
            asks=outcome.asks is not None,
            seconds=round(time.monotonic() - started, 4),
        )
        return outcome

    def use_relay(self, relay: Relay) -> None:
        """Calls parked on a question are held in ``relay`` for the other instances, and the
        answers they take for this one's calls are run here (see
        :mod:`~chunkbridge.gateway.tools.relayed`)."""
        for source in self.sources.values():
            source.asking.relay = relay
        relay.serve(lambda request, send: served(self._go_on, request, send))

    async def _go_on(
        self, server: str, tool: str, progress: Progress, answer: ToolAnswer
    ) -> ToolOutcome:
        """A call parked here, on with the answer another instance took."""
        source = self.sources.get(server)
        if source is None:
            return ToolOutcome(error=f"{tool} failed: no tool server {server!r} here")
        self.log.info("tools.relayed_answer", server=server, tool=tool)
        return await source.call(tool, {}, progress, answer)

    @property
    def meta(self) -> bool:
        """Some tools are offered through the meta-tools."""
        return any(entry.meta for entry in self.catalog.values())

    def replay_safe(self, name: str) -> bool:
        """Whether a call of ``name`` (a catalog name, as :meth:`call` takes it) cut off by its
        instance's death may run again on the instance that takes the turn over: the tool's
        ``replay`` policy. The meta-tools are answered from the catalog without a server, so
        running one again changes nothing — a ``tools_call`` too, which reaches this as a call
        of its own only when its batch could not be split, and then runs nothing; the calls of
        a batch come under their own tools' names and get their tools' answers. A name no
        server lists is not safe: what it would run is unknown."""
        entry = self._listed.get(name)
        if entry is not None:
            return entry.replay_safe
        return name in meta_tools.NAMES and self.meta

    def names(self) -> dict[str, bool]:
        """Every name a call of the gateway's tools may use (the meta-tools' too), and whether
        a call of it waits for the app's approval."""
        names = {name: entry.needs_approval for name, entry in self.catalog.items()}
        if self.meta:
            names.update(dict.fromkeys(meta_tools.NAMES, False))
        return names

    def definitions(self) -> dict[str, dict[str, Any]]:
        """The model's tool definitions (a provider dialect's ``tools`` setting's shape): each
        tool of a server in direct mode, and the meta-tools for the others."""
        definitions = {
            name: {"description": entry.tool.description, "input_schema": entry.tool.input_schema}
            for name, entry in self.catalog.items()
            if not entry.meta
        }
        if self.meta:
            definitions.update(meta_tools.DEFINITIONS)
        return definitions

    async def aclose(self) -> None:
        for source in reversed(list(self.sources.values())):
            await source.aclose()
