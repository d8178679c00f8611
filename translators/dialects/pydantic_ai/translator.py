"""The ``pydantic-ai`` translator: agent run events (objects or their recorded form) → UI chunks.

Mapping and reasons: ``protocol_specs/pydantic_ai.py``. Handlers read the events' attributes
(a recorded event through :func:`~chunkbridge.kit.record_of`), so the live objects cost no
conversion: a text delta is two attribute reads and one chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    json_text,
    provider_metadata,
    record_of,
)
from chunkbridge.protocol_specs import pydantic_ai as spec

__all__ = ["PydanticAiTranslator", "record_event"]

#: Fields of a custom event that are its envelope, not its data.
_CUSTOM_ENVELOPE = frozenset({"event_kind", "name", "tool_call_id", "tool_name"})


def _clean(value: Any) -> Any:
    """A JSON value without ``None`` fields and timestamps (volatile: a recording is compared
    across runs)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None and k != "timestamp"}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def record_event(event: Any) -> Any:
    """One run event as its recorded frame (see the spec module). Recording time only."""
    if getattr(event, "event_kind", None) == "agent_run_result":
        result = event.result
        response = result.response
        usage = result.usage
        return {
            "event_kind": "agent_run_result",
            "result": _clean(
                {
                    "response": {
                        "model_name": response.model_name,
                        "finish_reason": response.finish_reason,
                    },
                    "usage": {a: getattr(usage, a, None) for a in spec.USAGE_FIELDS.values()},
                }
            ),
        }
    return _clean(to_jsonable_python(event, fallback=repr))


def _args_text(args: Any) -> str | None:
    """Tool arguments as JSON text: streamed text as is, a parsed object encoded."""
    if args is None or isinstance(args, str):
        return args
    return json_text(args)


#: A native return's fields (a return has no ``id`` of its own).
_RETURN_FIELDS = ("providerName", "providerDetails", "toolKind")


