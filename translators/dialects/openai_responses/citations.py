"""OpenAI Responses message metadata and annotations: what a message part's ``providerMetadata``
carries, and the citations of its text (URLs, files, containers) for ai 7's ``text-end``."""

from __future__ import annotations

from typing import Any

from chunkbridge.translators.dialects.openai_responses.tools import PROVIDER

__all__ = ["citation", "document", "message_meta"]


def message_meta(item_id: str, item: dict[str, Any]) -> dict[str, Any]:
    """A message's ``providerMetadata.openai``: its id and its ``phase`` (``commentary`` /
    ``final_answer``, which the API wants back next turn)."""
    meta: dict[str, Any] = {"itemId": item_id}
    if isinstance(item.get("phase"), str):
        meta["phase"] = item["phase"]
    return meta


def document(annotation: dict[str, Any]) -> dict[str, Any]:
    kind = annotation.get("type")
    name = annotation.get("file_id") if kind == "file_path" else annotation.get("filename")
    name = name if isinstance(name, str) and name else str(annotation.get("file_id", "file"))
    meta: dict[str, Any] = {"type": kind, "fileId": annotation.get("file_id")}
    if kind == "container_file_citation":
        meta["containerId"] = annotation.get("container_id")
    else:
        meta["index"] = annotation.get("index")
    return {
        "mediaType": "application/octet-stream" if kind == "file_path" else "text/plain",
        "title": name,
        "filename": name,
        "providerMetadata": {PROVIDER: meta},
    }


def citation(annotation: dict[str, Any]) -> dict[str, Any]:
    """One ``text-end.citations`` item (ai 7), as the AI SDK builds it."""
    if annotation.get("type") == "url_citation":
        source: dict[str, Any] = {
            "type": "source",
            "sourceType": "url",
            "id": annotation.get("url", ""),
            "url": annotation.get("url", ""),
        }
        if isinstance(annotation.get("title"), str):
            source["title"] = annotation["title"]
    else:
        source = {
            "type": "source",
            "sourceType": "document",
            "id": str(annotation.get("file_id", "")),
            **document(annotation),
        }
    out: dict[str, Any] = {"source": source}
    if type(annotation.get("start_index")) is int:
        out["startIndex"] = annotation["start_index"]
        out["endIndex"] = annotation.get("end_index")
    return out
