"""The answers of the meta-tools (``protocol_specs/meta_tools.py``) from the catalog, without
I/O: what a model in meta mode learns of the tools before it calls them.

Only the tools of servers in ``mode = "meta"`` are listed, searched and described (the others
are the model's own definitions already). A :data:`~chunkbridge.protocol_specs.meta_tools.CALL`
that reaches the gateway as a call of its own is a batch the stream core could not split (its
input is no list of calls): its result says what the model got wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from chunkbridge.gateway.tools.catalog import CatalogTool, ToolOutcome
from chunkbridge.protocol_specs import meta_tools

__all__ = ["answer"]

_WORDS = re.compile(r"[a-z0-9]+")
#: Tools a search returns when the model names no limit.
SEARCH_LIMIT = 10


def _summary(entry: CatalogTool) -> dict[str, str]:
    first = entry.tool.description.strip().splitlines()
    return {"name": entry.name, "server": entry.server, "summary": first[0] if first else ""}


def _list(tools: Mapping[str, CatalogTool], arguments: dict[str, Any]) -> ToolOutcome:
    server = arguments.get("server")
    listed = [_summary(e) for e in tools.values() if server is None or e.server == server]
    if not listed and server is not None:
        servers = sorted({e.server for e in tools.values()})
        return ToolOutcome(error=f"no server {server!r}; the servers are {', '.join(servers)}")
    return ToolOutcome(output={"tools": listed})


def _search(tools: Mapping[str, CatalogTool], arguments: dict[str, Any]) -> ToolOutcome:
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        return ToolOutcome(error="tools_search needs a query: words to look for")
    limit = arguments.get("limit")
    limit = limit if type(limit) is int and limit > 0 else SEARCH_LIMIT
    words = set(_WORDS.findall(query.lower()))
    scored = []
    for order, entry in enumerate(tools.values()):
        name_words = set(_WORDS.findall(entry.name.lower()))
        text_words = set(_WORDS.findall(entry.tool.description.lower()))
        score = 2 * len(words & name_words) + len(words & text_words)
        if score:
            scored.append((-score, order, entry))
    scored.sort(key=lambda item: item[:2])
    return ToolOutcome(output={"tools": [_summary(entry) for *_, entry in scored[:limit]]})


def _schema(tools: Mapping[str, CatalogTool], arguments: dict[str, Any]) -> ToolOutcome:
    names = arguments.get("names")
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not names:
        return ToolOutcome(error="tools_schema needs names: a list of tool names")
    described: dict[str, Any] = {}
    for name in names[: meta_tools.MAX_BATCH]:
        entry = tools.get(name) if isinstance(name, str) else None
        if entry is None:
            described[str(name)] = {"error": "there is no such tool; see tools_list"}
        else:
            tool = entry.tool
            described[name] = {"description": tool.description, "inputSchema": tool.input_schema}
    return ToolOutcome(output=described)


def answer(name: str, arguments: dict[str, Any], catalog: Mapping[str, CatalogTool]) -> ToolOutcome:
    """The result of the meta-tool ``name`` called with ``arguments``."""
    tools = {n: e for n, e in catalog.items() if e.meta}
    if name == meta_tools.LIST:
        return _list(tools, arguments)
    if name == meta_tools.SEARCH:
        return _search(tools, arguments)
    if name == meta_tools.SCHEMA:
        return _schema(tools, arguments)
    return ToolOutcome(
        error=(
            f"tools_call takes calls: a list of at most {meta_tools.MAX_BATCH} objects "
            '{"tool": <name>, "arguments": {...}}'
        )
    )
