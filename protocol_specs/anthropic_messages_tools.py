"""Anthropic server tools (dialect ``anthropic-messages``): the names, inputs and outputs the AI
SDK's ``@ai-sdk/anthropic`` provider gives them, which apps and ``convertToModelMessages`` read.

=================================  ===============================================================
upstream                           UI part
=================================  ===============================================================
``server_tool_use``                the tool ``code_execution`` (the tool the app declared), input
``bash_code_execution`` /          ``{type: "<the block's name>", ...input}``; results as sent
``text_editor_code_execution``
``web_fetch_tool_result``          ``{type, url, retrievedAt, content: {type, title, citations,
                                   source: {type, mediaType, data}}}``
``tool_search_tool_result``        ``[{type: "tool_reference", toolName}]``
``advisor_tool_result``            ``{type, text | encryptedContent, stopReason?}``
``code_execution_tool_result``     ``{type, stdout, stderr, return_code, content}`` (``content``
                                   ``[]`` when absent)
a block's ``caller``               ``providerMetadata {anthropic: {caller: {type, toolId?}}}`` on
                                   its call: a call a program made (programmatic tool calling)
=================================  ===============================================================
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["CODE_EXECUTION_TOOLS", "caller_metadata", "server_tool_name", "server_tool_output"]

#: Server tool names the API streams for the one ``code_execution`` tool the app declares.
CODE_EXECUTION_TOOLS: Final = frozenset({"bash_code_execution", "text_editor_code_execution"})


def server_tool_name(name: str) -> str:
    """The tool name of a ``server_tool_use`` block, as the AI SDK shows it (a code execution
    tool's input then carries ``type: <the block's name>``)."""
    if name in CODE_EXECUTION_TOOLS:
        return "code_execution"
    if name in ("tool_search_tool_regex", "tool_search_tool_bm25"):
        return "tool_search"
    return name


def caller_metadata(block: dict[str, Any]) -> dict[str, Any] | None:
    """``{anthropic: {caller}}`` for a block that names who called it, else ``None``."""
    caller = block.get("caller")
    if not isinstance(caller, dict):
        return None
    info: dict[str, Any] = {"type": caller.get("type")}
    if "tool_id" in caller:
        info["toolId"] = caller["tool_id"]
    return {"anthropic": {"caller": info}}


def server_tool_output(kind: str, content: Any) -> Any:
    """A server tool result's ``content`` in the AI SDK's output shape."""
    if not isinstance(content, dict):
        return content
    inner = content.get("content")
    if kind == "web_fetch_tool_result" and content.get("type") == "web_fetch_result":
        document: dict[str, Any] = inner if isinstance(inner, dict) else {}
        source: dict[str, Any] = (
            document["source"] if isinstance(document.get("source"), dict) else {}
        )
        return {
            "type": "web_fetch_result",
            "url": content.get("url"),
            "retrievedAt": content.get("retrieved_at"),
            "content": {
                "type": document.get("type"),
                "title": document.get("title"),
                **({"citations": document["citations"]} if document.get("citations") else {}),
                "source": {
                    "type": source.get("type"),
                    "mediaType": source.get("media_type"),
                    "data": source.get("data"),
                },
            },
        }
    if kind == "tool_search_tool_result" and isinstance(content.get("tool_references"), list):
        return [
            {"type": "tool_reference", "toolName": ref.get("tool_name")}
            for ref in content["tool_references"]
            if isinstance(ref, dict)
        ]
    if kind == "advisor_tool_result":
        out = {"type": content.get("type")}
        if "text" in content:
            out["text"] = content["text"]
        if "encrypted_content" in content:
            out["encryptedContent"] = content["encrypted_content"]
        if content.get("stop_reason") is not None:
            out["stopReason"] = content["stop_reason"]
        return out
    if kind == "code_execution_tool_result" and content.get("type") == "code_execution_result":
        return {
            "type": "code_execution_result",
            "stdout": content.get("stdout"),
            "stderr": content.get("stderr"),
            "return_code": content.get("return_code"),
            "content": inner if inner is not None else [],
        }
    return content
