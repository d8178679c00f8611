"""The ``openai-responses`` dialect: OpenAI's Responses API, streamed over HTTP SSE.

Events → UI chunks (mapping and reasons: ``protocol_specs/openai_responses.py``), and the
request: ``POST {upstream}/v1/responses`` with ``stream: true``, built from the ``UIMessage``
history, the deployment's model, instructions, tools and options.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import orjson
from pydantic import Field

from chunkbridge.kit import (
    Chunk,
    CloseReason,
    CloseRequest,
    DemoStep,
    Dialect,
    HttpRequest,
    HttpSseContract,
    IndexedParts,
    Item,
    Pause,
    RequestRejected,
    StreamedToolCalls,
    Translator,
    TranslatorOptions,
    TurnInput,
    error_message,
    flat_text_delta,
    require_dict,
    require_str,
    usage_metadata,
)
from chunkbridge.kit.provider import (
    ProviderSettings,
    apply_overrides,
    provider_error,
    start_chunks,
    steps_of,
    system_prompt,
)
from chunkbridge.protocol_specs import openai_responses as spec
from chunkbridge.protocol_specs import openai_responses_tools as tools_spec
from chunkbridge.protocol_specs.openai_responses import INCOMPLETE_REASONS, USAGE_FIELDS

__all__ = ["DIALECT", "OpenAIResponsesSettings", "OpenAIResponsesTranslator"]

_PROVIDER = "openai"
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
#: App-run items announced when they begin (their input when they end), as the AI SDK places
#: them; the others are announced whole at their end.
_STARTED_APP_ITEMS = frozenset({"custom_tool_call", "computer_call", "apply_patch_call"})


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
        #: hosted tool searches whose ``tool_search_output`` (without a call id) is to come.
        self._hosted_searches: list[str] = []
        self._declared = getattr(self.options.settings, "tools", None) or {}
        #: reasoning item id → the summary indexes whose part is open.
        self._summaries: dict[str, list[int]] = {}
        self._annotations: dict[str, list[dict[str, Any]]] = {}
        self._url_citations: list[dict[str, Any]] = []
        #: The message item whose text part is :attr:`text_id` (the pipeline's fast path).
        self._fast_item: str | None = None
        #: function calls whose arguments came as deltas (else the item's own ``arguments``).
        self._streamed: set[str] = set()
        self._search_sources = False
        #: A file search listed its files as sources (file citations then add none).
        self._file_sources = False
        self._retrieved: set[str] = set()
        self._function_call = False
        self._refusal = False
        self._started = False
        self._metadata: dict[str, Any] = {}

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

    def _begin(self, model: Any = None) -> list[Chunk]:
        if self._started:
            return []
        self._started = True
        return start_chunks(self._metadata, model)

    def _on_created(self, event: dict[str, Any]) -> Sequence[Item]:
        response = require_dict(event.get("response"), "'response'")
        if isinstance(response.get("id"), str):
            self._metadata["responseId"] = response["id"]
        return self._begin(response.get("model"))

    def _on_nothing(self, event: dict[str, Any]) -> Sequence[Item]:
        self.stats["no-content-event"] += 1
        return []

    def _on_finished(self, event: dict[str, Any]) -> Sequence[Item]:
        response = require_dict(event.get("response"), "'response'")
        out: list[Item] = [*self._begin(response.get("model"))]
        out += self._parts.end_all()
        out += self._tools.complete()
        if not self._search_sources:
            for annotation in self._url_citations:
                out.append(self._url_source(annotation))
        out.append({"type": "finish-step"})
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if reason is None:
            finish = "tool-calls" if self._function_call else "stop"
            if not self._function_call and self._refusal:
                finish = "content-filter"
        else:
            default = "tool-calls" if self._function_call else "other"
            finish = INCOMPLETE_REASONS.get(reason, default)
            self._metadata["incompleteReason"] = reason
        usage = usage_metadata(response.get("usage"), USAGE_FIELDS)
        if usage:
            self._metadata["usage"] = usage
        out.append(
            CloseRequest(
                CloseReason.COMPLETED, finish_reason=finish, message_metadata=self._metadata
            )
        )
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
        out: list[Item] = [*self._begin()]
        if kind == "message":
            self._items[item_id] = kind
            meta = {_PROVIDER: _message_meta(item_id, item)}
            out += self._parts.start(item_id, "text", meta)
            self.text_id, self._fast_item = self._parts.part_id(item_id), item_id
        elif kind == "reasoning":
            self._items[item_id] = kind
            self._summaries[item_id] = [0]
            meta = {_PROVIDER: {"itemId": item_id}}
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
        elif kind in _STARTED_APP_ITEMS:
            self._items[item_id] = kind  # the input (not JSON text) when the item is complete
            out.append({"type": "tool-input-start", **self._app_tool_base(kind, item_id, item)})
        elif tools_spec.app_run(item, self._declared) or kind in _RESULT_ITEMS:
            self._items[item_id] = kind  # announced when complete: its input is not JSON text
        elif kind in ("program", "compaction"):
            self._items[item_id] = kind  # whole at the item's end
        elif kind == "mcp_approval_request":
            self._items[item_id] = kind  # announced when complete, with its arguments
        elif kind == "mcp_list_tools":
            self.stats["mcp-list-tools"] += 1  # the MCP server's tool list: nothing to show
        elif kind == "mcp_call":
            self._items[item_id] = kind
            out.append({"type": "tool-input-start", **self._mcp_base(item)})
        elif kind.endswith("_call"):
            self._items[item_id] = kind
            flags = self.tool_flags(providerExecuted=True)
            base = {"toolCallId": _hosted_id(item), "toolName": tools_spec.tool_name(kind), **flags}
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
                out += self._parts.end((item_id, index), {_PROVIDER: meta})
            return out
        if kind == "function_call":
            self._function_call = True
            arguments = item.get("arguments")
            out = []
            if isinstance(arguments, str) and item_id not in self._streamed:
                out += self._tools.delta(item_id, arguments=arguments)
            done = self._tools.complete(item_id)
            for chunk in done:
                chunk["providerMetadata"] = {_PROVIDER: _call_meta(item_id, item)}
            return [*out, *done]
        if kind is None:
            return []
        if tools_spec.app_run(item, self._declared):
            return self._app_tool_done(kind, item_id, item)
        if kind in _RESULT_ITEMS:
            return self._hosted_result(kind, item_id, item)
        if kind == "program":
            return self._hosted_call("program", item["call_id"], item_id, item)
        if kind == "compaction":
            meta = {"type": "compaction", "itemId": item_id}
            meta["encryptedContent"] = item.get("encrypted_content")
            return [
                {
                    "type": "custom",
                    "kind": "openai.compaction",
                    "providerMetadata": {_PROVIDER: meta},
                }
            ]
        if kind == "mcp_approval_request":
            return self._mcp_approval(item)
        if kind == "mcp_call":
            return self._mcp_call(item)
        if kind.endswith("_call"):
            return self._provider_tool_done(kind, item_id, item)
        return []

    def _app_tool_done(self, kind: str, item_id: str, item: dict[str, Any]) -> list[Chunk]:
        """A call the app runs whose input is not JSON arguments: a custom tool's free text,
        a computer-use action, a shell command, a patch, a client-side tool search."""
        self._function_call = True
        if kind == "custom_tool_call":
            tool_input = item.get("input")
        elif kind == "computer_call":
            tool_input = item.get("action")
        else:
            tool_input = tools_spec.tool_input(item)
        base = self._app_tool_base(kind, item_id, item)
        meta = {_PROVIDER: {"itemId": item_id}}
        started = [] if kind in _STARTED_APP_ITEMS else [{"type": "tool-input-start", **base}]
        return [
            *started,
            {"type": "tool-input-available", **base, "input": tool_input, "providerMetadata": meta},
        ]

    def _app_tool_base(self, kind: str, item_id: str, item: dict[str, Any]) -> dict[str, Any]:
        name = item.get("name") if kind == "custom_tool_call" else tools_spec.tool_name(kind)
        return {
            "toolCallId": item.get("call_id") or item_id,
            "toolName": name if isinstance(name, str) and name else kind,
            **self.tool_flags(),
        }

    def _hosted_call(
        self, kind: str, call_id: str, item_id: str, item: dict[str, Any], start: bool = True
    ) -> list[Chunk]:
        """A call OpenAI runs whose result is another item (a program, a hosted shell or tool
        search): its input now, its output when the result item comes."""
        flags = self.tool_flags(providerExecuted=True)
        base = {"toolCallId": call_id, "toolName": tools_spec.tool_name(kind), **flags}
        meta = {_PROVIDER: {"itemId": item_id}}
        out: list[Chunk] = [{"type": "tool-input-start", **base}] if start else []
        tool_input = tools_spec.tool_input(item)
        out.append(
            {"type": "tool-input-available", **base, "input": tool_input, "providerMetadata": meta}
        )
        return out

    def _hosted_result(self, kind: str, item_id: str, item: dict[str, Any]) -> list[Chunk]:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) and kind == "tool_search_output" and self._hosted_searches:
            call_id = self._hosted_searches.pop(0)
        chunk: Chunk = {
            "type": "tool-output-available",
            "toolCallId": call_id if isinstance(call_id, str) else item_id,
            "output": tools_spec.tool_output(item),
            **self.tool_flags(providerExecuted=True),
        }
        if kind != "shell_call_output":  # the shell's output is its call's (the AI SDK's shape)
            chunk["providerMetadata"] = {_PROVIDER: {"itemId": item_id}}
        return [chunk]

    def _mcp_base(self, item: dict[str, Any]) -> dict[str, Any]:
        """A remote MCP tool's part, as the AI SDK names it: ``mcp.<name>``, dynamic, run by the
        provider; a call made after an approval continues the approval's part (its id)."""
        call_id = item.get("approval_request_id") or item["id"]
        name = item.get("name") if isinstance(item.get("name"), str) else "unknown"
        flags = self.tool_flags(providerExecuted=True)
        return {"toolCallId": call_id, "toolName": f"mcp.{name}", **flags, "dynamic": True}

    def _mcp_input(self, item: dict[str, Any]) -> Any:
        arguments = item.get("arguments")
        try:
            return orjson.loads(arguments) if isinstance(arguments, str) else arguments
        except orjson.JSONDecodeError:
            return arguments

    def _mcp_approval(self, item: dict[str, Any]) -> list[Chunk]:
        """The provider asks before it calls a remote MCP tool (``require_approval``)."""
        base = self._mcp_base(item)
        approval_id = base["toolCallId"]  # the call's id is the approval's
        return [
            {"type": "tool-input-start", **base},
            {"type": "tool-input-available", **base, "input": self._mcp_input(item)},
            {"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": approval_id},
        ]

    def _mcp_call(self, item: dict[str, Any]) -> list[Chunk]:
        base = self._mcp_base(item)
        output: dict[str, Any] = {
            "type": "call",
            "serverLabel": item.get("server_label"),
            "name": item.get("name"),
            "arguments": item.get("arguments"),
        }
        for key in ("output", "error"):
            if item.get(key) is not None:
                output[key] = item[key]
        meta = {_PROVIDER: {"itemId": item["id"]}}
        flags = {k: v for k, v in base.items() if k != "toolName"}  # toolCallId included
        return [
            {"type": "tool-input-available", **base, "input": self._mcp_input(item)},
            {"type": "tool-output-available", **flags, "output": output, "providerMetadata": meta},
        ]

    def _end_message(self, item_id: str, item: dict[str, Any]) -> list[Chunk]:
        if item_id == self._fast_item:
            self.text_id = self._fast_item = None
        meta: dict[str, Any] = _message_meta(item_id, item)
        annotations = self._annotations.pop(item_id, None)
        if annotations:
            meta["annotations"] = annotations
        out = self._parts.end(item_id, {_PROVIDER: meta})
        citations = [_citation(a) for a in annotations or () if a.get("type") != "file_path"]
        if out and citations:  # for ai 7 targets; gated away for 5 and 6
            out[-1]["citations"] = citations
        return out

    def _provider_tool_done(self, kind: str, item_id: str, item: dict[str, Any]) -> list[Chunk]:
        flags = self.tool_flags(providerExecuted=True)
        call_id = _hosted_id(item, item_id)
        if kind in ("shell_call", "tool_search_call"):  # the result is an item of its own
            if kind == "tool_search_call":
                self._hosted_searches.append(call_id)
            return self._hosted_call(kind, call_id, item_id, item, start=False)
        status = item.get("status")
        finished = status in (None, "completed") or item.get("result") is not None
        base = {"toolCallId": call_id, "toolName": tools_spec.tool_name(kind), **flags}
        out: list[Chunk] = [
            {"type": "tool-input-available", **base, "input": tools_spec.tool_input(item)}
        ]
        if not finished:  # an image still "generating" with its image attached is finished
            text = f"{kind} ended with status {status}"
            return [*out, {"type": "tool-output-error", **base, "errorText": text}]
        if kind == "web_search_call":
            action = item.get("action")
            output: Any = spec.web_search_output(action)
            out.append(
                {"type": "tool-output-available", "toolCallId": call_id, "output": output, **flags}
            )
            sources = action.get("sources") if isinstance(action, dict) else None
            for source in sources if isinstance(sources, list) else ():
                if isinstance(source, dict) and isinstance(source.get("url"), str):
                    self._search_sources = True
                    out.append(
                        {"type": "source-url", "sourceId": self.ids("source"), "url": source["url"]}
                    )
            return out
        output = tools_spec.tool_output(item)
        out.append(
            {"type": "tool-output-available", "toolCallId": call_id, "output": output, **flags}
        )
        if kind == "file_search_call":
            out += self._file_search_sources(item)
        return out

    def _file_search_sources(self, item: dict[str, Any]) -> list[Chunk]:
        """A document source per file the search retrieved (once per file), as the AI SDK
        lists them; file citations in the text then add none."""
        out: list[Chunk] = []
        for result in item.get("results") or ():
            file_id = result.get("file_id") if isinstance(result, dict) else None
            if not isinstance(file_id, str):
                continue
            self._file_sources = True
            if file_id in self._retrieved:
                continue
            self._retrieved.add(file_id)
            name = result.get("filename") if isinstance(result.get("filename"), str) else file_id
            meta = {"type": "file_search", "fileId": file_id}
            out.append(
                {
                    "type": "source-document",
                    "sourceId": self.ids("source"),
                    "mediaType": "text/plain",
                    "title": name,
                    "filename": name,
                    "providerMetadata": {_PROVIDER: meta},
                }
            )
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
            if self._file_sources and kind == "file_citation":
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
            out += self._parts.end((item_id, previous), {_PROVIDER: {"itemId": item_id}})
        self._summaries[item_id] = [index]
        out += self._parts.start((item_id, index), "reasoning", {_PROVIDER: {"itemId": item_id}})
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
        return {"type": "source-document", "sourceId": self.ids("source"), **_document(annotation)}


