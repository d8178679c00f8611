"""The meta-tools: four tools that stand for all the tools of the servers in ``mode = "meta"``.

A model offered a hundred tool definitions pays for them in every request's context. In meta
mode it is offered four instead, and finds and calls the real ones through them:

=================  ===========================================================================
:data:`LIST`       ``{server?}`` → the tools by name, with the first line of each description
:data:`SEARCH`     ``{query, limit?}`` → the tools whose name or description match the words
:data:`SCHEMA`     ``{names}`` → each tool's description and input JSON Schema
:data:`CALL`       ``{calls: [{tool, arguments}]}`` → runs the calls (at most :data:`MAX_BATCH`)
=================  ===========================================================================

The app never sees a :data:`CALL` call: each call in its batch is shown as its own tool part,
named after the real tool (``dynamic-tool``, id ``<call id>-<n>``), with its own approval and
its own result — as if the model had called the tools directly. The model is never told of
calls it did not make: each split call's provider metadata names its batch
(:func:`split_metadata`; a client keeps it as the part's ``callProviderMetadata`` and sends it
back, a store keeps it), and a request's history regroups the parts of a batch into the one
:data:`CALL` call the model made, answered by one result (:func:`batch_result`) holding each
call's, in the batch's order. A later direct call of a tool it learned of runs too.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "CALL",
    "DEFINITIONS",
    "LIST",
    "MAX_BATCH",
    "METADATA_KEY",
    "NAMES",
    "SCHEMA",
    "SEARCH",
    "batch_call",
    "batch_id",
    "batch_of",
    "batch_result",
    "split_metadata",
]

LIST: Final = "tools_list"
SEARCH: Final = "tools_search"
SCHEMA: Final = "tools_schema"
CALL: Final = "tools_call"
NAMES: Final = frozenset({LIST, SEARCH, SCHEMA, CALL})

#: Calls in one :data:`CALL` batch at most (a longer batch is an error result).
MAX_BATCH: Final = 16


def batch_id(call_id: str, index: int) -> str:
    """The tool call id of the ``index``-th call of a batch (provider id alphabets allow it)."""
    return f"{call_id}-{index}"


#: The provider-metadata key under which a split call names its batch (the gateway's own).
METADATA_KEY: Final = "chunkbridge"


def split_metadata(batch_meta: Any, call_id: str, index: int) -> dict[str, Any]:
    """The provider metadata of the ``index``-th call split out of batch ``call_id``: the batch
    call's own (a provider's signature of the call the model made) and where it came from."""
    meta = dict(batch_meta) if isinstance(batch_meta, dict) else {}
    meta[METADATA_KEY] = {"batch": call_id, "index": index}
    return meta


def batch_of(call_meta: Any) -> tuple[str, int] | None:
    """The batch (its call id) and position a part's ``callProviderMetadata`` names, if any."""
    ours = call_meta.get(METADATA_KEY) if isinstance(call_meta, dict) else None
    batch = ours.get("batch") if isinstance(ours, dict) else None
    index = ours.get("index") if isinstance(ours, dict) else None
    if isinstance(batch, str) and type(index) is int:
        return batch, index
    return None


def batch_call(calls: list[tuple[str, Any]], call_meta: Any) -> tuple[dict[str, Any], Any]:
    """The :data:`CALL` input the model gave for ``calls`` (tool, arguments), and the
    provider metadata of its call (a member's, without the batch's name)."""
    batch = {"calls": [{"tool": tool, "arguments": arguments} for tool, arguments in calls]}
    meta = {k: v for k, v in call_meta.items() if k != METADATA_KEY}
    return batch, meta or None


def batch_result(calls: list[tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """The one result of a :data:`CALL` batch, an MCP ``CallToolResult`` like each of its
    calls' (``protocol_specs/mcp_results.py``): each call's content blocks, in the batch's
    order, after a text block naming it (``[1] add``) — so an image a call returned reaches the
    model as one."""
    content: list[dict[str, Any]] = []
    for index, (tool, blocks) in enumerate(calls, start=1):
        content += [{"type": "text", "text": f"[{index}] {tool}"}, *blocks]
    return {"content": content}


def _names_schema(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


#: The four tools as the model is offered them (a provider dialect's ``tools`` setting's shape).
DEFINITIONS: Final[dict[str, dict[str, Any]]] = {
    LIST: {
        "description": (
            "List the tools you can use through tools_call, by name with a one-line summary. "
            "Read their input schemas with tools_schema before calling them."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"server": {"type": "string", "description": "only this server's"}},
        },
    },
    SEARCH: {
        "description": "Find tools by words in their name or description.",
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            },
            "required": ["query"],
        },
    },
    SCHEMA: {
        "description": "The description and input JSON Schema of each named tool.",
        "input_schema": {
            "type": "object",
            "properties": {"names": _names_schema("tool names, as tools_list gives them")},
            "required": ["names"],
        },
    },
    CALL: {
        "description": (
            "Call one or more tools, each with arguments matching its input schema. The calls "
            "of one batch run at the same time; each gets its own result."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "calls": {
                    "type": "array",
                    "maxItems": MAX_BATCH,
                    "items": {
                        "type": "object",
                        "properties": {
                            "tool": {"type": "string"},
                            "arguments": {"type": "object"},
                        },
                        "required": ["tool", "arguments"],
                    },
                }
            },
            "required": ["calls"],
        },
    },
}
