"""What an MCP server's answer to a call becomes: the :class:`~chunkbridge.gateway.tools.catalog.
ToolOutcome` the loop shows and gives the model (no I/O: the ``mcp`` SDK's result types in).

A result is kept as MCP defines it (``protocol_specs/mcp_results.py``): its content blocks —
text, images, audio, embedded resources, resource links — its ``structuredContent``, as the AI
SDK's MCP client shows it; each provider dialect gives the model the content in its own form.
Two budgets bound it: the server's ``max_output_bytes`` the text (text blocks and resources'
text, in order; past it, cut with a note) and the structured content (past it, left out with a
note), ``max_media_bytes`` the base64 data of images, audio and resource blobs (a block past it
becomes a note). A result the server marks ``isError`` is the call's error, its text the
message the model reads.
"""

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
    # what the server sent (not the SDK's defaults), with isError as the AI SDK's client reads it
    output = result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    output.setdefault("isError", False)
    if result.is_error:
        texts = [b.get("text") or f"[{b['type']}]" for b in output.get("content", [])]
        error = "\n".join(texts) or f"{tool} failed"
        return ToolOutcome(error=capped(error, settings.max_output_bytes))
    budget = _Budget(settings.max_output_bytes, settings.max_media_bytes)
    output["content"] = [budget.block(block) for block in output.get("content", [])]
    structured = output.get("structuredContent")
    if structured is not None and len(orjson.dumps(structured)) > budget.text:
        del output["structuredContent"]
        note = f"[structured content left out: more than max_output_bytes ({budget.limit})]"
        output["content"].append({"type": "text", "text": note})
    return ToolOutcome(output=output)


class _Budget:
    """What is left of a result's two budgets as its blocks are read in order."""

    def __init__(self, text: int, media: int) -> None:
        self.limit = text
        self.text = text
        self.media = media
        self.media_limit = media

    def block(self, block: dict[str, Any]) -> dict[str, Any]:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            return {**block, "text": self._cut(block["text"])}
        if kind in ("image", "audio") and isinstance(block.get("data"), str):
            return self._media(block, block["data"], block.get("mimeType"))
        resource = block.get("resource") if kind == "resource" else None
        if isinstance(resource, dict) and isinstance(resource.get("text"), str):
            return {**block, "resource": {**resource, "text": self._cut(resource["text"])}}
        if isinstance(resource, dict) and isinstance(resource.get("blob"), str):
            return self._media(block, resource["blob"], resource.get("mimeType"))
        return block

    def _cut(self, text: str) -> str:
        kept = capped(text, max(self.text, 0))
        self.text -= len(text.encode("utf-8"))
        return kept

    def _media(self, block: dict[str, Any], data: str, media_type: Any) -> dict[str, Any]:
        if len(data) <= self.media:
            self.media -= len(data)
            return block
        note = (
            f"[{media_type or 'binary data'} of {len(data) * 3 // 4} bytes left out: more than "
            f"max_media_bytes ({self.media_limit}) in one result]"
        )
        return {"type": "text", "text": note}


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
