"""The ``pi-agent`` translator: upstream events → UI chunks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from chunkbridge.kit import (
    TOOL_ERROR,
    Chunk,
    CloseReason,
    CloseRequest,
    IndexedParts,
    Item,
    MalformedEvent,
    StreamedToolCalls,
    Translator,
    TranslatorOptions,
    error_message,
    json_text,
    optional_str,
    provider_metadata,
    require_dict,
    require_str,
    usage_metadata,
)
from chunkbridge.protocol_specs import pi_agent as spec
from chunkbridge.protocol_specs.pi_agent import STOP_REASONS, USAGE_FIELDS

_PROVIDER = "pi"


class PiAgentTranslator(Translator):
    HANDLERS = {
        "agent_start": "_on_agent_start",
        "agent_end": "_on_agent_end",
        "turn_start": "_on_turn_start",
        "turn_end": "_on_turn_end",
        "message_start": "_on_message_start",
        "message_update": "_on_message_update",
        "message_end": "_on_message_end",
        "tool_execution_start": "_on_tool_start",
        "tool_execution_update": "_on_tool_update",
        "tool_execution_end": "_on_tool_end",
        "response": "_on_response",
        "extension_ui_request": "_on_ui_request",
    }

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        self._parts = IndexedParts(self.ids)
        self._tools = StreamedToolCalls(self.ids, self.tool_flags())
        self._in_step = False
        #: The assistant message under way: its blocks by contentIndex, and whether it streamed.
        self._message = 0
        self._block_kinds: dict[int, str] = {}
        self._streamed = False
        #: Calls whose input was sent (streamed, or whole at message end / execution start).
        self._calls: set[str] = set()
        #: Calls announced and not ended, oldest first (what a ``confirm`` is about).
        self._open_calls: dict[str, None] = {}
        self._stop_reason: str | None = None
        self._usage: dict[str, int] = {}
        #: pi's turns ended, and user messages seen, so far: a user message after either is a
        #: steer landing, never the prompt (pi also takes a steer before its first model call).
        self._turns_ended = 0
        self._users = 0

    # -- the run ---------------------------------------------------------------------------------

    def _step(self) -> list[Chunk]:
        out = self.begin(step=False)
        if not self._in_step:
            self._in_step = True
            out.append({"type": "start-step"})
        return out

    def _on_agent_start(self, event: dict[str, Any]) -> Sequence[Item]:
        return self.begin(step=False)  # a retry's second agent_start continues the same answer

    def _on_turn_start(self, event: dict[str, Any]) -> Sequence[Item]:
        # The step opens with the turn's first assistant message, not here: a turn that opens
        # with a steered user message belongs to the next answer (:meth:`_on_message_start`).
        return self.begin(step=False)

    def _on_turn_end(self, event: dict[str, Any]) -> Sequence[Item]:
        self._turns_ended += 1
        return self._end_step()

    def _end_step(self) -> list[Item]:
        """The open parts ended, calls completed, the step finished (when one is open)."""
        out: list[Item] = [*self._parts.end_all(), *self._tools.complete()]
        if self._in_step:
            self._in_step = False
            out.append({"type": "finish-step"})
        return out

    def _on_agent_end(self, event: dict[str, Any]) -> Sequence[Item]:
        if event.get("willRetry") is True:
            self.stats["retry"] += 1
            return []
        out: list[Item] = [*self.begin(step=False), *self._end_step()]
        reason = self._stop_reason
        out += self.finish(self._finish_reason(), usage=self._usage, step=False, stopReason=reason)
        return out

    def _finish_reason(self) -> str:
        reason = self._stop_reason
        finish = STOP_REASONS.get(reason, "other") if reason is not None else "stop"
        return self.finish_reason_after_asking(finish)

    def _on_response(self, event: dict[str, Any]) -> Sequence[Item]:
        if event.get("success") is False and event.get("command") == "steer":
            # pi refused the steered message (an extension command…): the answer goes on, and
            # the message waits for the run's end as a queued one
            self.steering = None
            self.stats["steer-refused"] += 1
            return []
        if event.get("success") is False:
            text = error_message(event.get("error"), "The agent refused the command.")
            return [CloseRequest(CloseReason.UPSTREAM_ERROR, text)]
        self.stats["command-accepted"] += 1
        return []

    # -- messages --------------------------------------------------------------------------------

    @staticmethod
    def _assistant(event: dict[str, Any]) -> dict[str, Any] | None:
        message = require_dict(event.get("message"), "'message'")
        return message if message.get("role") == "assistant" else None

    def _on_message_start(self, event: dict[str, Any]) -> Sequence[Item]:
        if self._assistant(event) is None:
            if not _is_user(event):
                return []  # a tool result: the agent's own bookkeeping
            self._users += 1
            if self.steering is not None and (self._turns_ended or self._users > 1):
                return self._steered_here()
            return []  # the user's prompt
        self._message += 1
        self._block_kinds = {}
        self._streamed = False
        return self._step()

    def _steered_here(self) -> list[Item]:
        """pi took the steered message after a turn (its tool batch done): the answer ends, the
        next turn — this message's answer — is the next one's."""
        out: list[Item] = [*self.begin(step=False), *self._end_step()]
        reason = self._stop_reason
        return [*out, *self.steered(self._finish_reason(), usage=self._usage, stopReason=reason)]

    def _key(self, index: Any) -> tuple[int, int]:
        if type(index) is not int:
            raise MalformedEvent("'contentIndex' must be an integer")
        return (self._message, index)

    def _on_message_update(self, event: dict[str, Any]) -> Sequence[Item]:
        update = require_dict(event.get("assistantMessageEvent"), "'assistantMessageEvent'")
        kind = require_str(update, "type")
        out: list[Item] = [*self._step()]
        if kind in ("start", "done"):
            return out
        if kind == "error":
            failed = update.get("error")
            text = failed.get("errorMessage") if isinstance(failed, dict) else None
            return [CloseRequest(CloseReason.UPSTREAM_ERROR, text or "The model call failed.")]
        block, _, phase = kind.partition("_")
        if block not in ("text", "thinking", "toolcall") or phase not in ("start", "delta", "end"):
            return [*out, *self.unknown(f"message_update:{kind}", update)]
        self._streamed = True
        key = self._key(update.get("contentIndex"))
        if block == "toolcall":
            return [*out, *self._toolcall(phase, key, update, event)]
        part: Literal["text", "reasoning"] = "text" if block == "text" else "reasoning"
        # Parts open with their first text: a block that stays empty (a failed call's) is not
        # shown, unless its end carries something to keep (a redacted block's signature).
        if phase == "delta":
            delta = require_str(update, "delta")
            if delta:
                out += self._parts.delta(key, part, delta)
        elif phase == "end":
            meta = self._block_metadata(event, key[1])
            if self._parts.part_id(key) is None and meta:
                out += self._parts.start(key, part)
            out += self._parts.end(key, meta)
        return out

    def _block_metadata(self, event: dict[str, Any], index: int) -> dict[str, Any] | None:
        """A thinking block's signature, from the partial message when it is there."""
        partial = event.get("message")
        update = event.get("assistantMessageEvent") or {}
        partial = update.get("partial") or partial
        content = partial.get("content") if isinstance(partial, dict) else None
        block = content[index] if isinstance(content, list) and index < len(content) else None
        if not isinstance(block, dict):
            return None
        return provider_metadata(
            _PROVIDER,
            thinkingSignature=block.get("thinkingSignature"),
            textSignature=block.get("textSignature"),
            redacted=block.get("redacted") or None,
        )

    def _toolcall(
        self, phase: str, key: tuple[int, int], update: dict[str, Any], event: dict[str, Any]
    ) -> list[Chunk]:
        if phase == "start":
            block = self._partial_block(update, event, key[1])
            call_id = update.get("id") or block.get("id")
            name = update.get("toolName") or block.get("name")
            return self._tools.delta(
                key,
                call_id=call_id if isinstance(call_id, str) else None,
                name=name if isinstance(name, str) else None,
            )
        if phase == "delta":
            return self._tools.delta(key, arguments=require_str(update, "delta"))
        call = update.get("toolCall")
        out: list[Chunk] = []
        if isinstance(call, dict):
            out += self._tools.delta(
                key,
                call_id=call.get("id") if isinstance(call.get("id"), str) else None,
                name=call.get("name") if isinstance(call.get("name"), str) else None,
            )
        done = self._tools.complete(key)
        for chunk in done:
            if isinstance(call, dict) and isinstance(call.get("arguments"), dict):
                # pi's own parse of the arguments is the truth (it repairs partial JSON)
                chunk.pop("errorText", None)
                chunk["type"], chunk["input"] = "tool-input-available", call["arguments"]
            self._announce(chunk["toolCallId"])
        return [*out, *done]

    @staticmethod
    def _partial_block(update: dict[str, Any], event: dict[str, Any], index: int) -> dict[str, Any]:
        partial = update.get("partial") or event.get("message")
        content = partial.get("content") if isinstance(partial, dict) else None
        if isinstance(content, list) and index < len(content) and isinstance(content[index], dict):
            block: dict[str, Any] = content[index]
            return block
        return {}

    def _on_message_end(self, event: dict[str, Any]) -> Sequence[Item]:
        message = self._assistant(event)
        if message is None:
            return []
        out: list[Item] = [*self._step()]
        if not self._streamed:
            out += self._whole_message(message)
        out += self._parts.end_all()
        out += self._tools.complete()
        reason = message.get("stopReason")
        if isinstance(reason, str):
            self._stop_reason = reason
        usage = usage_metadata(message.get("usage"), USAGE_FIELDS)
        for name, count in usage.items():
            self._usage[name] = self._usage.get(name, 0) + count
        if reason == "error":
            text = message.get("errorMessage")
            text = text if isinstance(text, str) and text else "The model call failed."
            return [*out, CloseRequest(CloseReason.UPSTREAM_ERROR, text)]
        return out

    def _whole_message(self, message: dict[str, Any]) -> list[Chunk]:
        """A message that arrived without updates (a server that forwards only message ends)."""
        out: list[Chunk] = []
        content = message.get("content")
        for index, block in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(block, dict):
                continue
            key = (self._message, index)
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
                out += self._parts.delta(key, "text", block["text"])
            elif (
                kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]
            ):
                out += self._parts.delta(key, "reasoning", block["thinking"])
            elif kind == "toolCall":
                out += self._tools.delta(
                    key,
                    call_id=block.get("id"),
                    name=block.get("name"),
                    arguments=json_text(block.get("arguments") or {}),
                )
                for chunk in self._tools.complete(key):
                    self._announce(chunk["toolCallId"])
                    out.append(chunk)
                continue
            else:
                continue
            out += self._parts.end(key)
        return out

    # -- tool execution ----------------------------------------------------------------------------

    def _on_tool_start(self, event: dict[str, Any]) -> Sequence[Item]:
        call_id, name = require_str(event, "toolCallId"), require_str(event, "toolName")
        out: list[Item] = [*self._step()]
        if call_id not in self._calls:  # never streamed: announce it whole
            self._announce(call_id)
            base = {"toolCallId": call_id, "toolName": name, **self.tool_flags()}
            out.append({"type": "tool-input-start", **base})
            out.append({"type": "tool-input-available", **base, "input": event.get("args") or {}})
        return out

    def _on_tool_update(self, event: dict[str, Any]) -> Sequence[Item]:
        call_id = require_str(event, "toolCallId")
        if call_id not in self._calls:
            return list(self._on_tool_start(event))
        output = event.get("partialResult")
        flags = self.tool_flags(providerExecuted=True)
        return [
            {
                "type": "tool-output-available",
                "toolCallId": call_id,
                "output": output,
                "preliminary": True,
                **flags,
            }
        ]

    def _announce(self, call_id: str) -> None:
        self._calls.add(call_id)
        self._open_calls[call_id] = None

    def _on_tool_end(self, event: dict[str, Any]) -> Sequence[Item]:
        call_id = require_str(event, "toolCallId")
        out: list[Item] = []
        if call_id not in self._calls:
            out += self._on_tool_start(event)
        self._open_calls.pop(call_id, None)
        result = event.get("result")
        flags = self.tool_flags(providerExecuted=True)
        if event.get("isError") is True:
            text = _result_text(result) or TOOL_ERROR
            out.append(
                {"type": "tool-output-error", "toolCallId": call_id, "errorText": text, **flags}
            )
        else:
            out.append(
                {"type": "tool-output-available", "toolCallId": call_id, "output": result, **flags}
            )
        return out

    # -- the human in the loop (RPC extension UI) -------------------------------------------------

    def _on_ui_request(self, event: dict[str, Any]) -> Sequence[Item]:
        """An extension asks the user (see the spec module): ``confirm`` while a tool call is
        open is that call's approval, other dialogs are questions; both end the turn, the
        agent waiting for the answer. The rest (notify, status, widgets) is shown only."""
        request_id = require_str(event, "id")
        method = optional_str(event, "method") or ""
        fields = {k: v for k, v in event.items() if k not in ("type", "id")}
        if method not in spec.UI_DIALOGS:
            return [
                *self.begin(step=False),
                {"type": "data-pi-ui", "data": fields, "transient": True},
            ]
        title = optional_str(event, "title")
        message = optional_str(event, "message")
        out: list[Item] = [*self._step(), *self._parts.end_all(), *self._tools.complete()]
        if method == "confirm" and self._open_calls:
            request: Chunk = {
                "type": "tool-approval-request",
                "approvalId": request_id,
                "toolCallId": next(reversed(self._open_calls)),
            }
            reason = ": ".join(t for t in (title, message) if t)
            if reason:
                request["reason"] = reason
            out.append(request)
        else:
            question = {"question": title or message or "The agent needs your input.", **fields}
            if method == "confirm":
                question.setdefault("options", ["yes", "no"])
            out += self.question(request_id, question)
        out.append(self.await_answer())
        return out


def _is_user(event: dict[str, Any]) -> bool:
    message = event.get("message")
    return isinstance(message, dict) and message.get("role") == "user"


def _result_text(result: Any) -> str:
    content = result.get("content") if isinstance(result, dict) else None
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return error_message(result, "")