def _hosted_id(item: dict[str, Any], item_id: str | None = None) -> str:
    """The tool call id of a hosted call: the shell's ``call_id`` (its output item names it),
    else the item id."""
    call_id = item.get("call_id")
    if item.get("type") == "shell_call" and isinstance(call_id, str):
        return call_id
    return item_id or item["id"]


def _message_meta(item_id: str, item: dict[str, Any]) -> dict[str, Any]:
    """A message's ``providerMetadata.openai``: its id and its ``phase`` (``commentary`` /
    ``final_answer``, which the API wants back next turn)."""
    meta: dict[str, Any] = {"itemId": item_id}
    if isinstance(item.get("phase"), str):
        meta["phase"] = item["phase"]
    return meta


def _call_meta(item_id: str, item: dict[str, Any]) -> dict[str, Any]:
    """A function call's ``providerMetadata.openai``: its id, the ``namespace`` of a tool found
    by tool search, the ``caller`` of a call a program made."""
    meta: dict[str, Any] = {"itemId": item_id}
    if isinstance(item.get("namespace"), str):
        meta["namespace"] = item["namespace"]
    caller = item.get("caller")
    if isinstance(caller, dict):
        if caller.get("type") == "program":
            caller = {"type": "program", "callerId": caller.get("caller_id")}
        meta["caller"] = caller
    return meta


