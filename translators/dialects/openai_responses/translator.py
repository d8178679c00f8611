"""The ``openai-responses`` translator: upstream events → UI chunks."""

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
    StreamedToolCalls,
    Translator,
    TranslatorOptions,
    error_message,
    flat_text_delta,
    require_dict,
    require_str,
    sdk_error,
    usage_metadata,
)
from chunkbridge.protocol_specs.openai_responses import INCOMPLETE_REASONS, USAGE_FIELDS
from chunkbridge.translators.dialects.openai_responses import tools
from chunkbridge.translators.dialects.openai_responses.citations import (
    citation,
    document,
    message_meta,
)
from chunkbridge.translators.dialects.openai_responses.tool_items import (
    STARTED_APP_ITEMS,
    ToolItems,
)
from chunkbridge.translators.dialects.openai_responses.tools import (
    PROVIDER,
    call_meta,
    hosted_id,
    mcp_approval,
    mcp_base,
    mcp_call,
)

_PROGRESS = "progress"
#: What a plain text delta event holds (anything else takes the general path).
_FAST_KEYS = frozenset(
    {
        "type",
        "sequence_number",
        "item_id",
        "output_index",
        "content_index",
        "delta",
        "logprobs",
        "obfuscation",
    }
)
#: Status events of provider-run tools (``response.web_search_call.searching``…): nothing to show.
_PROGRESS_SUFFIXES = (".in_progress", ".searching", ".completed", ".interpreting", ".generating")


#: Items that complete another item's tool call: OpenAI's result of a hosted shell, tool search
#: or program.
_RESULT_ITEMS = frozenset({"shell_call_output", "tool_search_output", "program_output"})


