"""What an MCP server's answer to a call becomes: the :class:`~chunkbridge.gateway.tools.catalog.
ToolOutcome` the loop shows and gives the model (no I/O: the ``mcp`` SDK's result types in)."""

from __future__ import annotations

from typing import Any

import orjson

from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools.catalog import ToolOutcome, ToolQuestion, capped

__all__ = ["outcome_of"]


def outcome_of(tool: str, result: Any, settings: ToolServerSettings) -> ToolOutcome:
    """A ``CallToolResult`` — or a 2026-07-28 ``InputRequiredResult`` — as the call's outcome."""
    from mcp.types import InputRequiredResult

    if isinstance(result, InputRequiredResult):
        return _question(tool, result)
    texts = [getattr(c, "text", None) or f"[{c.type}]" for c in result.content]
    if result.is_error:
        error = "\n".join(texts) or f"{tool} failed"
        return ToolOutcome(error=capped(error, settings.max_output_bytes))
    structured = result.structured_content
    if structured is not None and len(orjson.dumps(structured)) <= settings.max_output_bytes:
        return ToolOutcome(output=structured)
    return ToolOutcome(output=capped("\n".join(texts), settings.max_output_bytes))


def _question(tool: str, result: Any) -> ToolOutcome:
    """The first form elicitation of an ``InputRequiredResult`` (the server asks the rest, if
    any, when called again); what the gateway cannot ask — sampling, roots, a URL to open —
    is an error for the model."""
    from mcp.types import ElicitRequestFormParams

    requests = result.input_requests or {}
    for key, request in requests.items():
        params = getattr(request, "params", None)
        if isinstance(params, ElicitRequestFormParams):
            schema = dict(params.requested_schema)
            return ToolOutcome(asks=ToolQuestion(key, params.message, schema, result.request_state))
    asked = ", ".join(sorted({getattr(r, "method", "?") for r in requests.values()})) or "nothing"
    return ToolOutcome(error=f"{tool} asked for {asked}, which the gateway does not provide")
