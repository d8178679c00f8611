"""Which tools the model is offered and how a call is treated: the decisions about the tool
servers' lists, without I/O (:mod:`~chunkbridge.gateway.tools.mcp_source` does the talking).

A server's tools pass its ``allow`` / ``deny`` patterns; the name the model sees is the tool's
own unless two servers offer the same one, then each becomes ``<server>_<tool>``. Whether a call
waits for the user follows the server's policy (a ``tool_approval`` entry first, then
``approval``; ``unless-read-only`` trusts the tool's ``readOnlyHint``). Whether a call cut off
by its instance's death may run again follows ``tool_replay``, then ``replay``, the same way
(``auto`` trusts ``readOnlyHint`` or ``idempotentHint``). An output longer than the server's
``max_output_bytes`` is cut, with a note saying so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from chunkbridge.gateway.tool_settings import (
    ApprovalPolicy,
    ReplayPolicy,
    ToolMode,
    ToolServerSettings,
)

__all__ = [
    "CatalogTool",
    "Progress",
    "RemoteTool",
    "ToolAnswer",
    "ToolOutcome",
    "ToolQuestion",
    "build_catalog",
    "capped",
    "picked",
    "unknown_tool",
]


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool as its server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool = False
    #: The server's ``idempotentHint``: calling it again with the same arguments does no more.
    idempotent: bool = False


@dataclass(frozen=True, slots=True)
class CatalogTool:
    """A tool as the gateway offers it: the name the model sees, where it runs, whether a call
    waits for the user's approval, and whether a call interrupted by its instance's death may
    run again."""

    name: str
    server: str
    tool: RemoteTool
    needs_approval: bool
    replay_safe: bool
    #: Offered through the meta-tools, not as a definition of its own (``mode = "meta"``).
    meta: bool = False


#: Told a running call's progress, as the server reported it: ``progress`` and, when the server
#: gave them, ``total`` and ``message`` (MCP's ``notifications/progress``).
Progress = Callable[[dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class ToolQuestion:
    """The server needs the user's input to go on (an MCP form elicitation): ask ``message``
    (answers of ``schema``), then call again with the answer under ``key`` and ``state``."""

    key: str
    message: str
    schema: dict[str, Any]
    state: str | None


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """The user's answer to a :class:`ToolQuestion`, for the call made again: MCP's
    ``ElicitResult`` (``action``: accept, decline or cancel; ``content``)."""

    key: str
    action: str
    content: dict[str, Any] | None
    state: str | None


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A call's result: its output (JSON), or the error the model is told, or the question the
    call waits on."""

    output: Any = None
    error: str | None = None
    asks: ToolQuestion | None = None


def unknown_tool(name: str) -> ToolOutcome:
    """The result of a call of a tool the catalog does not hold (a name the model invented)."""
    return ToolOutcome(error=f"there is no tool named {name!r}")


def picked(name: str, settings: ToolServerSettings) -> bool:
    """Whether the server's ``allow`` / ``deny`` patterns let tool ``name`` through."""
    if any(fnmatchcase(name, pattern) for pattern in settings.deny):
        return False
    return settings.allow is None or any(fnmatchcase(name, p) for p in settings.allow)


def _needs_approval(tool: RemoteTool, settings: ToolServerSettings) -> bool:
    policy = settings.tool_approval.get(tool.name, settings.approval)
    if policy is ApprovalPolicy.UNLESS_READ_ONLY:
        return not tool.read_only
    return policy is ApprovalPolicy.ALWAYS


def _replay_safe(tool: RemoteTool, settings: ToolServerSettings) -> bool:
    policy = settings.tool_replay.get(tool.name, settings.replay)
    if policy is ReplayPolicy.AUTO:
        return tool.read_only or tool.idempotent
    return policy is ReplayPolicy.SAFE


def build_catalog(
    listed: Mapping[str, Sequence[RemoteTool]], settings: Mapping[str, ToolServerSettings]
) -> dict[str, CatalogTool]:
    """The tools offered, by the name the model sees (see the module)."""
    kept = {
        server: [t for t in tools if picked(t.name, settings[server])]
        for server, tools in listed.items()
    }
    counts = Counter(t.name for tools in kept.values() for t in tools)
    catalog: dict[str, CatalogTool] = {}
    for server, tools in kept.items():
        for tool in tools:
            name = tool.name if counts[tool.name] == 1 else f"{server}_{tool.name}"
            catalog[name] = CatalogTool(
                name,
                server,
                tool,
                needs_approval=_needs_approval(tool, settings[server]),
                replay_safe=_replay_safe(tool, settings[server]),
                meta=settings[server].mode is ToolMode.META,
            )
    return catalog


def capped(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` bytes of UTF-8 (never inside a character), with a note."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    return f"{kept}\n[output cut: {len(data)} bytes, {limit} kept]"
