"""An MCP tool's result as a model reads it, before any provider's form: text, and media.

A gateway tool's output is MCP's ``CallToolResult`` (``protocol_specs/mcp_results.py``). Each
provider dialect gives the model its content in the provider's own form — images inside the tool
result where the API takes them — from the pieces :func:`result_pieces` reads, as the AI SDK's MCP
client does (``mcpToModelOutput``), and further: an embedded resource gives its text (a blob of
image or audio by its type, else a note), a resource link its name and URI. What the model gets
of a result is its ``content``; ``structuredContent`` is the app's (a server sends its text too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chunkbridge.kit.events import json_text
from chunkbridge.protocol_specs.mcp_results import MEDIA_BLOCKS, is_call_tool_result

__all__ = ["Media", "media_note", "result_pieces"]


@dataclass(frozen=True, slots=True)
class Media:
    """An image or audio clip of a result: its media type and base64 data."""

    media_type: str
    base64: str

    @property
    def kind(self) -> str:
        """The media type's top-level kind: ``image``, ``audio``…"""
        return self.media_type.partition("/")[0]


def result_pieces(output: Any) -> list[str | Media] | None:
    """The pieces of an MCP result's content, in order (see the module); ``None`` when
    ``output`` is no MCP result (then it is JSON for the model, as any tool's)."""
    if not is_call_tool_result(output):
        return None
    pieces: list[str | Media] = []
    for block in output["content"]:
        kind = block["type"]
        if kind == "text" and isinstance(block.get("text"), str):
            pieces.append(block["text"])
        elif kind in MEDIA_BLOCKS and _media(block.get("mimeType"), block.get("data")):
            pieces.append(Media(block["mimeType"], block["data"]))
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            pieces += _resource(block["resource"])
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            pieces.append(_link(block))
        else:  # what no model form names: its JSON, as the AI SDK passes it
            pieces.append(json_text(block))
    return pieces


def media_note(media: Media, where: str) -> str:
    """The text a model reads instead of media its API does not take in ``where``."""
    size = len(media.base64) * 3 // 4
    return f"[{media.kind} ({media.media_type}, {size} bytes): {where} takes none]"


def _media(media_type: Any, data: Any) -> bool:
    return isinstance(media_type, str) and "/" in media_type and isinstance(data, str)


def _resource(resource: dict[str, Any]) -> list[str | Media]:
    uri, media_type = resource.get("uri"), resource.get("mimeType")
    if isinstance(resource.get("text"), str):
        return [f"Resource {uri}:\n{resource['text']}"]
    blob = resource.get("blob")
    if isinstance(media_type, str) and isinstance(blob, str) and _media(media_type, blob):
        media = Media(media_type, blob)
        if media.kind in ("image", "audio"):
            return [f"Resource {uri}:", media]
    size = len(blob) * 3 // 4 if isinstance(blob, str) else 0
    return [f"Resource {uri} ({media_type or 'binary'}, {size} bytes): not shown."]


def _link(block: dict[str, Any]) -> str:
    name = block.get("title") or block.get("name") or block["uri"]
    text = f"Resource link: {name} <{block['uri']}>"
    if isinstance(block.get("mimeType"), str):
        text += f" ({block['mimeType']})"
    if isinstance(block.get("description"), str):
        text += f" — {block['description']}"
    return text