class OpenAIResponsesTranslator(Translator):
    HANDLERS = {
        "response.created": "_on_created",
        "response.output_item.added": "_on_item_added",
        "response.output_item.done": "_on_item_done",
        "response.output_text.delta": "_on_text_delta",
        "response.refusal.delta": "_on_refusal_delta",
        "response.output_text.annotation.added": "_on_annotation",
        "response.reasoning_summary_part.added": "_on_summary_part",
        "response.reasoning_summary_text.delta": "_on_reasoning_delta",
        "response.reasoning_text.delta": "_on_reasoning_delta",
        "response.function_call_arguments.delta": "_on_arguments_delta",
        "response.completed": "_on_finished",
        "response.incomplete": "_on_finished",
        "response.failed": "_on_failed",
        "error": "_on_error",
        # Events whose content the deltas and the item events already carried.
        "response.in_progress": "_on_nothing",
        "response.queued": "_on_nothing",
        "response.content_part.added": "_on_nothing",
        "response.content_part.done": "_on_nothing",
        "response.output_text.done": "_on_nothing",
        "response.refusal.done": "_on_nothing",
        "response.reasoning_summary_text.done": "_on_nothing",
        "response.reasoning_summary_part.done": "_on_nothing",
        "response.reasoning_text.done": "_on_nothing",
        "response.function_call_arguments.done": "_on_nothing",
        # What the item's own ``output_item.done`` carries whole (the code run, the MCP
        # arguments, an app tool's text input, a partial image): one piece there, not many here.
        "response.code_interpreter_call_code.delta": "_on_nothing",
        "response.code_interpreter_call_code.done": "_on_nothing",
        "response.mcp_call_arguments.delta": "_on_nothing",
        "response.mcp_call_arguments.done": "_on_nothing",
        "response.custom_tool_call_input.delta": "_on_nothing",
        "response.custom_tool_call_input.done": "_on_nothing",
        "response.image_generation_call.partial_image": "_on_nothing",
        _PROGRESS: "_on_nothing",
    }

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        self._parts = IndexedParts(self.ids)
        self._tools = StreamedToolCalls(self.ids, self.tool_flags())
        #: item id → its type, for the items under way.
        self._items: dict[str, str] = {}
        #: output index → the id its item was announced with: some hosts (GitHub Copilot)
        #: send another id on every event of the same item.
        self._active: dict[int, str] = {}
        self._declared = getattr(self.options.settings, "tools", None) or {}
        #: reasoning item id → the summary indexes whose part is open.
        self._summaries: dict[str, list[int]] = {}
        self._annotations: dict[str, list[dict[str, Any]]] = {}
        self._url_citations: list[dict[str, Any]] = []
        #: The message item whose text part is :attr:`text_id` (the pipeline's fast path).
        self._fast_item: str | None = None
        #: function calls whose arguments came as deltas (else the item's own ``arguments``).
        self._streamed: set[str] = set()
        names = getattr(self.options.settings, "tool_names", None) or {}
        self._tool_items = ToolItems(self.ids, self.options.dynamic_tools, names)
        self._refusal = False

    def read_error(self, error: Exception) -> Sequence[Any] | None:
        """The SDK's error for the provider's error event, as the gateway reads that event."""
        inner = sdk_error(error)
        return None if inner is None else [{"type": "error", "error": inner}]

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        kind = "response.output_text.delta"
        return flat_text_delta(event, kind, "item_id", self._fast_item, _FAST_KEYS)

    def event_type(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        if not isinstance(kind, str):
            return None
        if kind.endswith(_PROGRESS_SUFFIXES) and "_call" in kind:
            return _PROGRESS
        return kind

    # -- response --------------------------------------------------------------------------------

    def _on_created(self, event: dict[str, Any]) -> Sequence[Item]:
        response = require_dict(event.get("response"), "'response'")
        if isinstance(response.get("id"), str):
            self.metadata["responseId"] = response["id"]
        return self.begin(model=response.get("model"))

    def _on_nothing(self, event: dict[str, Any]) -> Sequence[Item]:
        self.stats["no-content-event"] += 1
        return []

    def _on_finished(self, event: dict[str, Any]) -> Sequence[Item]:
        response = require_dict(event.get("response"), "'response'")
        out: list[Item] = [*self.begin(model=response.get("model"))]
        out += self._parts.end_all()
        out += self._tools.complete()
        if not self._tool_items.search_sources:
            for annotation in self._url_citations:
                out.append(self._url_source(annotation))
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if reason is None:
            finish = "tool-calls" if self._tool_items.function_call else "stop"
            if not self._tool_items.function_call and self._refusal:
                finish = "content-filter"
        else:
            default = "tool-calls" if self._tool_items.function_call else "other"
            finish = INCOMPLETE_REASONS.get(reason, default)
            self.metadata["incompleteReason"] = reason
        out += self.finish(finish, usage=usage_metadata(response.get("usage"), USAGE_FIELDS))
        return out

    def _on_failed(self, event: dict[str, Any]) -> Sequence[Item]:
        response = event.get("response")
        error = response.get("error") if isinstance(response, dict) else None
        return [CloseRequest(CloseReason.UPSTREAM_ERROR, _error_text(error))]

    def _on_error(self, event: dict[str, Any]) -> Sequence[Item]:
        return [CloseRequest(CloseReason.UPSTREAM_ERROR, _error_text(event.get("error", event)))]

    # -- items -----------------------------------------------------------------------------------

    def _item_id(self, event: dict[str, Any], item_id: str) -> str:
        """The id the event's item was announced with (by its ``output_index``)."""
        index = event.get("output_index")
        if type(index) is int:
            return self._active.get(index, item_id)
        return item_id

    def _on_item_added(self, event: dict[str, Any]) -> Sequence[Item]:
        item = require_dict(event.get("item"), "'item'")
        kind = require_str(item, "type")
        item_id = require_str(item, "id")
        if type(event.get("output_index")) is int:
            self._active[event["output_index"]] = item_id
        out: list[Item] = [*self.begin()]
        if kind == "message":
            self._items[item_id] = kind
            meta = {PROVIDER: message_meta(item_id, item)}
            out += self._parts.start(item_id, "text", meta)
            self.text_id, self._fast_item = self._parts.part_id(item_id), item_id
        elif kind == "reasoning":
            self._items[item_id] = kind
            self._summaries[item_id] = [0]
            meta = {PROVIDER: {"itemId": item_id}}
            out += self._parts.start((item_id, 0), "reasoning", meta)
        elif kind == "function_call":
            self._items[item_id] = kind
            arguments = item.get("arguments")
            if isinstance(arguments, str) and arguments:
                self._streamed.add(item_id)
            out += self._tools.delta(
                item_id,
                call_id=require_str(item, "call_id"),
                name=require_str(item, "name"),
                arguments=arguments if isinstance(arguments, str) and arguments else None,
            )
        elif kind in STARTED_APP_ITEMS:
            self._items[item_id] = kind  # the input (not JSON text) when the item is complete
            out.append(
                {"type": "tool-input-start", **self._tool_items.app_tool_base(kind, item_id, item)}
            )
        elif tools.app_run(item, self._declared) or kind in _RESULT_ITEMS:
            self._items[item_id] = kind  # announced when complete: its input is not JSON text
        elif kind in ("program", "compaction"):
            self._items[item_id] = kind  # whole at the item's end
        elif kind == "mcp_approval_request":
            self._items[item_id] = kind  # announced when complete, with its arguments
        elif kind == "mcp_list_tools":
            self.stats["mcp-list-tools"] += 1  # the MCP server's tool list: nothing to show
        elif kind == "mcp_call":
            self._items[item_id] = kind
            out.append(
                {
                    "type": "tool-input-start",
                    **mcp_base(item, self.tool_flags(providerExecuted=True)),
                }
            )
        elif kind.endswith("_call"):
            self._items[item_id] = kind
            flags = self.tool_flags(providerExecuted=True)
            name = self._tool_items.tool_name(kind)
            base = {"toolCallId": hosted_id(item), "toolName": name, **flags}
            out.append({"type": "tool-input-start", **base})
        else:
            return [*out, *self.unknown(kind, item)]
        return out

    def _on_item_done(self, event: dict[str, Any]) -> Sequence[Item]:
        item = require_dict(event.get("item"), "'item'")
        item_id = self._item_id(event, require_str(item, "id"))
        kind = self._items.pop(item_id, None)
        if kind == "message":
            return self._end_message(item_id, item)
        if kind == "reasoning":
            # The key is there even when null (no ``include``): the AI SDK's shape, which apps
            # and convertToModelMessages read.
            encrypted = item.get("encrypted_content")
            meta: dict[str, Any] = {
                "itemId": item_id,
                "reasoningEncryptedContent": encrypted if isinstance(encrypted, str) else None,
            }
            out: list[Chunk] = []
            for index in self._summaries.pop(item_id, []):
                out += self._parts.end((item_id, index), {PROVIDER: meta})
            return out
        if kind == "function_call":
            self._tool_items.function_call = True
            arguments = item.get("arguments")
            out = []
            if isinstance(arguments, str) and item_id not in self._streamed:
                out += self._tools.delta(item_id, arguments=arguments)
            done = self._tools.complete(item_id)
            for chunk in done:
                chunk["providerMetadata"] = {PROVIDER: call_meta(item_id, item)}
            return [*out, *done]
        if kind is None:
            return []
        if tools.app_run(item, self._declared):
            return self._tool_items.app_tool_done(kind, item_id, item)
        if kind in _RESULT_ITEMS:
            return self._tool_items.hosted_result(kind, item_id, item)
        if kind == "program":
            return self._tool_items.hosted_call("program", item["call_id"], item_id, item)
        if kind == "compaction":
            meta = {"type": "compaction", "itemId": item_id}
            meta["encryptedContent"] = item.get("encrypted_content")
            return [
                {
                    "type": "custom",
                    "kind": "openai.compaction",
                    "providerMetadata": {PROVIDER: meta},
                }
            ]
        if kind == "mcp_approval_request":
            return mcp_approval(item, self.tool_flags(providerExecuted=True))
        if kind == "mcp_call":
            return mcp_call(item, self.tool_flags(providerExecuted=True))
        if kind.endswith("_call"):
            return self._tool_items.provider_tool_done(kind, item_id, item)
        return []

    def _end_message(self, item_id: str, item: dict[str, Any]) -> list[Chunk]:
        if item_id == self._fast_item:
            self.text_id = self._fast_item = None
        meta: dict[str, Any] = message_meta(item_id, item)
        annotations = self._annotations.pop(item_id, None)
        if annotations:
            meta["annotations"] = annotations
        out = self._parts.end(item_id, {PROVIDER: meta})
        citations = [citation(a) for a in annotations or () if a.get("type") != "file_path"]
        if out and citations:  # for ai 7 targets; gated away for 5 and 6
            out[-1]["citations"] = citations
        return out

    # -- deltas ----------------------------------------------------------------------------------

    def _on_text_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        item_id = self._item_id(event, require_str(event, "item_id"))
        return self._parts.delta(item_id, "text", require_str(event, "delta"))

    def _on_refusal_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        self._refusal = True
        return self._on_text_delta(event)

    def _on_annotation(self, event: dict[str, Any]) -> Sequence[Item]:
        item_id = self._item_id(event, require_str(event, "item_id"))
        annotation = require_dict(event.get("annotation"), "'annotation'")
        self._annotations.setdefault(item_id, []).append(annotation)
        kind = annotation.get("type")
        if kind == "url_citation":
            self._url_citations.append(annotation)
            return []
        if kind in ("file_citation", "container_file_citation", "file_path"):
            if self._tool_items.file_sources and kind == "file_citation":
                return []
            return [self._document_source(annotation)]
        return []

    def _on_summary_part(self, event: dict[str, Any]) -> Sequence[Item]:
        item_id = self._item_id(event, require_str(event, "item_id"))
        index = event.get("summary_index")
        open_indexes = self._summaries.get(item_id)
        if type(index) is not int or open_indexes is None or index in open_indexes:
            return []
        out: list[Chunk] = []
        for previous in open_indexes:
            out += self._parts.end((item_id, previous), {PROVIDER: {"itemId": item_id}})
        self._summaries[item_id] = [index]
        out += self._parts.start((item_id, index), "reasoning", {PROVIDER: {"itemId": item_id}})
        return out

    def _on_reasoning_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        item_id = self._item_id(event, require_str(event, "item_id"))
        index = event.get("summary_index", 0)
        key = (item_id, index if type(index) is int else 0)
        if self._parts.part_id(key) is None:  # a delta for a summary part never announced
            self._summaries.setdefault(item_id, []).append(key[1])
        return self._parts.delta(key, "reasoning", require_str(event, "delta"))

    def _on_arguments_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        item_id = self._item_id(event, require_str(event, "item_id"))
        self._streamed.add(item_id)
        return self._tools.delta(item_id, arguments=require_str(event, "delta"))

    # -- sources ---------------------------------------------------------------------------------

    def _url_source(self, annotation: dict[str, Any]) -> Chunk:
        chunk: Chunk = {
            "type": "source-url",
            "sourceId": self.ids("source"),
            "url": annotation.get("url", ""),
        }
        if isinstance(annotation.get("title"), str):
            chunk["title"] = annotation["title"]
        return chunk

    def _document_source(self, annotation: dict[str, Any]) -> Chunk:
        return {"type": "source-document", "sourceId": self.ids("source"), **document(annotation)}


def _error_text(error: Any) -> str:
    text = error_message(error, PROVIDER_ERROR)
    code = error.get("code") if isinstance(error, dict) else None
    return f"{code}: {text}" if isinstance(code, str) and code and code not in text else text
