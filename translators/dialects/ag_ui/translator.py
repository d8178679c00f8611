"""The ``ag-ui`` translator: upstream events → UI chunks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from chunkbridge.kit import (
    AGENT_ERROR,
    Chunk,
    CloseReason,
    CloseRequest,
    IndexedParts,
    Item,
    MalformedEvent,
    Translator,
    TranslatorOptions,
    error_message,
    flat_text_delta,
    optional_str,
    require_str,
)
from chunkbridge.protocol_specs import ag_ui as spec
from chunkbridge.translators.dialects.ag_ui.calls import Calls
from chunkbridge.translators.dialects.ag_ui.documents import Documents
from chunkbridge.translators.dialects.ag_ui.request import AgUiSettings

_PROVIDER = spec.METADATA_KEY
_PartKind = Literal["text", "reasoning"]
#: The part key of the one reasoning part a 0.x ``THINKING_TEXT_MESSAGE_*`` run has.
_THINKING = "thinking"
#: What a plain text content event holds (anything else takes the general path).
_FAST_KEYS = frozenset({"type", "messageId", "delta", "timestamp"})
_CHUNK_EVENTS = frozenset({"TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK"})


class AgUiTranslator(Translator):
    HANDLERS = {
        "RUN_STARTED": "_on_run_started",
        "RUN_FINISHED": "_on_run_finished",
        "RUN_ERROR": "_on_run_error",
        "STEP_STARTED": "_on_step",
        "STEP_FINISHED": "_on_step",
        "TEXT_MESSAGE_START": "_on_nothing",
        "TEXT_MESSAGE_CONTENT": "_on_text",
        "TEXT_MESSAGE_END": "_on_text_end",
        "TEXT_MESSAGE_CHUNK": "_on_text_chunk",
        "REASONING_START": "_on_nothing",
        "REASONING_END": "_on_reasoning_end",
        "REASONING_MESSAGE_START": "_on_nothing",
        "REASONING_MESSAGE_CONTENT": "_on_reasoning",
        "REASONING_MESSAGE_END": "_on_reasoning_message_end",
        "REASONING_MESSAGE_CHUNK": "_on_reasoning_chunk",
        "REASONING_ENCRYPTED_VALUE": "_on_encrypted_value",
        "TOOL_CALL_START": "_on_tool_start",
        "TOOL_CALL_ARGS": "_on_tool_args",
        "TOOL_CALL_END": "_on_tool_end",
        "TOOL_CALL_CHUNK": "_on_tool_chunk",
        "TOOL_CALL_RESULT": "_on_tool_result",
        "STATE_SNAPSHOT": "_on_state_snapshot",
        "STATE_DELTA": "_on_state_delta",
        "MESSAGES_SNAPSHOT": "_on_messages_snapshot",
        "ACTIVITY_SNAPSHOT": "_on_activity_snapshot",
        "ACTIVITY_DELTA": "_on_activity_delta",
        "CUSTOM": "_on_transient",
        "RAW": "_on_transient",
        "SUBAGENT_STARTED": "_on_subagent",
        "SUBAGENT_FINISHED": "_on_subagent",
        "SUBAGENT_ERROR": "_on_subagent",
    }

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        settings: AgUiSettings = self.options.settings or AgUiSettings()
        self._parts = IndexedParts(self.ids)
        #: Tools the request declared are the app's to run.
        self._calls = Calls(
            self.ids,
            frozenset(settings.tools),
            self.tool_flags(),
            self.tool_flags(providerExecuted=True),
        )
        #: A tool result came since the model's last content: content now is its next response.
        self._after_result = False
        self._documents = Documents()
        self._encrypted: dict[str, str] = {}
        #: The message a ``*_CHUNK`` event without an id continues, and its kind.
        self._chunk_message: str | None = None
        self._chunk_call: str | None = None
        self._thinking = 0
        self._fast_message: str | None = None

    def feed(self, event: Any) -> Sequence[Item]:
        if type(event) is dict and event.get("type") not in _CHUNK_EVENTS:
            closed = self._end_chunk_runs()
            if closed:
                return [*closed, *super().feed(event)]
        return super().feed(event)

    def event_type(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        if not isinstance(kind, str):
            return None
        return spec.LEGACY_THINKING.get(kind, kind)

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        kind = "TEXT_MESSAGE_CONTENT"
        return flat_text_delta(event, kind, "messageId", self._fast_message, _FAST_KEYS)

    # -- the run ---------------------------------------------------------------------------------

    def _on_run_started(self, event: dict[str, Any]) -> Sequence[Item]:
        if self.begun:
            return []
        for key in ("threadId", "runId"):
            value = optional_str(event, key)
            if value:
                self.metadata[key] = value
        return self.begin(metadata=dict(self.metadata))

    def _on_run_finished(self, event: dict[str, Any]) -> Sequence[Item]:
        out: list[Item] = [*self.begin()]
        outcome = event.get("outcome")
        outcome = outcome if isinstance(outcome, dict) else {"type": "success"}
        kind = outcome.get("type", "success")
        self.metadata["outcome"] = kind
        for key in ("result", "usage"):
            if event.get(key) is not None:
                self.metadata[key] = event[key]
        if self._calls.result_ids:
            self.metadata["toolMessageIds"] = dict(self._calls.result_ids)
        out += self._end_all()
        if kind == "interrupt":
            out += self._interrupts(outcome.get("interrupts"))
            finish = "tool-calls"
        elif kind == "cancelled":
            finish = "other"
        else:
            waiting = self._calls.waiting(outcome.get("pendingToolCallIds"))
            finish = "tool-calls" if waiting else "stop"
        out += self.finish(finish)
        return out

    def _interrupts(self, interrupts: Any) -> list[Chunk]:
        """The run waits for the app: approvals for interrupts on its tool calls, questions for
        the others (see the spec module)."""
        out: list[Chunk] = []
        for interrupt in interrupts if isinstance(interrupts, list) else []:
            if not isinstance(interrupt, dict) or not isinstance(interrupt.get("id"), str):
                self.stats["malformed-interrupt"] += 1
                continue
            text = optional_str(interrupt, "message") or optional_str(interrupt, "reason")
            call_id = interrupt.get("toolCallId")
            if isinstance(call_id, str) and call_id in self._calls:
                request: Chunk = {
                    "type": "tool-approval-request",
                    "approvalId": interrupt["id"],
                    "toolCallId": call_id,
                }
                if text:
                    request["reason"] = text
                out.append(request)
                continue
            question = {"question": text or "The agent needs your input."}
            question |= {
                k: interrupt[k]
                for k in ("reason", "responseSchema", "expiresAt", "metadata", "toolCallId")
                if interrupt.get(k) is not None
            }
            out += self.question(interrupt["id"], question)
        return out

    def _on_run_error(self, event: dict[str, Any]) -> Sequence[Item]:
        text = error_message(event.get("message"), AGENT_ERROR)
        code = event.get("code")
        if isinstance(code, str) and code and code not in text:
            text = f"{code}: {text}"
        return [CloseRequest(CloseReason.UPSTREAM_ERROR, text)]

    def _end_all(self) -> list[Chunk]:
        return [*self._end_chunk_runs(), *self._calls.complete(), *self._parts.end_all()]

    def _response_begins(self) -> list[Chunk]:
        """Content after a tool result is the model's next response, and so the next step:
        AG-UI has no step events, and a model answers the results of its calls in a new
        response (``start-step``, as the AI SDK writes it; a history sent back in steps gives
        the agent the exchange as it happened)."""
        if not self._after_result:
            return []
        self._after_result = False
        self.text_id = self._fast_message = None
        out = [*self._calls.complete(), *self._parts.end_all()]
        return [*out, {"type": "finish-step"}, {"type": "start-step"}]

    def _on_nothing(self, event: dict[str, Any]) -> Sequence[Item]:
        self.stats["no-content-event"] += 1
        return self.begin()

    # -- text and reasoning ----------------------------------------------------------------------

    def _on_text(self, event: dict[str, Any]) -> Sequence[Item]:
        message = require_str(event, "messageId")
        delta = require_str(event, "delta")
        if event.get("subagentRunId") is not None:
            return self._subagent_text(message, delta, event["subagentRunId"])
        if not delta:
            return []
        out = [*self.begin(), *self._opening(message, "text", message)]
        out += self._parts.delta(message, "text", delta)
        self.text_id, self._fast_message = self._parts.part_id(message), message
        return out

    def _opening(self, key: str, kind: _PartKind, message: str | None) -> list[Chunk]:
        """A text or reasoning part about to receive content: opened, when it is not, in the
        model's current response, with the agent's id of its message (the next request sends
        that message back under it)."""
        if self._parts.part_id(key) is not None:
            return []
        meta = {_PROVIDER: {"messageId": message}} if message else None
        return [*self._response_begins(), *self._parts.start(key, kind, meta)]

    def _subagent_text(self, message: str, delta: str, run_id: Any) -> list[Chunk]:
        """A sub-agent's words are not the answer: a reasoning part marked with its run id."""
        if not delta:
            return []
        out = self.begin()
        if self._parts.part_id(message) is None:
            out += self._parts.start(message, "reasoning", {_PROVIDER: {"subagentRunId": run_id}})
        return [*out, *self._parts.delta(message, "reasoning", delta)]

    def _on_text_end(self, event: dict[str, Any]) -> Sequence[Item]:
        message = require_str(event, "messageId")
        if message == self._fast_message:
            self.text_id = self._fast_message = None
        return self._parts.end(message)

    def _on_text_chunk(self, event: dict[str, Any]) -> Sequence[Item]:
        self.text_id = self._fast_message = None  # a chunk run ends on other events: no fast path
        given = optional_str(event, "messageId")
        message = given or self._chunk_message or self.ids("message")
        out: list[Item] = []
        if self._chunk_message is not None and message != self._chunk_message:
            out += self._parts.end(self._chunk_message)
        self._chunk_message = message
        delta = optional_str(event, "delta")
        if delta:
            out += [*self.begin(), *self._opening(message, "text", given)]
            out += self._parts.delta(message, "text", delta)
        return out

    def _reasoning_key(self, event: dict[str, Any]) -> str:
        message = optional_str(event, "messageId")
        return message or f"{_THINKING}-{self._thinking}"

    def _on_reasoning(self, event: dict[str, Any]) -> Sequence[Item]:
        delta = require_str(event, "delta")
        if not delta:
            return []
        key = self._reasoning_key(event)
        out = [*self.begin(), *self._opening(key, "reasoning", optional_str(event, "messageId"))]
        return [*out, *self._parts.delta(key, "reasoning", delta)]

    def _on_reasoning_chunk(self, event: dict[str, Any]) -> Sequence[Item]:
        return self._on_reasoning({**event, "delta": optional_str(event, "delta") or ""})

    def _on_reasoning_message_end(self, event: dict[str, Any]) -> Sequence[Item]:
        key = self._reasoning_key(event)
        encrypted = self._encrypted.pop(key, None)
        if not encrypted:
            return self._parts.end(key)
        # the end's metadata replaces the part's: the message id goes again
        message = optional_str(event, "messageId")
        ids = {"messageId": message} if message else {}
        return self._parts.end(key, {_PROVIDER: {**ids, "encryptedValue": encrypted}})

    def _on_reasoning_end(self, event: dict[str, Any]) -> Sequence[Item]:
        out = self._on_reasoning_message_end(event)
        if optional_str(event, "messageId") is None:
            self._thinking += 1  # the next 0.x THINKING_START opens a new part
        return out

    def _on_encrypted_value(self, event: dict[str, Any]) -> Sequence[Item]:
        entity = require_str(event, "entityId")
        value = require_str(event, "encryptedValue")
        if self._parts.part_id(entity) is not None:
            self._encrypted[entity] = value
            return []
        data = {k: v for k, v in event.items() if k in ("subtype", "entityId", "encryptedValue")}
        return [
            *self.begin(),
            {"type": "data-reasoning-encrypted", "data": data, "transient": True},
        ]

    # -- tools -----------------------------------------------------------------------------------

    def _on_tool_start(self, event: dict[str, Any]) -> Sequence[Item]:
        call_id, name = require_str(event, "toolCallId"), require_str(event, "toolCallName")
        parent = optional_str(event, "parentMessageId")
        out = [*self.begin(), *self._response_begins(), *self._parts.end_all()]
        self.text_id = self._fast_message = None
        return [*out, *self._calls.delta(call_id, name=name, parent=parent)]

    def _on_tool_args(self, event: dict[str, Any]) -> Sequence[Item]:
        call_id = require_str(event, "toolCallId")
        if call_id not in self._calls:
            raise MalformedEvent(f"arguments for a call never started ({call_id})")
        return self._calls.delta(call_id, arguments=require_str(event, "delta"))

    def _on_tool_end(self, event: dict[str, Any]) -> Sequence[Item]:
        return self._calls.complete(require_str(event, "toolCallId"))

    def _on_tool_chunk(self, event: dict[str, Any]) -> Sequence[Item]:
        self.text_id = self._fast_message = None
        call_id = optional_str(event, "toolCallId") or self._chunk_call
        name = optional_str(event, "toolCallName")
        parent = optional_str(event, "parentMessageId")
        out: list[Item] = [*self.begin()]
        if call_id is None:
            if name is None:
                raise MalformedEvent("a TOOL_CALL_CHUNK with neither a call id nor a name")
            call_id = self.ids("call")
        if self._chunk_call is not None and call_id != self._chunk_call:
            out += self._calls.complete(self._chunk_call)
        if call_id not in self._calls:
            out += self._response_begins()
        self._chunk_call = call_id
        arguments = optional_str(event, "delta")
        return [*out, *self._calls.delta(call_id, name=name, arguments=arguments, parent=parent)]

    def _end_chunk_runs(self) -> list[Chunk]:
        """A ``*_CHUNK`` run ends when another kind of event arrives (as AG-UI's client reads
        them)."""
        out: list[Chunk] = []
        if self._chunk_message is not None:
            out += self._parts.end(self._chunk_message)
            self._chunk_message = None
        if self._chunk_call is not None:
            out += self._calls.complete(self._chunk_call)
            self._chunk_call = None
        return out

    def _on_tool_result(self, event: dict[str, Any]) -> Sequence[Item]:
        call_id = require_str(event, "toolCallId")
        self._after_result = True
        return [*self.begin(), *self._calls.result(event, call_id)]

    # -- state, activities, steps and the rest ---------------------------------------------------

    def _on_state_snapshot(self, event: dict[str, Any]) -> Sequence[Item]:
        return [*self.begin(), self._documents.state_snapshot(event)]

    def _on_state_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        return [*self.begin(), self._documents.state_delta(event)]

    def _on_activity_snapshot(self, event: dict[str, Any]) -> Sequence[Item]:
        return [*self.begin(), self._documents.activity_snapshot(event)]

    def _on_activity_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        return [*self.begin(), self._documents.activity_delta(event)]

    def _on_step(self, event: dict[str, Any]) -> Sequence[Item]:
        name = require_str(event, "stepName")
        status = "started" if event["type"] == "STEP_STARTED" else "finished"
        part = {"type": "data-step", "id": name, "data": {"name": name, "status": status}}
        return [*self.begin(), part]

    def _on_subagent(self, event: dict[str, Any]) -> Sequence[Item]:
        return [*self.begin(), self._documents.subagent(event)]

    def _on_messages_snapshot(self, event: dict[str, Any]) -> Sequence[Item]:
        self._calls.snapshot(event.get("messages"))
        return self._on_transient(event)

    def _on_transient(self, event: dict[str, Any]) -> Sequence[Item]:
        kind = {"MESSAGES_SNAPSHOT": "messages-snapshot", "CUSTOM": "custom", "RAW": "raw"}
        data = {k: v for k, v in event.items() if k not in ("type", "timestamp")}
        part = {"type": f"data-{kind[event['type']]}", "data": data, "transient": True}
        return [*self.begin(), part]
