"""The ``openai-chat`` translator: upstream events → UI chunks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chunkbridge.kit import (
    PROVIDER_ERROR,
    Chunk,
    CloseReason,
    CloseRequest,
    Item,
    MalformedEvent,
    StreamedToolCalls,
    Translator,
    TranslatorOptions,
    content_pieces,
    error_message,
    field_of,
    require_dict,
    require_list,
    sdk_error,
    usage_metadata,
)
from chunkbridge.protocol_specs.openai_chat import (
    FINISH_REASONS,
    SDK_CHUNK_EVENT,
    SDK_HELPER_EVENTS,
    TERMINAL_FRAME,
    USAGE_FIELDS,
)

_CHUNK = "chat.completion.chunk"
_CHUNK_PREFIX = "chat.completion"
_ERROR = "error"


def _is_chunk_kind(kind: Any) -> bool:
    return isinstance(kind, str) and kind.startswith(_CHUNK_PREFIX)


class OpenAIChatTranslator(Translator):
    HANDLERS = {_CHUNK: "_on_chunk", _ERROR: "_on_error"}
    TERMINAL_FRAMES = frozenset({TERMINAL_FRAME})

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        #: Tool calls of the current choice by ``index``, in first-seen order.
        self._tools = StreamedToolCalls(self.ids, self.tool_flags())
        #: Mapped finishReason of the finished choice, waiting for usage / ``[DONE]``.
        self._finish_reason: str | None = None
        #: URLs of the ``citations`` list already shown as sources (Perplexity repeats it).
        self._cited: set[str] = set()

    def event_type(self, event: dict[str, Any]) -> str | None:
        if "error" in event and "choices" not in event:
            return _ERROR
        kind = event.get("object")
        # Azure's prompt-filter chunk has "object": "" (and no choices), Perplexity's last one
        # "chat.completion.done": chunks all the same.
        if kind == _CHUNK or ("choices" in event and (not kind or _is_chunk_kind(kind))):
            return _CHUNK
        return kind if isinstance(kind, str) else None

    def read_object(self, event: Any) -> Sequence[Any] | None:
        """The ``openai`` SDK's chunks (``ChatCompletionChunk``) as their JSON; of its
        ``chat.completions.stream()`` helper's events, the raw chunk each ``chunk`` event
        carries (the others repeat it: skipped)."""
        kind = field_of(event, "type")
        if kind == SDK_CHUNK_EVENT and field_of(event, "chunk") is not None:
            return super().read_object(event.chunk)
        if type(kind) is str and kind in SDK_HELPER_EVENTS:
            self.stats["sdk-helper-event"] += 1
            return []
        return super().read_object(event)

    def read_error(self, error: Exception) -> Sequence[Any] | None:
        """The SDK's error for the provider's error event, as the gateway reads that event."""
        inner = sdk_error(error)
        return None if inner is None else [{"error": inner}]

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        choices = event.get("choices")
        if type(choices) is not list or len(choices) != 1 or self._finish_reason is not None:
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None:
            return None
        delta = choice.get("delta")
        if type(delta) is not dict or choice.get("index", 0) != 0 or event.get("usage"):
            return None
        content = delta.get("content")
        if type(content) is not str or not content or len(delta) != 1 + ("role" in delta):
            return None
        if event.get("object", _CHUNK) != _CHUNK:
            return None
        return content

    def end_of_stream(self, terminal: bool) -> Sequence[Item]:
        if self._finish_reason is not None:
            return [self._finish()]  # usage or [DONE] may never come: the answer is complete
        if terminal:  # [DONE] without a finish_reason: the provider still ended cleanly
            return [*self._tools.complete(), *self.end_parts()]
        return []

    # -- chunks ----------------------------------------------------------------------------------

    def _on_chunk(self, event: dict[str, Any]) -> Sequence[Item]:
        choices = require_list(event.get("choices"), "'choices'")
        usage = event.get("usage")
        out: list[Item] = []
        if not choices and not usage:
            self.stats["no-choices"] += 1  # provider noise (Azure's prompt filter results)
            return out
        out += self.begin(model=event.get("model"))
        citations = event.get("citations")
        if type(citations) is list and len(citations) > len(self._cited):
            out += self._citation_sources(citations)
        for choice in choices:
            require_dict(choice, "a choice")
            if choice.get("index", 0) != 0:
                self.stats["ignored-choice"] += 1
                continue
            out += self._on_choice(choice)
        if not choices:
            self.stats["no-choices"] += 1  # usage-only chunk or provider noise (Azure filters)
        if isinstance(usage, dict) and usage:
            self.metadata["usage"] = usage_metadata(usage, USAGE_FIELDS)
            if self._finish_reason is not None and not choices:
                out.append(self._finish())
        return out

    def _on_choice(self, choice: dict[str, Any]) -> list[Item]:
        delta = require_dict(choice.get("delta") or {}, "'delta'")
        finish_reason = choice.get("finish_reason")
        if finish_reason is not None and not isinstance(finish_reason, str):
            raise MalformedEvent("'finish_reason' must be a string")
        tool_calls = delta.get("tool_calls") or []
        for call_delta in require_list(tool_calls, "'tool_calls'"):
            require_dict(call_delta, "a tool call delta")
            require_dict(call_delta.get("function") or {}, "a tool call's 'function'")
            if not isinstance(call_delta.get("index", 0), int):
                raise MalformedEvent("tool call 'index' must be an integer")
        out: list[Item] = []
        if self._finish_reason is not None and (delta or finish_reason):
            # A further completion in the same stream: the next step of a multi-step agent.
            self._finish_reason = None
            out.append({"type": "start-step"})
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            out += self.reasoning_delta(reasoning)
        content = delta.get("content")
        if isinstance(content, str):  # the common shape, without the general path's cost
            if content:
                out += self.text_delta(content)
        elif content is not None:
            for kind, value in content_pieces(content):
                if kind == "text":
                    out += self.text_delta(value)
                elif kind == "reasoning":
                    out += self.reasoning_delta(value)
                else:
                    out += self.malformed("a content part of an unknown shape", value)
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            out += self._refusal(refusal)
        if tool_calls:
            out += self.end_parts()
            for call_delta in tool_calls:
                out += self._on_tool_delta(call_delta)
        if finish_reason is not None:
            out += self._tools.complete()
            out += self.end_parts()
            out.append({"type": "finish-step"})
            self._finish_reason = FINISH_REASONS.get(finish_reason, "other")
        return out

    def _citation_sources(self, citations: list[Any]) -> list[Chunk]:
        """Perplexity's ``citations`` (the URLs its answer's ``[1]``… refer to, in order): a
        ``source-url`` part for each the first time it is listed."""
        out: list[Chunk] = []
        for url in citations:
            if isinstance(url, str) and url and url not in self._cited:
                self._cited.add(url)
                out.append({"type": "source-url", "sourceId": self.ids("source"), "url": url})
        return out

    def _refusal(self, text: str) -> list[Chunk]:
        out = self.end_parts()
        part_id = self.ids("refusal")
        meta = {"openai": {"refusal": True}}
        out.append({"type": "text-start", "id": part_id, "providerMetadata": meta})
        out.append({"type": "text-delta", "id": part_id, "delta": text})
        out.append({"type": "text-end", "id": part_id})
        return out

    def _on_tool_delta(self, call_delta: dict[str, Any]) -> list[Chunk]:
        function = call_delta.get("function") or {}
        call_id, name, arguments = (
            call_delta.get("id"),
            function.get("name"),
            function.get("arguments"),
        )
        return self._tools.delta(
            call_delta.get("index", len(self._tools)),
            call_id=call_id if isinstance(call_id, str) else None,
            name=name if isinstance(name, str) else None,
            arguments=arguments if isinstance(arguments, str) else None,
        )

    def _finish(self) -> Item:
        return self.finish(self._finish_reason, step=False)[0]  # its finish-step went already

    def _on_error(self, event: dict[str, Any]) -> Sequence[Item]:
        text = error_message(event.get("error"), PROVIDER_ERROR)
        # Half-streamed tool calls are settled by the guard (tool-output-error), not completed.
        return [CloseRequest(CloseReason.UPSTREAM_ERROR, text)]
