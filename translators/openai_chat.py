"""OpenAI chat chunks → UI chunks. Mapping and reasons: ``protocol_specs/openai_chat.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from protocol_specs.openai_chat import FINISH_REASONS, TERMINAL_FRAME, usage_metadata
from translators.base import (
    Chunk,
    MalformedEvent,
    Translator,
    TranslatorOptions,
    close_request,
    error_message,
)
from translators.guard import CloseReason

__all__ = ["OpenAIChatTranslator"]

_CHUNK = "chat.completion.chunk"
_ERROR = "error"


@dataclass(slots=True)
class _ToolCall:
    id: str | None = None
    name: str | None = None
    #: ``tool-input-start`` sent (needs the name).
    started: bool = False
    #: Argument text received; ``flushed`` characters of it were sent as deltas.
    arguments: list[str] = field(default_factory=list)
    flushed: int = 0


class OpenAIChatTranslator(Translator):
    dialect = "openai-chat"
    summary = "OpenAI-compatible chat.completion.chunk streams (HTTP SSE or WebSocket)"
    HANDLERS = {_CHUNK: "_on_chunk", _ERROR: "_on_error"}
    TERMINAL_FRAMES = frozenset({TERMINAL_FRAME})

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        self._started = False
        #: Tool calls of the current choice by ``index``, in first-seen order.
        self._calls: dict[int, _ToolCall] = {}
        #: Mapped finishReason of the finished choice, waiting for usage / ``[DONE]``.
        self._finish_reason: str | None = None
        self._metadata: dict[str, Any] = {}

    def event_type(self, event: dict[str, Any]) -> str | None:
        if "error" in event and "choices" not in event:
            return _ERROR
        kind = event.get("object")
        if kind == _CHUNK or (kind is None and "choices" in event):
            return _CHUNK
        return kind if isinstance(kind, str) else None

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
        if event.get("object", "chat.completion.chunk") != "chat.completion.chunk":
            return None
        return content

    def feed_terminal_frame(self, frame: str) -> list[Chunk]:
        return self.close(CloseReason.COMPLETED)

    def close(
        self, reason: CloseReason = CloseReason.UPSTREAM_CLOSED, error_text: str | None = None
    ) -> list[Chunk]:
        out: list[Chunk] = []
        if self._finish_reason is not None and not self.done:
            self.pending_close = self._finish()
        elif reason is CloseReason.COMPLETED and not self.done:
            # [DONE] without a finish_reason: the provider still ended the stream cleanly.
            out = self._guarded([*self._complete_tools(), *self.end_parts()])
        return out + super().close(reason, error_text)

    # -- chunks ----------------------------------------------------------------------------------

    def _on_chunk(self, event: dict[str, Any]) -> list[Chunk]:
        out: list[Chunk] = []
        choices = event.get("choices")
        if not isinstance(choices, list):
            raise MalformedEvent("'choices' must be a list")
        usage = event.get("usage")
        if not self._started:
            self._started = True
            start: Chunk = {"type": "start"}
            if isinstance(event.get("model"), str):
                self._metadata["model"] = event["model"]
                start["messageMetadata"] = {"model": event["model"]}
            out += (start, {"type": "start-step"})
        for choice in choices:
            if not isinstance(choice, dict):
                raise MalformedEvent("a choice must be an object")
            if choice.get("index", 0) != 0:
                self.stats["ignored-choice"] += 1
                continue
            out += self._on_choice(choice)
        if not choices:
            self.stats["no-choices"] += 1  # usage-only chunk or provider noise (Azure filters)
        if isinstance(usage, dict) and usage:
            self._metadata["usage"] = usage_metadata(usage)
            if self._finish_reason is not None and not choices:
                out.append(self._finish())
        return out

    def _on_choice(self, choice: dict[str, Any]) -> list[Chunk]:
        out: list[Chunk] = []
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise MalformedEvent("'delta' must be an object")
        if self._finish_reason is not None and (delta or choice.get("finish_reason")):
            # A further completion in the same stream: the next step of a multi-step agent.
            self._finish_reason = None
            out.append({"type": "start-step"})
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            out += self.reasoning_delta(reasoning)
        content = delta.get("content")
        if isinstance(content, str) and content:
            out += self.text_delta(content)
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            out += self._refusal(refusal)
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            if not isinstance(tool_calls, list):
                raise MalformedEvent("'tool_calls' must be a list")
            out += self.end_parts()
            for call_delta in tool_calls:
                out += self._on_tool_delta(call_delta)
        finish_reason = choice.get("finish_reason")
        if finish_reason is not None:
            out += self._complete_tools()
            out += self.end_parts()
            out.append({"type": "finish-step"})
            self._finish_reason = FINISH_REASONS.get(finish_reason, "other")
        return out

    def _refusal(self, text: str) -> list[Chunk]:
        out = self.end_parts()
        part_id = self.ids("refusal")
        meta = {"openai": {"refusal": True}}
        out.append({"type": "text-start", "id": part_id, "providerMetadata": meta})
        out.append({"type": "text-delta", "id": part_id, "delta": text})
        out.append({"type": "text-end", "id": part_id})
        return out

    def _on_tool_delta(self, call_delta: Any) -> list[Chunk]:
        if not isinstance(call_delta, dict):
            raise MalformedEvent("a tool call delta must be an object")
        index = call_delta.get("index", len(self._calls))
        if not isinstance(index, int):
            raise MalformedEvent("tool call 'index' must be an integer")
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _ToolCall()
        if isinstance(call_delta.get("id"), str) and call_delta["id"] and call.id is None:
            call.id = call_delta["id"]
        function = call_delta.get("function") or {}
        if isinstance(function.get("name"), str) and function["name"] and call.name is None:
            call.name = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            call.arguments.append(arguments)
        out: list[Chunk] = []
        if not call.started and call.name is not None:
            call.id = call.id or self.ids("call")
            call.started = True
            out.append(
                {
                    "type": "tool-input-start",
                    "toolCallId": call.id,
                    "toolName": call.name,
                    **self.tool_flags(),
                }
            )
        if call.started and len(call.arguments) > call.flushed:
            pending = "".join(call.arguments[call.flushed :])
            call.flushed = len(call.arguments)
            out.append(
                {"type": "tool-input-delta", "toolCallId": call.id, "inputTextDelta": pending}
            )
        return out

    def _complete_tools(self) -> list[Chunk]:
        out: list[Chunk] = []
        for call in self._calls.values():
            raw = "".join(call.arguments)
            call_id = call.id or self.ids("call")
            name = call.name or "unknown"
            base = {"toolCallId": call_id, "toolName": name, **self.tool_flags()}
            try:
                parsed = orjson.loads(raw) if raw.strip() else {}
            except orjson.JSONDecodeError as exc:
                out.append(
                    {
                        "type": "tool-input-error",
                        **base,
                        "input": raw,
                        "errorText": f"The tool arguments are not valid JSON: {exc.msg}",
                    }
                )
                continue
            out.append({"type": "tool-input-available", **base, "input": parsed})
        self._calls.clear()
        return out

    def _finish(self) -> Chunk:
        return close_request(
            CloseReason.COMPLETED,
            finish_reason=self._finish_reason,
            message_metadata=self._metadata or None,
        )

    def _on_error(self, event: dict[str, Any]) -> list[Chunk]:
        text = error_message(event.get("error"), "The model provider reported an error.")
        # Half-streamed tool calls are settled by the guard (tool-output-error), not completed.
        return [close_request(CloseReason.UPSTREAM_ERROR, text)]