def _document(annotation: dict[str, Any]) -> dict[str, Any]:
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
        "providerMetadata": {_PROVIDER: meta},
    }


def _citation(annotation: dict[str, Any]) -> dict[str, Any]:
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
            **_document(annotation),
        }
    out: dict[str, Any] = {"source": source}
    if type(annotation.get("start_index")) is int:
        out["startIndex"] = annotation["start_index"]
        out["endIndex"] = annotation.get("end_index")
    return out


def _error_text(error: Any) -> str:
    text = error_message(error, "The model provider reported an error.")
    code = error.get("code") if isinstance(error, dict) else None
    return f"{code}: {text}" if isinstance(code, str) and code and code not in text else text


# -- the upstream contract -----------------------------------------------------------------------


class OpenAIResponsesSettings(ProviderSettings):
    """Settings of the ``openai-responses`` dialect (``[openai-responses]`` in TOML)."""

    model: str = Field("gpt-5-mini", description="the model to request")
    path: str = Field(spec.DEFAULT_PATH, description="path of the Responses endpoint")
    organization: str | None = Field(None, description="the OpenAI-Organization header")


def _tools(settings: OpenAIResponsesSettings) -> list[dict[str, Any]]:
    tools = []
    for name, definition in settings.tools.items():
        if "type" in definition:  # a built-in tool (web_search, file_search…), sent as configured
            built_in = dict(definition)
            if built_in["type"] in ("custom", "function"):
                built_in.setdefault("name", name)  # named by its key, as other tools are
            tools.append(built_in)
            continue
        tool: dict[str, Any] = {
            "type": "function",
            "name": name,
            "parameters": definition.get("input_schema") or {"type": "object"},
        }
        if definition.get("description"):
            tool["description"] = definition["description"]
        tools.append(tool)
    return tools


