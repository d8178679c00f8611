"""The ``openai-agents`` translator: the Agents SDK's stream events (objects or their recorded
form) → UI chunks.

Mapping and reasons: ``protocol_specs/openai_agents.py``. Handlers read attributes (a recorded
event through :func:`~chunkbridge.kit.record_of`): the model's text delta costs two attribute
reads and one chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson
from pydantic_core import to_jsonable_python

from chunkbridge.kit import (
    Chunk,
    IndexedParts,
    Item,
    LibraryTranslator,
    MalformedEvent,
    Record,
    StreamedToolCalls,
    TranslatorOptions,
    record_of,
)
from chunkbridge.protocol_specs import openai_agents as spec

__all__ = ["OpenAiAgentsTranslator", "record_event"]


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _dump(value: Any) -> Any:
    return _clean(to_jsonable_python(value, fallback=repr, by_alias=True))


def _agent(agent: Any) -> dict[str, Any] | None:
    name = getattr(agent, "name", None)
    return {"name": name} if name is not None else None


def record_event(event: Any) -> Any:
    """One stream event as its recorded frame (see the spec module). Recording time only."""
    kind = getattr(event, "type", None)
    if kind == "raw_response_event":
        return {"type": kind, "data": _dump(event.data)}
    if kind == "run_item_stream_event":
        item = event.item
        recorded: dict[str, Any] = {"type": item.type, "raw_item": _dump(item.raw_item)}
        if getattr(item, "output", None) is not None and item.type == "tool_call_output_item":
            recorded["output"] = _dump(item.output)
        for key in ("agent", "source_agent", "target_agent"):
            agent = _agent(getattr(item, key, None))
            if agent is not None:
                recorded[key] = agent
        return {"type": kind, "name": event.name, "item": recorded}
    if kind == "agent_updated_stream_event":
        return {"type": kind, "new_agent": _agent(event.new_agent)}
    return _dump(event)


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise MalformedEvent(f"{what} must be a string")
    return value


def _fields(value: Any) -> dict[str, Any]:
    fields = value._fields if isinstance(value, Record) else _dump(value)
    return fields if isinstance(fields, dict) else {"value": fields}


class OpenAiAgentsTranslator(LibraryTranslator):
    HANDLERS = {
        "raw_response_event": "_on_raw",
        "run_item_stream_event": "_on_run_item",
        "agent_updated_stream_event": "_on_agent",
    }

    @staticmethod
    def record(event: Any) -> Any:
        return record_event(event)

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        self._parts = IndexedParts(self.ids)
        self._calls = StreamedToolCalls(self.ids, self.tool_flags())
        #: reasoning item id → the part keys open for it.
        self._reasoning: dict[str, list[Any]] = {}
        #: Items whose text or reasoning streamed; calls announced; calls still without output.
        self._streamed: set[str] = set()
        self._announced: set[str] = set()
        self._unanswered: set[str] = set()
        self._responses = 0
        self._agent: str | None = None
        self._usage: dict[str, int] = {}
        self._raw: dict[str, Callable[[Any], Sequence[Item]]] = {
            "response.created": self._raw_created,
            "response.output_text.delta": self._raw_text,
            "response.refusal.delta": self._raw_text,
            "response.reasoning_summary_text.delta": self._raw_reasoning,
            "response.reasoning_text.delta": self._raw_reasoning,
            "response.output_item.added": self._raw_item_added,
            "response.function_call_arguments.delta": self._raw_arguments,
            "response.output_item.done": self._raw_item_done,
            "response.completed": self._raw_completed,
        }

    # -- the run ---------------------------------------------------------------------------------

    def _on_agent(self, event: Any) -> Sequence[Item]:
        name = record_of(event.new_agent).name
        name = name if isinstance(name, str) else None
        previous, self._agent = self._agent, name
        if not self.begun:
            return self.begin(metadata={"agent": name} if name else None)
        if name == previous:
            return []
        return [{"type": "data-handoff", "data": {"from": previous, "to": name}}]

    def end_of_events(self) -> Sequence[Item]:
        out: list[Item] = [*self.begin(), *self._end_response()]
        finish = "tool-calls" if self._unanswered else "stop"
        usage = self._usage or None
        return [*out, *self.finish(finish, usage=usage, agent=self._agent)]

    def _end_response(self) -> list[Chunk]:
        self._reasoning.clear()
        return [*self._parts.end_all(), *self._calls.complete()]

    # -- the model's own stream ------------------------------------------------------------------

    def _on_raw(self, event: Any) -> Sequence[Item]:
        data = record_of(event.data)
        kind = data.type
        handler = self._raw.get(kind)
        if handler is not None:
            return handler(data)
        if kind in spec.IGNORED_RAW:
            self.stats["no-content-event"] += 1
            return self.begin()
        return self.unknown(f"raw-{kind}", _fields(data))

    def _raw_created(self, data: Any) -> Sequence[Item]:
        model = record_of(data.response).model
        self._responses += 1
        out: list[Item] = [*self.begin(model=model)]
        if isinstance(model, str) and model:
            self.metadata["model"] = model
        if self._responses > 1:
            out += [*self._end_response(), {"type": "finish-step"}, {"type": "start-step"}]
        return out

    def _raw_text(self, data: Any) -> Sequence[Item]:
        delta, item_id = data.delta, _str(data.item_id, "'item_id'")
        if not isinstance(delta, str) or not delta:
            return []
        self._streamed.add(item_id)
        return [*self.begin(), *self._parts.delta(item_id, "text", delta)]

    def _raw_reasoning(self, data: Any) -> Sequence[Item]:
        delta, item_id = data.delta, _str(data.item_id, "'item_id'")
        if not isinstance(delta, str) or not delta:
            return []
        self._streamed.add(item_id)
        key = (item_id, data.summary_index if data.summary_index is not None else -1)
        keys = self._reasoning.setdefault(item_id, [])
        if key not in keys:
            keys.append(key)
        return [*self.begin(), *self._parts.delta(key, "reasoning", delta)]

    def _raw_item_added(self, data: Any) -> Sequence[Item]:
        item = record_of(data.item)
        if item.type != "function_call":
            return self.begin()
        call_id = _str(item.call_id, "'call_id'")
        self._announced.add(call_id)
        self._unanswered.add(call_id)
        arguments = item.arguments if isinstance(item.arguments, str) else None
        calls = self._calls.delta(item.id, call_id=call_id, name=item.name, arguments=arguments)
        return [*self.begin(), *calls]

    def _raw_arguments(self, data: Any) -> Sequence[Item]:
        delta = data.delta
        if not isinstance(delta, str):
            raise MalformedEvent("'delta' must be a string")
        return self._calls.delta(data.item_id, arguments=delta)

    def _raw_item_done(self, data: Any) -> Sequence[Item]:
        item = record_of(data.item)
        item_id = item.id
        if item.type == "function_call":
            return [*self._calls.complete(item_id)]
        if item.type == "reasoning":
            return [c for key in self._reasoning.pop(item_id, []) for c in self._parts.end(key)]
        return [*self._parts.end(item_id)]

    def _raw_completed(self, data: Any) -> Sequence[Item]:
        usage = record_of(record_of(data.response).usage)
        for ours, theirs in spec.USAGE_FIELDS.items():
            value = getattr(usage, theirs, None)
            if type(value) is int:
                self._usage[ours] = self._usage.get(ours, 0) + value
        return self.begin()

    # -- the run's items -------------------------------------------------------------------------

    def _on_run_item(self, event: Any) -> Sequence[Item]:
        name = event.name
        item = record_of(event.item)
        raw = record_of(item.raw_item)
        if name == "tool_called" or name == "handoff_requested":
            if raw.type != "function_call":
                return self.unknown(str(name), _fields(raw))
            return self._called(raw)
        if name == "tool_output" or name == "handoff_occured":
            return self._output(raw, item.output if name == "tool_output" else None)
        if name == "message_output_created":
            return self._late_text(raw, "text")
        if name == "reasoning_item_created":
            return self._late_text(raw, "reasoning")
        return self.unknown(str(name), _fields(raw))

    def _called(self, raw: Any) -> Sequence[Item]:
        call_id = _str(raw.call_id, "'call_id'")
        if call_id in self._announced:
            return self.begin()
        self._announced.add(call_id)
        self._unanswered.add(call_id)
        arguments = raw.arguments if isinstance(raw.arguments, str) else None
        out = self._calls.delta(call_id, call_id=call_id, name=raw.name, arguments=arguments)
        return [*self.begin(), *out, *self._calls.complete(call_id)]

    def _output(self, raw: Any, output: Any) -> Sequence[Item]:
        call_id = _str(raw.call_id, "'call_id'")
        self._unanswered.discard(call_id)
        if output is None:  # a handoff's output: the JSON text the model gets
            output = raw.output
            if isinstance(output, str):
                try:
                    output = orjson.loads(output)
                except orjson.JSONDecodeError:
                    pass
        value = output if isinstance(output, str) else to_jsonable_python(output, fallback=repr)
        chunk = {"type": "tool-output-available", "toolCallId": call_id, "output": value}
        return [*self.begin(), {**chunk, **self.tool_flags()}]

    def _late_text(self, raw: Any, kind: str) -> Sequence[Item]:
        """A message or reasoning item whose text did not stream (a model that does not
        stream deltas): its text now, as one part."""
        item_id = raw.id
        if item_id in self._streamed:
            return self.begin()
        pieces = raw.content if kind == "text" else raw.summary
        texts = []
        for piece in pieces or ():
            piece = record_of(piece)
            text = piece.text if piece.text is not None else piece.refusal
            if isinstance(text, str) and text:
                texts.append(text)
        if not texts:
            return self.begin()
        key = ("late", item_id)
        parts = self._parts.delta(key, "text" if kind == "text" else "reasoning", "".join(texts))
        return [*self.begin(), *parts, *self._parts.end(key)]