def _native_fields(part: Any) -> dict[str, Any]:
    """A native (provider-run) call's or return's fields that pydantic-ai sends back to the
    provider that made them: the call's ``id``, the provider's name and details, the typed
    part's kind (``None`` values left out)."""
    details = part.provider_details
    fields = {
        "id": part.id if part.part_kind == "builtin-tool-call" else None,
        "providerName": part.provider_name,
        "providerDetails": None if details is None else to_jsonable_python(details, fallback=repr),
        "toolKind": part.tool_kind,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _call_id(part: Any) -> str:
    call_id = part.tool_call_id
    if not isinstance(call_id, str):
        raise MalformedEvent("'tool_call_id' must be a string")
    return call_id


class PydanticAiTranslator(LibraryTranslator):
    HANDLERS = {
        "part_start": "_on_part_start",
        "part_delta": "_on_part_delta",
        "part_end": "_on_part_end",
        "function_tool_call": "_on_tool_call",
        "output_tool_call": "_on_tool_call",
        "function_tool_result": "_on_tool_result",
        "output_tool_result": "_on_tool_result",
        "deferred_tool_requests": "_on_deferred",
        "custom": "_on_custom",
        "agent_run_result": "_on_run_result",
        **{kind: "_on_nothing" for kind in spec.IGNORED_EVENTS},
    }

    @staticmethod
    def record(event: Any) -> Any:
        return record_event(event)

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        self._parts = IndexedParts(self.ids)
        self._tools = StreamedToolCalls(self.ids, self.tool_flags())
        self._native = StreamedToolCalls(self.ids, self.tool_flags(providerExecuted=True))
        #: native call id → the fields its ``providerMetadata`` carried (until its return).
        self._native_calls: dict[str, dict[str, Any]] = {}
        #: part index → the registry of the tool call streaming there.
        self._call_at: dict[int, StreamedToolCalls] = {}
        #: reasoning part index → its signature delta so far.
        self._signatures: dict[int, str] = {}
        #: Calls announced in this stream, and those of them still without a result.
        self._announced: set[str] = set()
        self._unanswered: set[str] = set()
        #: Tool events came since the last response part: the next part opens a new step.
        self._between = False
        #: A response part came in this run. Tool events before the first one are a resumed
        #: run's (the approved or answered calls the history holds): their outputs update parts
        #: of an earlier step, so they end no step (the AI SDK sends them before its first
        #: ``start-step``) and the first response goes on in the step they are in.
        self._responded = False

    def event_kind(self, event: Any) -> str | None:
        kind = getattr(event, "event_kind", None)
        return kind if isinstance(kind, str) else None

    # -- the run and its steps -------------------------------------------------------------------

    def _response(self) -> list[Chunk]:
        """Before a response part: the answer's opening, or a new step after tool events."""
        self._responded = True
        if not self.begun:
            return self.begin()
        if not self._between:
            return []
        self._between = False
        return [*self._end_response(), {"type": "finish-step"}, {"type": "start-step"}]

    def _end_response(self) -> list[Chunk]:
        self._call_at.clear()
        self._signatures.clear()
        return [*self._parts.end_all(), *self._tools.complete(), *self._native.complete()]

    def _on_nothing(self, event: Any) -> Sequence[Item]:
        self.stats["no-content-event"] += 1
        return self.begin()

    def _on_run_result(self, event: Any) -> Sequence[Item]:
        result = record_of(event.result)
        response = record_of(result.response)
        usage = record_of(result.usage)
        out: list[Item] = [*self.begin(), *self._end_response()]
        model = response.model_name if response is not None else None
        if isinstance(model, str) and model:
            self.metadata["model"] = model
        counts = {}
        for ours, theirs in spec.USAGE_FIELDS.items():
            value = getattr(usage, theirs, None)
            if type(value) is int and value:
                counts[ours] = value
        reason = response.finish_reason if response is not None else None
        out += self.finish(self._finish_reason(reason), usage=counts or None)
        return out

    def end_of_events(self) -> Sequence[Item]:
        return [*self.begin(), *self._end_response(), *self.finish(self._finish_reason(None))]

    def _finish_reason(self, reason: Any) -> str:
        if self.asked or self._unanswered:
            return "tool-calls"
        return spec.FINISH_REASONS.get(reason, "stop") if isinstance(reason, str) else "stop"

    # -- response parts --------------------------------------------------------------------------

    def _on_part_start(self, event: Any) -> Sequence[Item]:
        index, part = event.index, record_of(event.part)
        out: list[Item] = [*self._response()]
        kind = part.part_kind
        if kind == "text" or kind == "thinking":
            content = part.content
            if isinstance(content, str) and content:
                out += self._parts.delta(index, "text" if kind == "text" else "reasoning", content)
        elif kind == "tool-call" or kind == "builtin-tool-call":
            calls = self._tools if kind == "tool-call" else self._native
            self._call_at[index] = calls
            call_id = _call_id(part)
            self._announced.add(call_id)
            if calls is self._tools:
                self._unanswered.add(call_id)
            out += calls.delta(
                index, call_id=call_id, name=part.tool_name, arguments=_args_text(part.args)
            )
        elif kind == "builtin-tool-return":
            meta = self._return_metadata(part)
            out += self._result(part, self.tool_flags(providerExecuted=True), meta)
        else:
            out += self.unknown(f"part-{kind}", self._part_fields(part))
        return out

    def _on_part_delta(self, event: Any) -> Sequence[Item]:
        index, delta = event.index, record_of(event.delta)
        kind = delta.part_delta_kind
        if kind == "text" or kind == "thinking":
            text = delta.content_delta
            if kind == "thinking" and isinstance(delta.signature_delta, str):
                self._signatures[index] = self._signatures.get(index, "") + delta.signature_delta
            if not isinstance(text, str) or not text:
                return []
            out = self._response()
            return [
                *out,
                *self._parts.delta(index, "text" if kind == "text" else "reasoning", text),
            ]
        if kind == "tool_call":
            calls = self._call_at.get(index)
            if calls is None:
                raise MalformedEvent(f"a tool call delta for part {index}, which is no call")
            return calls.delta(index, arguments=_args_text(delta.args_delta))
        return self.unknown(f"delta-{kind}", self._part_fields(delta))

    def _on_part_end(self, event: Any) -> Sequence[Item]:
        index, part = event.index, record_of(event.part)
        kind = part.part_kind
        if kind == "thinking":
            signature = part.signature or self._signatures.pop(index, None)
            meta = provider_metadata(
                spec.PROVIDER, signature=signature, id=part.id, providerName=part.provider_name
            )
            return self._parts.end(index, meta)
        calls = self._call_at.pop(index, None)
        if calls is None:
            return self._parts.end(index)
        out = calls.complete(index)
        if out and calls is self._native:
            fields = self._native_calls[out[-1]["toolCallId"]] = _native_fields(part)
            if fields:
                out[-1]["providerMetadata"] = {spec.PROVIDER: fields}
        return out

    def _return_metadata(self, part: Any) -> dict[str, Any] | None:
        """The native return's fields where they differ from its call's (``null``: the return
        lacks one its call has). A return shares its call's as a rule, and an ai 5 client keeps
        no metadata of an output (spec §4.1): what the two share rides on the call."""
        call = self._native_calls.pop(_call_id(part), {})
        own = _native_fields(part)
        fields = {key: own.get(key) for key in _RETURN_FIELDS if own.get(key) != call.get(key)}
        return {spec.PROVIDER: fields} if fields else None

    def _part_fields(self, part: Any) -> dict[str, Any]:
        fields = (
            part._fields if isinstance(part, Record) else to_jsonable_python(part, fallback=repr)
        )
        return fields if isinstance(fields, dict) else {"part": fields}

    # -- the agent's tools -----------------------------------------------------------------------

    def _on_tool_call(self, event: Any) -> Sequence[Item]:
        part = record_of(event.part)
        call_id = _call_id(part)
        out = [*self.begin(), *self._end_response()]
        self._between = self._responded
        if call_id in self._announced or event.args_valid is None:
            return out  # streamed as its part; or a resumed call the history already shows
        self._announced.add(call_id)
        self._unanswered.add(call_id)
        name, args = part.tool_name, _args_text(part.args)
        out += self._tools.delta(call_id, call_id=call_id, name=name, arguments=args)
        return [*out, *self._tools.complete(call_id)]

    def _on_tool_result(self, event: Any) -> Sequence[Item]:
        out = [*self.begin(), *self._end_response()]
        self._between = self._responded
        return [*out, *self._result(record_of(event.part), self.tool_flags())]

    def _result(
        self, part: Any, flags: dict[str, Any], meta: dict[str, Any] | None = None
    ) -> list[Chunk]:
        call_id = _call_id(part)
        self._unanswered.discard(call_id)
        outcome, content = part.outcome, part.content
        if outcome == "denied":
            return [{"type": "tool-output-denied", "toolCallId": call_id}]
        chunk: Chunk
        if outcome in spec.ERROR_OUTCOMES:
            text = content if isinstance(content, str) else json_text(to_jsonable_python(content))
            chunk = {"type": "tool-output-error", "toolCallId": call_id, "errorText": text, **flags}
        else:
            output = (
                content if isinstance(content, str) else to_jsonable_python(content, fallback=repr)
            )
            chunk = {"type": "tool-output-available", "toolCallId": call_id, "output": output}
            chunk.update(flags)
        if meta:
            chunk["providerMetadata"] = meta
        return [chunk]

    def _on_deferred(self, event: Any) -> Sequence[Item]:
        requests = record_of(event.requests)
        out: list[Item] = [*self.begin(), *self._end_response()]
        self._between = self._responded
        for call in requests.approvals or ():
            call_id = _call_id(record_of(call))
            out.append(
                {"type": "tool-approval-request", "approvalId": call_id, "toolCallId": call_id}
            )
            self.asked = True  # the run ends now, waiting for the decision (its result follows)
        return out

    def _on_custom(self, event: Any) -> Sequence[Item]:
        name = event.name
        if not isinstance(name, str) or not name:
            raise MalformedEvent("a custom event needs a 'name'")
        fields = self._fields(event)
        data = {k: v for k, v in fields.items() if k not in _CUSTOM_ENVELOPE}
        return [*self.begin(), {"type": f"data-{name}", "data": data}]
