"""The ``gemini`` translator: upstream events → UI chunks."""

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
    error_message,
    json_text,
    require_dict,
    require_list,
    usage_metadata,
)
from chunkbridge.protocol_specs.gemini import FINISH_REASONS, USAGE_FIELDS
from chunkbridge.translators.dialects.gemini.streamed_calls import StreamedCall

_PROVIDER = "google"
#: What a plain text chunk holds (anything else takes the general path).
_FAST_KEYS = frozenset({"candidates", "usageMetadata", "modelVersion", "responseId", "createTime"})
_FAST_CANDIDATE_KEYS = frozenset({"content", "index", "safetyRatings"})
_CHUNK = "chunk"
_ERROR = "error"


class GeminiTranslator(Translator):
    HANDLERS = {_CHUNK: "_on_chunk", _ERROR: "_on_error"}

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        self._tools = StreamedToolCalls(self.ids, self.tool_flags())
        self._function_call = False
        self._code_call: str | None = None
        #: Google's code execution tool, under the deployment's name for it (``tool_names``).
        names = getattr(self.options.settings, "tool_names", None) or {}
        self._code_name: str = names.get("code_execution", "code_execution")
        #: Sources sent ("url:<url>", "document:<uri>"): grounding repeats them chunk after chunk.
        self._sources: set[str] = set()
        self._finish_reason: str | None = None
        self._usage: dict[str, Any] | None = None
        #: A function call whose arguments are streaming (``partialArgs``).
        self._streaming: StreamedCall | None = None

    def event_type(self, event: dict[str, Any]) -> str | None:
        if "error" in event and "candidates" not in event:
            return _ERROR
        if "candidates" in event or "usageMetadata" in event or "promptFeedback" in event:
            return _CHUNK
        return None

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        if self._finish_reason is not None:
            return None
        for key in event:
            if key not in _FAST_KEYS:
                return None
        candidates = event.get("candidates")
        if type(candidates) is not list or len(candidates) != 1:
            return None
        candidate = candidates[0]
        if type(candidate) is not dict:
            return None
        for key in candidate:
            if key not in _FAST_CANDIDATE_KEYS:
                return None
        content = candidate.get("content")
        parts = content.get("parts") if type(content) is dict else None
        if type(parts) is not list or len(parts) != 1:
            return None
        part = parts[0]
        if type(part) is not dict or len(part) != 1:
            return None
        text = part.get("text")
        if type(text) is not str or not text:
            return None
        usage = event.get("usageMetadata")
        if usage is not None:  # Gemini repeats the running usage on every chunk
            if type(usage) is not dict:
                return None
            self._usage = usage
        return text

    def end_of_stream(self, terminal: bool) -> Sequence[Item]:
        if self._finish_reason is not None:
            out = [*self._finish_streamed(), *self._tools.complete(), *self.end_parts()]
            return [*out, *self._finish()]
        return []

    # -- chunks ----------------------------------------------------------------------------------

    def _begin(self, event: dict[str, Any]) -> list[Chunk]:
        if self.begun:
            return []
        chunks = self.begin(model=event.get("modelVersion"))
        if isinstance(event.get("responseId"), str):
            self.metadata["responseId"] = event["responseId"]
        return chunks

    def _on_chunk(self, event: dict[str, Any]) -> Sequence[Item]:
        out: list[Item] = [*self._begin(event)]
        usage = event.get("usageMetadata")
        if isinstance(usage, dict):
            self._usage = usage
        feedback = event.get("promptFeedback")
        block = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if isinstance(block, str) and block not in ("", "BLOCK_REASON_UNSPECIFIED"):
            self._finish_reason = "content-filter"
            self.metadata["finishReason"] = block
        candidates = require_list(event.get("candidates") or [], "'candidates'")
        if candidates:
            candidate = require_dict(candidates[0], "a candidate")
            out += self._on_candidate(candidate)
        if self._finish_reason is not None and self._usage is not None:
            out += self._finish_streamed()
            out += self._tools.complete()
            out += self.end_parts()
            out += self._finish()
        return out

    def _on_candidate(self, candidate: dict[str, Any]) -> list[Item]:
        out: list[Item] = [*self._grounding(candidate.get("groundingMetadata"))]
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in require_list(parts or [], "'parts'"):
            out += self._on_part(require_dict(part, "a part"))
        reason = candidate.get("finishReason")
        if isinstance(reason, str):
            finish = FINISH_REASONS.get(reason, "other")
            if finish == "stop" and self._function_call:
                finish = "tool-calls"
            self._finish_reason = finish
            self.metadata["finishReason"] = reason
            message = candidate.get("finishMessage")
            if isinstance(message, str):
                self.metadata["finishMessage"] = message
        return out

    def _on_part(self, part: dict[str, Any]) -> Sequence[Item]:
        signature = part.get("thoughtSignature")
        meta = {_PROVIDER: {"thoughtSignature": signature}} if isinstance(signature, str) else None
        if "text" in part:
            text = part["text"]
            if not isinstance(text, str):
                raise MalformedEvent("a part's 'text' must be a string")
            thought = part.get("thought") is True
            if not text:
                return self._signature_only(thought, meta) if meta else []
            deltas = self.reasoning_delta(text) if thought else self.text_delta(text)
            if meta:
                deltas[-1]["providerMetadata"] = meta
            return deltas
        if "functionCall" in part:
            return self._function(require_dict(part["functionCall"], "'functionCall'"), meta)
        if "executableCode" in part:
            code = require_dict(part["executableCode"], "'executableCode'")
            self._code_call = call_id = self.ids("code")
            flags = self.tool_flags(providerExecuted=True)
            base = {"toolCallId": call_id, "toolName": self._code_name, **flags}
            return [
                *self.end_parts(),
                {"type": "tool-input-start", **base},
                {"type": "tool-input-available", **base, "input": code},
            ]
        if "codeExecutionResult" in part:
            result = require_dict(part["codeExecutionResult"], "'codeExecutionResult'")
            if self._code_call is None:
                return self.unknown("gemini-part", part)
            output = {"outcome": result.get("outcome"), "output": result.get("output") or ""}
            flags = self.tool_flags(providerExecuted=True)
            chunk: Chunk = {"type": "tool-output-available", "toolCallId": self._code_call}
            return [{**chunk, "output": output, **flags}]
        if "inlineData" in part:
            data = require_dict(part["inlineData"], "'inlineData'")
            media_type, payload = data.get("mimeType"), data.get("data")
            if not isinstance(media_type, str) or not isinstance(payload, str):
                raise MalformedEvent("'inlineData' needs a mimeType and data")
            file: Chunk = {"type": "file", "mediaType": media_type}
            file["url"] = f"data:{media_type};base64,{payload}"
            if meta:
                file["providerMetadata"] = meta
            return [*self.end_parts(), file]
        return self.unknown("gemini-part", part)

    def _signature_only(self, thought: bool, meta: dict[str, Any]) -> list[Chunk]:
        """An empty part that carries a signature: onto the open part, else an empty part."""
        open_id = self.text_id if not thought else None
        if open_id is not None:
            return [{"type": "text-delta", "id": open_id, "delta": "", "providerMetadata": meta}]
        kind = "reasoning" if thought else "text"
        out = self.end_parts()
        part_id = self.ids(kind)
        out.append({"type": f"{kind}-start", "id": part_id, "providerMetadata": meta})
        out.append({"type": f"{kind}-end", "id": part_id})
        return out

    def _function(self, call: dict[str, Any], meta: dict[str, Any] | None) -> Sequence[Item]:
        partial = call.get("partialArgs")
        if partial is not None or call.get("willContinue") is True:
            return self._streamed_function(call, partial, meta)
        if not call.get("name") and not call.get("args") and self._streaming is not None:
            return self._finish_streamed()  # the empty part that ends a streamed call
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise MalformedEvent("a functionCall needs a name")
        args = call.get("args")
        arguments = args if isinstance(args, str) else json_text(args or {})
        call_id = call.get("id")
        key = len(self._tools)
        out = self.end_parts()
        out += self._tools.delta(
            key,
            call_id=call_id if isinstance(call_id, str) and call_id else None,
            name=name,
            arguments=arguments,
        )
        done = self._tools.complete(key)
        if meta:
            for chunk in done:
                chunk["providerMetadata"] = meta
        self._function_call = True
        return [*out, *done]

    def _streamed_function(
        self, call: dict[str, Any], partial: Any, meta: dict[str, Any] | None
    ) -> list[Chunk]:
        """A call whose arguments stream as ``partialArgs`` (values by JSON path): announced
        at once, its arguments accumulated, completed when nothing more will come."""
        out: list[Chunk] = []
        name = call.get("name")
        if isinstance(name, str) and name:
            out += self._finish_streamed()
            out += self.end_parts()
            call_id = call.get("id")
            self._streaming = StreamedCall(
                call_id if isinstance(call_id, str) and call_id else self.ids("call"), name, meta
            )
            out.append(
                {
                    "type": "tool-input-start",
                    "toolCallId": self._streaming.call_id,
                    "toolName": name,
                    **self.tool_flags(),
                }
            )
        streaming = self._streaming
        if streaming is None:
            raise MalformedEvent("partialArgs for no function call")
        if meta:
            streaming.meta = meta
        continues = call.get("willContinue") is True
        for arg in require_list(partial or [], "'partialArgs'"):
            streaming.add(require_dict(arg, "a partial argument"))
            continues = continues or arg.get("willContinue") is True
        if not continues:
            out += self._finish_streamed()
        return out

    def _finish_streamed(self) -> list[Chunk]:
        streaming, self._streaming = self._streaming, None
        if streaming is None:
            return []
        self._function_call = True
        chunk: Chunk = {
            "type": "tool-input-available",
            "toolCallId": streaming.call_id,
            "toolName": streaming.name,
            **self.tool_flags(),
            "input": streaming.args,
        }
        if streaming.meta:
            chunk["providerMetadata"] = streaming.meta
        return [chunk]

    def _grounding(self, grounding: Any) -> list[Chunk]:
        chunks = grounding.get("groundingChunks") if isinstance(grounding, dict) else None
        out: list[Chunk] = []
        for chunk in chunks if isinstance(chunks, list) else ():
            if not isinstance(chunk, dict):
                continue
            web = chunk.get("web") or chunk.get("image")
            context = chunk.get("retrievedContext")
            if isinstance(web, dict):
                url = web.get("uri") or web.get("sourceUri")
                out += self._url_source(url, web.get("title"))
            elif isinstance(context, dict) and isinstance(context.get("uri"), str):
                uri = context["uri"]
                if uri.startswith(("http://", "https://")):
                    out += self._url_source(uri, context.get("title"))
                elif "document:" + uri not in self._sources:
                    self._sources.add("document:" + uri)
                    title = context.get("title")
                    out.append(
                        {
                            "type": "source-document",
                            "sourceId": self.ids("source"),
                            "mediaType": _media_type(uri),
                            "title": title if isinstance(title, str) else "Unknown Document",
                            "filename": uri.rsplit("/", 1)[-1],
                        }
                    )
        return out

    def _url_source(self, url: Any, title: Any) -> list[Chunk]:
        if not isinstance(url, str) or "url:" + url in self._sources:
            return []
        self._sources.add("url:" + url)
        chunk: Chunk = {"type": "source-url", "sourceId": self.ids("source"), "url": url}
        if isinstance(title, str):
            chunk["title"] = title
        return [chunk]

    def _finish(self) -> list[Item]:
        reason, self._finish_reason = self._finish_reason, None
        return self.finish(reason, usage=usage_metadata(self._usage, USAGE_FIELDS))

    def _on_error(self, event: dict[str, Any]) -> Sequence[Item]:
        error = event.get("error")
        text = error_message(error, PROVIDER_ERROR)
        status = error.get("status") if isinstance(error, dict) else None
        if isinstance(status, str) and status:
            text = f"{status}: {text}"
        return [CloseRequest(CloseReason.UPSTREAM_ERROR, text)]


_MEDIA_TYPES = {
    ".pdf": "application/pdf",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".doc": "application/msword",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


def _media_type(uri: str) -> str:
    for suffix, media_type in _MEDIA_TYPES.items():
        if uri.endswith(suffix):
            return media_type
    return "application/octet-stream"
