"""A toy HTTP-SSE dialect, written as a third-party package writes one
(docs/writing-a-dialect.md): the Acme model API answers ``POST /v1/respond`` with server-sent
events of content blocks (thinking, text, tool calls) addressed by index, interleaved, then
``end`` with usage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from pydantic import BaseModel, Field, SecretStr

from chunkbridge.kit import (
    CloseReason,
    CloseRequest,
    Dialect,
    HttpRequest,
    HttpSseContract,
    IndexedParts,
    Item,
    StreamedToolCalls,
    Translator,
    TranslatorOptions,
    TurnInput,
    error_message,
    optional_str,
    provider_metadata,
    require_str,
    usage_metadata,
)

STOP_REASONS = {"stop": "stop", "max_tokens": "length", "tool_use": "tool-calls"}
USAGE = {"inputTokens": ("in",), "outputTokens": ("out",)}


class AcmeSettings(BaseModel):
    model: str = Field("acme-1", description="the model to request")
    api_key: SecretStr | None = Field(None, description="sent as x-acme-key")


class AcmeSseTranslator(Translator):
    HANDLERS = {
        "block_start": "_on_start",
        "block_delta": "_on_delta",
        "block_stop": "_on_stop",
        "end": "_on_end",
        "error": "_on_error",
    }

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        self.parts = IndexedParts(self.ids)
        self.tools = StreamedToolCalls(self.ids, {})
        self.kinds: dict[int, str] = {}

    def _index(self, event: dict[str, Any]) -> int:
        index = event.get("index")
        return index if isinstance(index, int) else 0

    def _on_start(self, event: dict[str, Any]) -> Sequence[Item]:
        index, kind = self._index(event), require_str(event, "kind")
        self.kinds[index] = kind
        if kind == "tool":
            name, call_id = optional_str(event, "name"), optional_str(event, "id")
            return self.tools.delta(index, call_id=call_id, name=name)
        return self.parts.start(index, "reasoning" if kind == "thinking" else "text")

    def _on_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        index = self._index(event)
        if self.kinds.get(index) == "tool":
            return self.tools.delta(index, arguments=require_str(event, "json"))
        kind = "reasoning" if self.kinds.get(index) == "thinking" else "text"
        return self.parts.delta(index, kind, require_str(event, "text"))

    def _on_stop(self, event: dict[str, Any]) -> Sequence[Item]:
        index = self._index(event)
        if self.kinds.pop(index, None) == "tool":
            return self.tools.complete(index)
        signature = optional_str(event, "signature")
        return self.parts.end(index, provider_metadata("acme", signature=signature))

    def _on_end(self, event: dict[str, Any]) -> Sequence[Item]:
        reason = optional_str(event, "reason") or "stop"
        usage = usage_metadata(event.get("usage"), USAGE)
        # finish-step, then the CloseRequest that completes the turn with the message metadata
        ending = self.finish(STOP_REASONS.get(reason, "other"), usage=usage, stopReason=reason)
        return [*self.parts.end_all(), *self.tools.complete(), *ending]

    def _on_error(self, event: dict[str, Any]) -> Sequence[Item]:
        text = error_message(event.get("message"), "The Acme API failed.")
        return [CloseRequest(CloseReason.UPSTREAM_ERROR, text)]


def request(turn: TurnInput) -> HttpRequest:
    settings: AcmeSettings = turn.settings
    messages = [{"role": m.role, "text": m.text()} for m in turn.request.messages]
    headers = {"x-acme-key": settings.api_key.get_secret_value()} if settings.api_key else {}
    return HttpRequest("/v1/respond", {"model": settings.model, "input": messages}, headers)


def error_frame(status: int, body: bytes) -> str:
    try:
        message = orjson.loads(body)["error"]["message"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        message = f"The Acme API refused the request ({status})."
    return orjson.dumps({"type": "error", "message": message}).decode()


DIALECT = Dialect(
    name="acme-sse",
    summary="Acme model API (HTTP, server-sent events)",
    translator=AcmeSseTranslator,
    http=HttpSseContract(request=request, error_frame=error_frame),
    settings=AcmeSettings,
)
