"""Anthropic server tools (dialect ``anthropic-messages``): the names, inputs and outputs the AI
SDK's ``@ai-sdk/anthropic`` provider gives them, which apps and ``convertToModelMessages`` read,
and the way back: the blocks a finished server tool becomes in the next request's history.

=================================  ===============================================================
upstream                           UI part
=================================  ===============================================================
``server_tool_use``                the tool ``code_execution``, input ``{type: "<the block's
``bash_code_execution`` /          name>", ...input}``; results as sent
``text_editor_code_execution``
``server_tool_use``                input ``{type: "programmatic-tool-call", code}`` (its own code,
``code_execution``                 which may call the app's tools: its ``caller``)
``web_search_tool_result``         ``[{url, title?, pageAge, encryptedContent, type}]``
``web_fetch_tool_result``          ``{type, url, retrievedAt, content: {type, title, citations,
                                   source: {type, mediaType, data}}}``
``tool_search_tool_result``        ``[{type: "tool_reference", toolName}]``
``advisor_tool_result``            ``{type, text | encryptedContent, stopReason?}``
``code_execution_tool_result``     ``{type, stdout, stderr, return_code, content}`` (``content``
                                   ``[]`` when absent)
a block's ``caller``               ``providerMetadata {anthropic: {caller: {type, toolId?}}}`` on
                                   its call: a call a program made (programmatic tool calling)
=================================  ===============================================================

A server tool is named as the API names it (``web_search``, ``tool_search_tool_regex``…): the
name of its ``server_tool_use`` blocks, which is also its ``name`` in the request's ``tools`` —
the bash and text editor blocks are the ``code_execution`` tool's; the deployment's
``tool_names`` gives a tool the name the app knows it by (the AI SDK shows the key the app
declared it under), in the stream and back.

Back to the API, as the AI SDK sends them: ``server_tool_use`` under the API's own name (code
execution's ``input.type`` as the block name; when the app's names give both tool searches one
name, the variant its input implies) with its ``caller``, then the result block of that tool
with the output in the API's shape; a failed tool's result is ``{type: "<result>_error",
error_code}``. A call still waiting (on the app's tools) goes back without a result: the next
response brings it, and lands on that call's part. The mapping both ways is the dialect's
(``translators/dialects/anthropic_messages/tools.py``).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "ADVISOR_FIELDS",
    "CODE_EXECUTION_TOOLS",
    "ERROR_CODE",
    "PROGRAMMATIC_CALL",
    "RESULT_BLOCKS",
]

#: Server tool names the API streams for the one ``code_execution`` tool the app declares.
CODE_EXECUTION_TOOLS: Final = frozenset({"bash_code_execution", "text_editor_code_execution"})
#: The ``input.type`` of a ``code_execution`` block's own code (a program that may call the
#: app's tools), as the AI SDK's code execution input schema tells its kinds apart.
PROGRAMMATIC_CALL: Final = "programmatic-tool-call"

#: The result block of each server tool, by the API's tool name (others: ``<name>_tool_result``).
RESULT_BLOCKS: Final[dict[str, str]] = {
    "tool_search_tool_regex": "tool_search_tool_result",
    "tool_search_tool_bm25": "tool_search_tool_result",
}

#: What an ``error_code`` looks like; a failure we wrote ourselves (a stream cut off) is sent as
#: ``unavailable``, the API's code for a tool that did not answer.
ERROR_CODE: Final = re.compile(r"[a-z][a-z_]*")


#: An advisor result's fields: the API's name, the AI SDK's, whether a ``null`` is left out.
ADVISOR_FIELDS: Final = (
    ("text", "text", False),
    ("encrypted_content", "encryptedContent", False),
    ("stop_reason", "stopReason", True),
)
