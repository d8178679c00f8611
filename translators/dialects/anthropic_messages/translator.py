"""The ``anthropic-messages`` translator: upstream events → UI chunks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chunkbridge.kit import (
    PROVIDER_ERROR,
    Chunk,
    CloseReason,
    CloseRequest,
    IndexedParts,
    Item,
    MalformedEvent,
    StreamedToolCalls,
    Translator,
    TranslatorOptions,
    error_message,
    field_of,
    json_text,
    optional_str,
    require_dict,
    require_str,
    sdk_error,
    usage_metadata,
)
from chunkbridge.protocol_specs.anthropic_messages import (
    SDK_HELPER_EVENTS,
    STOP_REASONS,
    USAGE_FIELDS,
)
from chunkbridge.protocol_specs.anthropic_messages_tools import CODE_EXECUTION_TOOLS
from chunkbridge.translators.dialects.anthropic_messages import tools

_PROVIDER = "anthropic"


class AnthropicMessagesTranslator(Translator):
    HANDLERS = {
        "message_start": "_on_message_start",
        "content_block_start": "_on_block_start",
        "content_block_delta": "_on_block_delta",
        "content_block_stop": "_on_block_stop",
        "message_delta": "_on_message_delta",
        "message_stop": "_on_message_stop",
        "ping": "_on_ping",
        "error": "_on_error",
    }

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        self._parts = IndexedParts(self.ids)
        self._tools = StreamedToolCalls(self.ids, self.tool_flags())
        self._server_tools = StreamedToolCalls(self.ids, self.tool_flags(providerExecuted=True))
        #: block index → its kind: "text", "thinking", "tool", "server-tool".
        self._blocks: dict[int, str] = {}
        #: block index → what its end chunk carries (signature, citations).
        self._signatures: dict[int, str] = {}
        self._citations: dict[int, list[Any]] = {}
        #: block index → what a tool call's end chunk carries (its caller, the API's name).
        self._call_meta: dict[int, dict[str, Any]] = {}
        #: block index → the code execution block (bash, text editor, its own code) whose kind
        #: its input names as ``type`` once complete, as the AI SDK shows ``code_execution``.
        self._code_inputs: dict[int, str] = {}
        #: The deployment's names for the server tools (``tool_names``).
        self._names: dict[str, str] = getattr(self.options.settings, "tool_names", None) or {}
        self._usage: dict[str, Any] = {}
        self._stop_reason: str | None = None
        #: The block index of the text part in :attr:`text_id` (the pipeline's fast path).
        self._fast_index: int | None = None

    def read_object(self, event: Any) -> Sequence[Any] | None:
        """The ``anthropic`` SDK's raw events as their JSON; the events its
        ``messages.stream()`` helper adds (``text``, ``input_json``…: a raw delta again, with
        the text so far) are skipped."""
        kind = field_of(event, "type")
        if type(kind) is str and kind in SDK_HELPER_EVENTS:
            self.stats["sdk-helper-event"] += 1
            return []
        return super().read_object(event)

    def read_error(self, error: Exception) -> Sequence[Any] | None:
        """The SDK's error for the provider's error event, as the gateway reads that event."""
        inner = sdk_error(error)
        return None if inner is None else [{"type": "error", "error": inner}]

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        index = self._fast_index
        if (
            index is None
            or event.get("index") != index
            or event.get("type") != "content_block_delta"
        ):
            return None
        delta = event.get("delta")
        if type(delta) is not dict or delta.get("type") != "text_delta" or len(delta) != 2:
            return None
        text = delta.get("text")
        return text if type(text) is str and text and type(event["index"]) is int else None

    # -- message ---------------------------------------------------------------------------------

    def _on_message_start(self, event: dict[str, Any]) -> Sequence[Item]:
        message = require_dict(event.get("message"), "'message'")
        usage = message.get("usage")
        if isinstance(usage, dict):
            self._usage.update(usage)
        if isinstance(message.get("stop_reason"), str):
            self._stop_reason = message["stop_reason"]
        out: list[Item] = [*self.begin(model=message.get("model"))]
        # A response may come whole in its message_start (a call a program made): each block
        # as if streamed.
        for index, block in enumerate(message.get("content") or ()):
            if isinstance(block, dict):
                event = {"index": -1 - index, "content_block": block}
                out += self._on_block_start(event)
                out += self._on_block_stop(event)
        return out

    def _on_message_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        delta = require_dict(event.get("delta") or {}, "'delta'")
        reason = optional_str(delta, "stop_reason")
        if reason is not None:
            self._stop_reason = reason
        sequence = delta.get("stop_sequence")
        if isinstance(sequence, str):
            self.metadata["stopSequence"] = sequence
        usage = event.get("usage")
        if isinstance(usage, dict):
            self._usage.update({k: v for k, v in usage.items() if v is not None})
        return []

    def _on_message_stop(self, event: dict[str, Any]) -> Sequence[Item]:
        out: list[Item] = [*self.begin()]
        out += self._parts.end_all()
        out += self._tools.complete()
        out += self._server_tools.complete()
        reason = self._stop_reason
        finish_reason = STOP_REASONS.get(reason, "other") if reason is not None else "other"
        usage = usage_metadata(self._usage, USAGE_FIELDS)
        out += self.finish(finish_reason, usage=usage, stopReason=reason)
        return out

    def _on_ping(self, event: dict[str, Any]) -> Sequence[Item]:
        self.stats["ping"] += 1
        return []

    def _on_error(self, event: dict[str, Any]) -> Sequence[Item]:
        error = event.get("error")
        text = error_message(error, PROVIDER_ERROR)
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            text = f"{error['type']}: {text}"
        return [CloseRequest(CloseReason.UPSTREAM_ERROR, text)]

    # -- content blocks --------------------------------------------------------------------------

    @staticmethod
    def _index(event: dict[str, Any]) -> int:
        index = event.get("index")
        if type(index) is not int:
            raise MalformedEvent("'index' must be an integer")
        return index

    def _on_block_start(self, event: dict[str, Any]) -> Sequence[Item]:
        index = self._index(event)
        block = require_dict(event.get("content_block"), "'content_block'")
        kind = require_str(block, "type")
        out: list[Item] = [*self.begin()]
        if kind == "text":
            self._blocks[index] = "text"
            out += self._parts.start(index, "text")
            self.text_id, self._fast_index = self._parts.part_id(index), index
            if isinstance(block.get("text"), str) and block["text"]:
                out += self._parts.delta(index, "text", block["text"])
        elif kind == "thinking":
            self._blocks[index] = "thinking"
            out += self._parts.start(index, "reasoning")
        elif kind == "compaction":
            # A summary of the conversation so far, which must go back next turn as such.
            self._blocks[index] = "text"
            compaction: dict[str, Any] = {"type": "compaction"}
            if isinstance(block.get("signature"), str):
                compaction["signature"] = block["signature"]
            out += self._parts.start(index, "text", {_PROVIDER: compaction})
            if isinstance(block.get("content"), str) and block["content"]:
                out += self._parts.delta(index, "text", block["content"])
        elif kind == "fallback":
            fallback = {"type": "fallback", "from": block.get("from"), "to": block.get("to")}
            out.append(
                {
                    "type": "custom",
                    "kind": "anthropic.fallback",
                    "providerMetadata": {_PROVIDER: fallback},
                }
            )
        elif kind == "redacted_thinking":
            self._blocks[index] = "thinking"
            meta = {_PROVIDER: {"redactedData": require_str(block, "data")}}
            out += self._parts.start(index, "reasoning", meta)
        elif kind in ("tool_use", "server_tool_use"):
            calls = self._tools if kind == "tool_use" else self._server_tools
            self._blocks[index] = "tool" if kind == "tool_use" else "server-tool"
            name, tool_input = require_str(block, "name"), block.get("input")
            caller = tools.caller_metadata(block)
            if kind == "server_tool_use":
                if name in CODE_EXECUTION_TOOLS or name == "code_execution":
                    self._code_inputs[index] = name  # its input gets the type when complete
                name = tools.server_tool_name(name, self._names)
            if caller:
                self._call_meta[index] = caller
            initial = json_text(tool_input) if tool_input else None
            out += calls.delta(
                index, call_id=require_str(block, "id"), name=name, arguments=initial
            )
        elif kind == "mcp_tool_use":
            out += self._mcp_call(block)
        elif kind.endswith("_tool_result"):
            out += self._tool_result(kind, block)
        else:
            return [*out, *self.unknown(kind, block)]
        return out

    def _on_block_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        index = self._index(event)
        delta = require_dict(event.get("delta"), "'delta'")
        kind = require_str(delta, "type")
        if kind == "text_delta":
            return self._parts.delta(index, "text", require_str(delta, "text"))
        if kind == "thinking_delta":
            return self._parts.delta(index, "reasoning", require_str(delta, "thinking"))
        if kind == "signature_delta":
            self._signatures[index] = self._signatures.get(index, "") + require_str(
                delta, "signature"
            )
            return []
        if kind == "input_json_delta":
            partial = require_str(delta, "partial_json")
            block = self._blocks.get(index)
            if block == "tool":
                return self._tools.delta(index, arguments=partial)
            if block == "server-tool":
                return self._server_tools.delta(index, arguments=partial)
            raise MalformedEvent(f"input_json_delta for block {index}, which is not a tool call")
        if kind == "compaction_delta":
            content = delta.get("content")
            return self._parts.delta(index, "text", content) if isinstance(content, str) else []
        if kind == "citations_delta":
            citation = require_dict(delta.get("citation"), "'citation'")
            self._citations.setdefault(index, []).append(citation)
            return self._citation_source(citation)
        return self.unknown(kind, delta)

    def _on_block_stop(self, event: dict[str, Any]) -> Sequence[Item]:
        index = self._index(event)
        kind = self._blocks.pop(index, None)
        if kind in ("tool", "server-tool"):
            calls = self._tools if kind == "tool" else self._server_tools
            done = calls.complete(index)
            meta = self._call_meta.pop(index, None)
            name = self._code_inputs.pop(index, None)
            for chunk in done:
                if name and isinstance(chunk.get("input"), dict):  # which code execution kind
                    chunk["input"] = tools.code_execution_input(name, chunk["input"])
                if meta and chunk["type"] == "tool-input-available":
                    chunk["providerMetadata"] = meta
            return done
        if kind == "thinking":
            signature = self._signatures.pop(index, None)
            meta = {_PROVIDER: {"signature": signature}} if signature else None
            return self._parts.end(index, meta)
        if kind == "text":
            if index == self._fast_index:
                self.text_id = self._fast_index = None
            citations = self._citations.pop(index, None)
            if not citations:
                return self._parts.end(index)
            out = self._parts.end(index, {_PROVIDER: {"citations": citations}})
            if out:  # for ai 7 targets; gated away for 5 and 6
                out[-1]["citations"] = [_text_citation(c) for c in citations]
            return out
        return []

    # -- provider-executed tools and sources -----------------------------------------------------

    def _tool_result(self, kind: str, block: dict[str, Any]) -> list[Chunk]:
        call_id = require_str(block, "tool_use_id")
        content = block.get("content")
        flags = self.tool_flags(providerExecuted=True)
        if isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
            code = content.get("error_code")
            return [
                {
                    "type": "tool-output-error",
                    "toolCallId": call_id,
                    "errorText": str(code or content["type"]),
                    **flags,
                }
            ]
        out: list[Chunk] = []
        if kind == "web_search_tool_result" and isinstance(content, list):
            output: Any = tools.web_search_output(content)
            for result in output:
                if isinstance(result.get("url"), str):
                    source: Chunk = {
                        "type": "source-url",
                        "sourceId": self.ids("source"),
                        "url": result["url"],
                        "providerMetadata": {_PROVIDER: {"pageAge": result.get("pageAge")}},
                    }
                    if isinstance(result.get("title"), str):
                        source["title"] = result["title"]
                    out.append(source)
            out.insert(
                0,
                {"type": "tool-output-available", "toolCallId": call_id, "output": output, **flags},
            )
            return out
        if kind == "mcp_tool_result":
            flags["dynamic"] = True
            if block.get("is_error") is True:
                text = error_message(content, "The MCP tool failed.")
                if isinstance(content, list):
                    text = "".join(c.get("text", "") for c in content if isinstance(c, dict))
                return [
                    {"type": "tool-output-error", "toolCallId": call_id, "errorText": text, **flags}
                ]
        output = tools.server_tool_output(kind, content)
        return [{"type": "tool-output-available", "toolCallId": call_id, "output": output, **flags}]

    def _mcp_call(self, block: dict[str, Any]) -> list[Chunk]:
        call_id, name = require_str(block, "id"), require_str(block, "name")
        flags = self.tool_flags(providerExecuted=True, dynamic=True)
        meta = {_PROVIDER: {"type": "mcp-tool-use", "serverName": block.get("server_name")}}
        return [
            {"type": "tool-input-start", "toolCallId": call_id, "toolName": name, **flags},
            {
                "type": "tool-input-available",
                "toolCallId": call_id,
                "toolName": name,
                "input": block.get("input") or {},
                "providerMetadata": meta,
                **flags,
            },
        ]

    def _citation_source(self, citation: dict[str, Any]) -> list[Chunk]:
        kind = citation.get("type")
        if kind == "web_search_result_location":
            return []  # the search result it points at is already a source-url part
        if kind == "search_result_location" and isinstance(citation.get("source"), str):
            chunk: Chunk = {
                "type": "source-url",
                "sourceId": self.ids("source"),
                "url": citation["source"],
                "providerMetadata": {_PROVIDER: _citation_metadata(citation)},
            }
            if isinstance(citation.get("title"), str):
                chunk["title"] = citation["title"]
            return [chunk]
        if kind in ("char_location", "page_location", "content_block_location"):
            title = citation.get("document_title")
            if not isinstance(title, str) or not title:
                title = f"Document {citation.get('document_index', 0)}"
            return [
                {
                    "type": "source-document",
                    "sourceId": self.ids("source"),
                    "mediaType": "text/plain" if kind == "char_location" else "application/pdf",
                    "title": title,
                    "providerMetadata": {_PROVIDER: _citation_metadata(citation)},
                }
            ]
        return []


_CITATION_KEYS = {
    "cited_text": "citedText",
    "start_char_index": "startCharIndex",
    "end_char_index": "endCharIndex",
    "start_page_number": "startPageNumber",
    "end_page_number": "endPageNumber",
    "start_block_index": "startBlockIndex",
    "end_block_index": "endBlockIndex",
    "document_index": "documentIndex",
}


def _citation_metadata(citation: dict[str, Any]) -> dict[str, Any]:
    return {ours: citation[theirs] for theirs, ours in _CITATION_KEYS.items() if theirs in citation}


def _text_citation(citation: dict[str, Any]) -> dict[str, Any]:
    """One ``text-end.citations`` item (ai 7): the cited source and text."""
    meta = {_PROVIDER: citation}
    url = citation.get("url") or citation.get("source")
    if isinstance(url, str):
        source: dict[str, Any] = {
            "type": "source",
            "sourceType": "url",
            "id": url,
            "url": url,
            "providerMetadata": meta,
        }
        if isinstance(citation.get("title"), str):
            source["title"] = citation["title"]
    else:
        index = citation.get("document_index", 0)
        title = citation.get("document_title")
        source = {
            "type": "source",
            "sourceType": "document",
            "id": str(citation.get("file_id") or index),
            "mediaType": "text/plain",
            "title": title if isinstance(title, str) and title else f"Document {index}",
            "providerMetadata": meta,
        }
    out: dict[str, Any] = {"source": source}
    if isinstance(citation.get("cited_text"), str):
        out["citedText"] = citation["cited_text"]
    return out
