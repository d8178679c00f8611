"""agent-ops V2 events → UI chunks. Mapping and reasons: ``protocol_specs/agent_ops_v2.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol_specs.agent_ops_v2 import FINALIZE_REASONS, HYDRATION_EVENTS
from translators.base import (
    Chunk,
    Translator,
    TranslatorOptions,
    close_request,
    error_message,
    optional_str,
    require_str,
)
from translators.guard import CloseReason

__all__ = ["AgentOpsV2Translator"]


@dataclass(slots=True)
class _Call:
    name: str
    #: ``tool-input-available`` was sent (the input is known).
    has_input: bool = False
    settled: bool = False


class AgentOpsV2Translator(Translator):
    dialect = "agent-ops-v2"
    summary = "agent-ops V2 session backend events (WebSocket)"
    HANDLERS = {
        "message.create": "_on_create",
        "message.part.text-delta": "_on_text_delta",
        "chunk": "_on_legacy_chunk",
        "message.part.tool-update": "_on_tool_update",
        "message.finalize": "_on_finalize",
        "complete": "_on_complete",
        "agentStatus": "_on_agent_status",
        "error": "_on_error",
        "question": "_on_question",
        "status": "_on_status",
        **{name: "_on_hydration" for name in HYDRATION_EVENTS},
    }

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        #: Tool calls of this stream by ``callId``.
        self._calls: dict[str, _Call] = {}
        self._turns = 0
        #: Text streamed in the current turn, and whether any came after the last tool.
        self._turn_text: list[str] = []
        self._text_since_tool = False

    # -- turn framing ----------------------------------------------------------------------------

    def _on_create(self, event: dict[str, Any]) -> list[Chunk]:
        self._turns += 1
        self._turn_text = []
        self._text_since_tool = False
        if self._turns > 1:
            return [*self.end_parts(), {"type": "start-step"}]
        metadata = {
            k: event[k]
            for k in ("turnId", "channelType", "channelId")
            if isinstance(event.get(k), str)
        }
        if self.guard.started:  # e.g. an agentStatus came first: the metadata is what is left
            head: list[Chunk] = (
                [{"type": "message-metadata", "messageMetadata": metadata}] if metadata else []
            )
            return [*head, {"type": "start-step"}]
        start: Chunk = {"type": "start"}
        if metadata:
            start["messageMetadata"] = metadata
        return [start, {"type": "start-step"}]

    def _on_text_delta(self, event: dict[str, Any]) -> list[Chunk]:
        delta = require_str(event, "delta")
        if not delta:
            return []
        self._turn_text.append(delta)
        self._text_since_tool = True
        return self.text_delta(delta)

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        if event.get("type") != "message.part.text-delta":
            return None
        delta = event.get("delta")
        if type(delta) is not str or not delta:
            return None
        self._turn_text.append(delta)
        self._text_since_tool = True
        return delta

    def _on_legacy_chunk(self, event: dict[str, Any]) -> list[Chunk]:
        return self._on_text_delta({"delta": require_str(event, "content")})

    def _on_finalize(self, event: dict[str, Any]) -> list[Chunk]:
        reason = optional_str(event, "reason") or "end_turn"
        out = self._final_text(optional_str(event, "finalText"))
        out += self.end_parts()
        if reason in FINALIZE_REASONS and FINALIZE_REASONS[reason] is None:
            text = error_message(event.get("error"), "The agent reported an error.")
            out.append(close_request(CloseReason.UPSTREAM_ERROR, text))
            return out
        finish_reason = FINALIZE_REASONS.get(reason, "other")
        if finish_reason == "interrupted":
            out.append(close_request(CloseReason.ABORTED, finish_reason="interrupted"))
        else:
            out.append(close_request(CloseReason.COMPLETED, finish_reason=finish_reason))
        return out

    def _final_text(self, final_text: str | None) -> list[Chunk]:
        """``finalText`` only when it was not streamed (see the mapping table)."""
        if not final_text or self._text_since_tool:
            return []
        if "".join(self._turn_text).endswith(final_text):
            return []
        self.stats["final-text-used"] += 1
        return [*self.text_delta(final_text), *self.end_text()]

    def _on_complete(self, event: dict[str, Any]) -> list[Chunk]:
        return [*self.end_parts(), close_request(CloseReason.COMPLETED, finish_reason="stop")]

    def _on_error(self, event: dict[str, Any]) -> list[Chunk]:
        text = error_message(event.get("error") or event.get("message"), "The agent failed.")
        return [close_request(CloseReason.UPSTREAM_ERROR, text)]

    # -- tools -----------------------------------------------------------------------------------

    def _on_tool_update(self, event: dict[str, Any]) -> list[Chunk]:
        call_id = require_str(event, "callId")
        status = require_str(event, "status")
        name = optional_str(event, "toolName")
        args = event.get("args")
        out = self.end_text()
        self._text_since_tool = False
        call = self._calls.get(call_id)
        if call is None:
            call = self._calls[call_id] = _Call(name or "unknown")
            out.append(
                {
                    "type": "tool-input-start",
                    "toolCallId": call_id,
                    "toolName": call.name,
                    **self.tool_flags(providerExecuted=True),
                }
            )
        if call.settled:
            self.stats["tool-update-after-settled"] += 1
            return out
        if status == "pending":
            if args and isinstance(args, dict) and not call.has_input:
                out.append(self._input_available(call_id, call, args))
            return out
        if status not in ("running", "completed", "error"):
            self.stats[f"unknown-tool-status:{status}"] += 1
            return out
        if not call.has_input:
            out.append(self._input_available(call_id, call, args if args is not None else {}))
        if status == "completed":
            call.settled = True
            out.append(
                {
                    "type": "tool-output-available",
                    "toolCallId": call_id,
                    "output": event.get("result"),
                    **self.tool_flags(providerExecuted=True),
                }
            )
        elif status == "error":
            call.settled = True
            out.append(
                {
                    "type": "tool-output-error",
                    "toolCallId": call_id,
                    "errorText": error_message(event.get("error"), "The tool failed."),
                    **self.tool_flags(providerExecuted=True),
                }
            )
        return out

    def _input_available(self, call_id: str, call: _Call, args: Any) -> Chunk:
        call.has_input = True
        return {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": call.name,
            "input": args,
            **self.tool_flags(providerExecuted=True),
        }

    # -- side channels ---------------------------------------------------------------------------

    def _on_agent_status(self, event: dict[str, Any]) -> list[Chunk]:
        data = {"status": require_str(event, "status")}
        detail = event.get("detail")
        if detail is not None:
            data["detail"] = detail
        return [{"type": "data-agent-status", "data": data, "transient": True}]

    def _on_question(self, event: dict[str, Any]) -> list[Chunk]:
        data = {k: v for k, v in event.items() if k != "type"}
        chunk: Chunk = {"type": "data-question", "data": data}
        question_id = event.get("questionId", event.get("id"))
        if isinstance(question_id, str):
            chunk["id"] = question_id
        return [*self.end_text(), chunk]

    def _on_status(self, event: dict[str, Any]) -> list[Chunk]:
        data = {k: v for k, v in event.items() if k != "type"}
        return [{"type": "data-session-status", "data": data, "transient": True}]

    def _on_hydration(self, event: dict[str, Any]) -> list[Chunk]:
        self.stats["hydration"] += 1
        return []