def request_body(turn: TurnInput) -> dict[str, Any]:
    settings: OpenAIResponsesSettings = turn.settings or OpenAIResponsesSettings()
    messages = turn.request.messages
    answers = {a.tool_call_id: a for a in turn.approval_answers}
    items = spec.input_from_ui(messages, steps_of, answers, settings.tools)
    if not items:
        raise RequestRejected("The request has no message to send.")
    body: dict[str, Any] = {"model": settings.model, "stream": True}
    instructions = system_prompt(settings, messages)
    if instructions:
        body["instructions"] = instructions
    body["input"] = items
    if settings.max_output_tokens:
        body["max_output_tokens"] = settings.max_output_tokens
    tools = _tools(settings)
    if tools:
        body["tools"] = tools
    body.update(settings.options)
    return apply_overrides(body, turn, settings.body_overrides)


def _request(turn: TurnInput) -> HttpRequest:
    settings: OpenAIResponsesSettings = turn.settings or OpenAIResponsesSettings()
    headers = {}
    if settings.api_key is not None:
        headers["authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
    if settings.organization:
        headers["openai-organization"] = settings.organization
    return HttpRequest(path=settings.path, body=request_body(turn), headers=headers)


def _error_frame(status: int, body: bytes) -> str:
    """An ``error`` event for a refused request (translated like one mid-stream)."""
    return orjson.dumps({"type": "error", "error": provider_error(status, body)}).decode()


# -- the demo ------------------------------------------------------------------------------------


def _demo(request: dict[str, Any], turn: int, aborted: Any) -> Iterator[DemoStep]:
    """A reasoning summary and a short answer; a function call when asked for the weather."""
    text = ""
    for item in reversed(request.get("input") or []):
        if item.get("role") == "user":
            text = " ".join(c.get("text", "") for c in item.get("content", []) if "text" in c)
            break
    rid, model = f"resp_demo_{turn}", request.get("model", "demo")
    response = {"id": rid, "object": "response", "status": "in_progress", "model": model}
    yield {"type": "response.created", "response": response}
    reasoning = {"id": f"rs_demo_{turn}", "type": "reasoning", "summary": []}
    yield {"type": "response.output_item.added", "output_index": 0, "item": reasoning}
    for piece in ("**Reading the question**\n\n", f"It has {len(text)} characters."):
        yield Pause(0.05)
        yield {
            "type": "response.reasoning_summary_text.delta",
            "item_id": reasoning["id"],
            "output_index": 0,
            "summary_index": 0,
            "delta": piece,
        }
    yield {"type": "response.output_item.done", "output_index": 0, "item": reasoning}
    message = {"id": f"msg_demo_{turn}", "type": "message", "role": "assistant", "content": []}
    yield {"type": "response.output_item.added", "output_index": 1, "item": message}
    words = f"You said: {text}. This answer streams from the demo OpenAI upstream.".split(" ")
    for word in words:
        if aborted():
            return
        yield Pause(0.04)
        yield {
            "type": "response.output_text.delta",
            "item_id": message["id"],
            "output_index": 1,
            "content_index": 0,
            "delta": word + " ",
        }
    yield {"type": "response.output_item.done", "output_index": 1, "item": message}
    if "weather" in text.lower():
        call = {
            "id": f"fc_demo_{turn}",
            "type": "function_call",
            "call_id": f"call_demo_{turn}",
            "name": "get_weather",
            "arguments": "",
        }
        yield {"type": "response.output_item.added", "output_index": 2, "item": call}
        for piece in ('{"city": ', '"Paris"}'):
            yield Pause(0.05)
            yield {
                "type": "response.function_call_arguments.delta",
                "item_id": call["id"],
                "output_index": 2,
                "delta": piece,
            }
        yield {
            "type": "response.output_item.done",
            "output_index": 2,
            "item": {**call, "arguments": '{"city": "Paris"}'},
        }
    usage = {
        "input_tokens": 12 + len(text) // 4,
        "output_tokens": len(words) + 20,
        "total_tokens": 32 + len(text) // 4 + len(words),
    }
    yield {
        "type": "response.completed",
        "response": {**response, "status": "completed", "usage": usage},
    }


DIALECT = Dialect(
    name="openai-responses",
    summary="OpenAI Responses API streams (HTTP SSE: POST /v1/responses)",
    translator=OpenAIResponsesTranslator,
    http=HttpSseContract(request=_request, error_frame=_error_frame),
    settings=OpenAIResponsesSettings,
    spec=spec.__name__,
    demo=_demo,
)
