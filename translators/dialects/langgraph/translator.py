"""The ``langgraph`` translator: a graph's ``astream`` tuples (objects or their recorded form)
→ UI chunks.

Mapping and reasons: ``protocol_specs/langgraph.py``. Handlers read attributes of the messages
(a recorded message through :func:`~chunkbridge.kit.record_of`); a streamed token costs a few
attribute reads and one chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from pydantic_core import to_jsonable_python

from chunkbridge.kit import (
    Chunk,
    Item,
    LibraryTranslator,
    MalformedEvent,
    StreamedToolCalls,
    TranslatorOptions,
    record_of,
)
from chunkbridge.protocol_specs import langgraph as spec

__all__ = ["LangGraphTranslator", "record_event"]

_AI = frozenset({"AIMessageChunk", "ai"})
_NO_QUESTION = "The agent needs your input."


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _dump(value: Any) -> Any:
    return _clean(to_jsonable_python(value, fallback=repr))


def record_event(event: Any) -> Any:
    """One ``astream`` item as its recorded frame (see the spec module). Recording time only."""
    if not isinstance(event, tuple) or len(event) < 2:
        return _dump(event)
    *namespace, mode, payload = event
    if mode == "messages" and isinstance(payload, tuple) and len(payload) == 2:
        message, metadata = payload
        if isinstance(metadata, dict):
            metadata = {
                k: metadata[k] for k in ("langgraph_node", "langgraph_step") if k in metadata
            }
        payload = [_dump(message), _dump(metadata)]
    else:
        payload = _dump(payload)
    # the namespace by node names (each ``node:<task id>``: the task id is random per run)
    names = [
        [str(n).split(":")[0] for n in ns] if isinstance(ns, tuple) else ns for ns in namespace
    ]
    return [*names, mode, payload]


def _json(value: Any) -> Any:
    return value if isinstance(value, str) else to_jsonable_python(value, fallback=repr)


def _tool_output(content: Any) -> Any:
    """A tool message's content: JSON objects and arrays parsed (tools returning data), other
    text as is."""
    if isinstance(content, str):
        if content[:1] in ("{", "["):
            try:
                return orjson.loads(content)
            except orjson.JSONDecodeError:
                return content
        return content
    return _json(content)


def _question(value: Any) -> dict[str, Any]:
    """An interrupt's value as a question's input (``{question, …}``)."""
    value = _json(value)
    if isinstance(value, str):
        return {"question": value or _NO_QUESTION}
    if isinstance(value, dict):
        text = next((value[k] for k in spec.QUESTION_KEYS if isinstance(value.get(k), str)), None)
        return {**value, "question": text or _NO_QUESTION}
    return {"question": _NO_QUESTION, "value": value}


class LangGraphTranslator(LibraryTranslator):
    HANDLERS = {
        "messages": "_on_messages",
        "updates": "_on_updates",
        "custom": "_on_custom",
    }

    @staticmethod
    def record(event: Any) -> Any:
        return record_event(event)

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        self._calls = StreamedToolCalls(self.ids, self.tool_flags())
        #: An AI message is streaming; how many began.
        self._in_message = False
        self._messages = 0
        self._unanswered: set[str] = set()
        self._usage: dict[str, int] = {}

    def event_kind(self, event: Any) -> str | None:
        if type(event) is tuple or type(event) is list:
            if len(event) in (2, 3) and isinstance(event[-2], str):
                return event[-2]
        return None

    def end_of_events(self) -> Sequence[Item]:
        out: list[Item] = [*self.begin(), *self._end_message()]
        finish = "tool-calls" if self.asked or self._unanswered else "stop"
        return [*out, *self.finish(finish, usage=self._usage or None)]

    # -- messages --------------------------------------------------------------------------------

    def _on_messages(self, event: Any) -> Sequence[Item]:
        payload = event[-1]
        if not isinstance(payload, tuple | list) or len(payload) != 2:
            raise MalformedEvent("a messages payload is (message, metadata)")
        message = record_of(payload[0])
        kind = message.type
        if kind in _AI:
            return self._ai(message, whole=kind == "ai")
        if kind == "tool":
            return self._tool_message(message)
        self.stats["no-content-event"] += 1
        return self.begin()

    def _ai(self, message: Any, whole: bool) -> list[Item]:
        """An AI message chunk (or a whole AI message a node returned). A message begins with
        its first chunk after the previous one ended (its last chunk, its node's update, a tool
        message): chunk ids are no guide (the closing chunk may carry an id of its own)."""
        out: list[Item] = [*self.begin()]
        if whole or not self._in_message:
            out += self._end_message()
            if self._messages:
                out += [{"type": "finish-step"}, {"type": "start-step"}]
            self._messages += 1
            self._in_message = True
        out += self._content(message)
        if whole:
            for call in message.tool_calls or ():
                call = record_of(call)
                arguments = orjson.dumps(_json(call.args or {})).decode()
                out += self._calls.delta(
                    call.id, call_id=call.id, name=call.name, arguments=arguments
                )
        for chunk in getattr(message, "tool_call_chunks", None) or ():
            chunk = record_of(chunk)
            out += self._calls.delta(
                chunk.index, call_id=chunk.id, name=chunk.name, arguments=chunk.args
            )
        self._account(message)
        if whole or getattr(message, "chunk_position", None) == "last":
            out += self._end_message()
        return out

    def _content(self, message: Any) -> list[Chunk]:
        out: list[Chunk] = []
        extra = message.additional_kwargs
        reasoning = extra.get("reasoning_content") if isinstance(extra, dict) else None
        if isinstance(reasoning, str) and reasoning:
            out += self.reasoning_delta(reasoning)
        content = message.content
        if isinstance(content, str):
            return out + self.text_delta(content) if content else out
        for block in content or ():
            if isinstance(block, str):
                out += self.text_delta(block) if block else []
                continue
            block = record_of(block)
            kind = block.type
            if kind == "text" and isinstance(block.text, str) and block.text:
                out += self.text_delta(block.text)
            elif kind in ("reasoning", "thinking"):
                text = block.reasoning if kind == "reasoning" else block.thinking
                if isinstance(text, str) and text:
                    out += self.reasoning_delta(text)
        return out

    def _account(self, message: Any) -> None:
        meta = message.response_metadata
        model = meta.get("model_name") if isinstance(meta, dict) else None
        if isinstance(model, str) and model:
            self.metadata["model"] = model
        usage = message.usage_metadata
        if isinstance(usage, dict):
            for ours, theirs in spec.USAGE_FIELDS.items():
                value = usage.get(theirs)
                if type(value) is int:
                    self._usage[ours] = self._usage.get(ours, 0) + value

    def _end_message(self) -> list[Chunk]:
        self._in_message = False
        calls = self._calls.complete()
        for chunk in calls:
            self._unanswered.add(chunk["toolCallId"])
        return [*self.end_parts(), *calls]

    def _tool_message(self, message: Any) -> list[Item]:
        call_id = message.tool_call_id
        if not isinstance(call_id, str):
            raise MalformedEvent("a tool message's 'tool_call_id' must be a string")
        out: list[Item] = [*self.begin(), *self._end_message()]
        self._unanswered.discard(call_id)
        flags = self.tool_flags()
        if message.status == "error":
            text = message.content if isinstance(message.content, str) else None
            error = {"type": "tool-output-error", "toolCallId": call_id}
            return [*out, {**error, "errorText": text or "The tool failed.", **flags}]
        output = _tool_output(message.content)
        chunk = {"type": "tool-output-available", "toolCallId": call_id, "output": output}
        return [*out, {**chunk, **flags}]

    # -- updates and custom values ---------------------------------------------------------------

    def _on_updates(self, event: Any) -> Sequence[Item]:
        payload = event[-1]
        if not isinstance(payload, dict):
            raise MalformedEvent("an updates payload is an object")
        out: list[Item] = [*self.begin(), *self._end_message()]
        for node, update in payload.items():
            if node == spec.INTERRUPT:
                out += self._interrupts(update)
            else:
                data = {"node": node}
                out.append({"type": "data-node-update", "data": data, "transient": True})
        return out

    def _interrupts(self, interrupts: Any) -> list[Item]:
        out: list[Item] = []
        for interrupt in interrupts if isinstance(interrupts, tuple | list) else ():
            interrupt = record_of(interrupt)
            interrupt_id = interrupt.id
            if not isinstance(interrupt_id, str):
                self.stats["malformed-interrupt"] += 1
                continue
            out += self.question(interrupt_id, _question(interrupt.value))
            self.asked = True  # the graph stopped: its stream ends now
        return out

    def _on_custom(self, event: Any) -> Sequence[Item]:
        part = {"type": "data-custom", "data": _json(event[-1]), "transient": True}
        return [*self.begin(), part]
