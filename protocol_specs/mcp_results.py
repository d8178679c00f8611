"""An MCP tool's result as the gateway shows it: MCP's own ``CallToolResult`` (protocol
2025-11-25 and later), the output of the tool's part — as the AI SDK's MCP client shows it.

``{"content": [block, …], "structuredContent"?: {...}, "isError"?: bool, "_meta"?: {...}}``,
each block one of:

====================  =======================================================================
``text``              ``{type, text}``
``image``, ``audio``  ``{type, data (base64), mimeType}``
``resource``          ``{type, resource: {uri, mimeType?, text | blob (base64)}}`` (embedded)
``resource_link``     ``{type, uri, name, title?, description?, mimeType?, size?}``
====================  =======================================================================

(every block may carry ``annotations`` and ``_meta``). A result is recognised by its content,
as the AI SDK recognises it (its ``mcpToModelOutput``: a ``content`` list), since the history a
client sends back carries no mark of where an output came from.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["MEDIA_BLOCKS", "is_call_tool_result"]

#: Blocks whose ``data`` is base64 media of their ``mimeType``.
MEDIA_BLOCKS: Final = frozenset({"image", "audio"})


def is_call_tool_result(output: Any) -> bool:
    """Whether a tool part's ``output`` is an MCP ``CallToolResult`` (see the module): a
    ``content`` list of typed blocks."""
    if not isinstance(output, dict) or not isinstance(output.get("content"), list):
        return False
    return all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in output["content"])
