"""Anthropic server tools both ways: the names, inputs and outputs the AI SDK's
``@ai-sdk/anthropic`` gives them in the stream, and the blocks a finished one becomes in the next
request's history (the table: ``protocol_specs/anthropic_messages_tools.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chunkbridge.protocol_specs.anthropic_messages_tools import (
    ADVISOR_FIELDS,
    CODE_EXECUTION_TOOLS,
    ERROR_CODE,
    PROGRAMMATIC_CALL,
    RESULT_BLOCKS,
)

__all__ = [
    "api_caller",
    "caller_metadata",
    "code_execution_input",
    "server_tool_blocks",
    "server_tool_name",
    "server_tool_output",
    "web_search_output",
]


def server_tool_name(name: str, names: Mapping[str, str]) -> str:
    """The tool name of a ``server_tool_use`` block: the API's own — the bash and text editor
    commands are the ``code_execution`` tool's (its input then carries ``type: <the block's
    name>``), as the AI SDK shows them — or the app's for it (``names``: ``tool_names``)."""
    if name in CODE_EXECUTION_TOOLS:
        name = "code_execution"
    return names.get(name, name)


def code_execution_input(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A code execution block's complete input as the AI SDK shows it: its kind in ``type`` —
    the block's name for bash and the text editor, ``programmatic-tool-call`` for the
    ``code_execution`` block's own code — so an app tells the kinds apart as the AI SDK's input
    schema for the tool does."""
    if name in CODE_EXECUTION_TOOLS:
        return {"type": name, **tool_input}
    if "code" in tool_input and "type" not in tool_input:
        return {"type": PROGRAMMATIC_CALL, **tool_input}
    return tool_input


def caller_metadata(block: dict[str, Any]) -> dict[str, Any] | None:
    """``{anthropic: {caller}}`` for a block that names who called it, else ``None``."""
    caller = block.get("caller")
    if not isinstance(caller, dict):
        return None
    info: dict[str, Any] = {"type": caller.get("type")}
    if "tool_id" in caller:
        info["toolId"] = caller["tool_id"]
    return {"anthropic": {"caller": info}}


def _advisor(content: dict[str, Any], to_api: bool) -> dict[str, Any]:
    """An advisor result with its fields renamed: to the AI SDK's names, or back to the API's."""
    out = {"type": content.get("type")}
    for api, sdk, unless_null in ADVISOR_FIELDS:
        source, target = (sdk, api) if to_api else (api, sdk)
        if source in content and not (unless_null and content[source] is None):
            out[target] = content[source]
    return out


def web_search_output(content: list[Any]) -> list[dict[str, Any]]:
    """``web_search_tool_result.content`` in the AI SDK's shape (so an app reads one shape)."""
    out = []
    for result in content:
        if not isinstance(result, dict):
            continue
        item: dict[str, Any] = {"url": result.get("url")}
        if result.get("title") is not None:
            item["title"] = result["title"]
        item["pageAge"] = result.get("page_age")
        item["encryptedContent"] = result.get("encrypted_content")
        item["type"] = result.get("type")
        out.append(item)
    return out


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
        return _advisor(content, to_api=False)
    if kind == "code_execution_tool_result" and content.get("type") == "code_execution_result":
        return {
            "type": "code_execution_result",
            "stdout": content.get("stdout"),
            "stderr": content.get("stderr"),
            "return_code": content.get("return_code"),
            "content": inner if inner is not None else [],
        }
    return content


def api_caller(meta: Any) -> dict[str, Any] | None:
    """The reverse of :func:`caller_metadata`: a call's ``callProviderMetadata`` → ``caller``."""
    caller = ((meta or {}).get("anthropic") or {}).get("caller") if isinstance(meta, dict) else None
    if not isinstance(caller, dict) or not isinstance(caller.get("type"), str):
        return None
    if caller["type"] == "direct":
        return {"type": "direct"}
    if isinstance(caller.get("toolId"), str):
        return {"type": caller["type"], "tool_id": caller["toolId"]}
    return None


#: Both tool searches, for a part under one name (``tool_names`` gives both the app's one name;
#: ``tool_search`` is the name chunkbridge gave both before): the input tells them apart.
_TOOL_SEARCHES = frozenset({"tool_search_tool_regex", "tool_search_tool_bm25", "tool_search"})


def _api_name(names: list[str], tool_input: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The API's own name and input of a server tool whose part has the provider's ``names``
    (one, or the tool searches)."""
    name, kind = names[0], tool_input.get("type")
    if name == "code_execution" and kind in CODE_EXECUTION_TOOLS:
        return kind, {k: v for k, v in tool_input.items() if k != "type"}
    if name == "code_execution" and kind == PROGRAMMATIC_CALL:
        return name, {k: v for k, v in tool_input.items() if k != "type"}
    if (len(names) > 1 or name == "tool_search") and _TOOL_SEARCHES.issuperset(names):
        return (
            "tool_search_tool_regex" if "pattern" in tool_input else "tool_search_tool_bm25"
        ), tool_input
    if name == "advisor":
        return name, {}  # the API's advisor input is always empty
    return name, tool_input


def _snake_web_fetch(output: dict[str, Any]) -> dict[str, Any]:
    document = output["content"] if isinstance(output.get("content"), dict) else {}
    source = document["source"] if isinstance(document.get("source"), dict) else {}
    content: dict[str, Any] = {"type": document.get("type") or "document"}
    content["title"] = document.get("title")
    if document.get("citations"):
        content["citations"] = document["citations"]
    content["source"] = {
        "type": source.get("type"),
        "media_type": source.get("mediaType"),
        "data": source.get("data"),
    }
    return {
        "type": "web_fetch_result",
        "url": output.get("url"),
        "retrieved_at": output.get("retrievedAt"),
        "content": content,
    }


def _api_output(kind: str, output: Any) -> Any:
    """The reverse of :func:`server_tool_output`: a result's ``content`` in the API's shape."""
    if kind == "web_search_tool_result" and isinstance(output, list):
        return [
            {
                "type": item.get("type") or "web_search_result",
                "url": item.get("url"),
                "title": item.get("title"),
                "encrypted_content": item.get("encryptedContent"),
                "page_age": item.get("pageAge"),
            }
            for item in output
            if isinstance(item, dict)
        ]
    if kind == "tool_search_tool_result" and isinstance(output, list):
        references = [
            {"type": "tool_reference", "tool_name": ref.get("toolName")}
            for ref in output
            if isinstance(ref, dict)
        ]
        return {"type": "tool_search_tool_search_result", "tool_references": references}
    if not isinstance(output, dict):
        return output
    if kind == "web_fetch_tool_result" and output.get("type") == "web_fetch_result":
        return _snake_web_fetch(output)
    if kind == "advisor_tool_result":
        return _advisor(output, to_api=True)
    return output


def server_tool_blocks(part: Any, names: list[str]) -> list[dict[str, Any]]:
    """A provider-executed tool part (not MCP) → its ``server_tool_use`` and result blocks
    (``names``: the provider's names of the part's tool, ``provider_names``)."""
    tool_input = part.input if isinstance(part.input, dict) else {}
    name, tool_input = _api_name(names, tool_input)
    call: dict[str, Any] = {
        "type": "server_tool_use",
        "id": part.toolCallId,
        "name": name,
        "input": tool_input,
    }
    caller = api_caller(getattr(part, "callProviderMetadata", None))
    if caller is not None:
        call["caller"] = caller
    kind = RESULT_BLOCKS.get(name, f"{name}_tool_result")
    result: dict[str, Any] = {"type": kind, "tool_use_id": part.toolCallId}
    if part.state == "output-available":
        result["content"] = _api_output(kind, part.output)
    elif part.state == "output-error":
        text = part.errorText or ""
        code = text if ERROR_CODE.fullmatch(text) else "unavailable"
        result["content"] = {"type": f"{kind}_error", "error_code": code}
    else:
        return [call]  # waiting on the app's tools: the next response brings the result
    if caller is not None and kind in ("web_fetch_tool_result", "web_search_tool_result"):
        result["caller"] = caller
    return [call, result]
