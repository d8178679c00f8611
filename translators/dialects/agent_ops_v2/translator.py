"""The ``agent-ops-v2`` translator: upstream events → UI chunks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chunkbridge.kit import (
    AGENT_ERROR,
    TOOL_ERROR,
    Chunk,
    CloseReason,
    CloseRequest,
    Item,
    Translator,
    TranslatorOptions,
    error_message,
    join_surrogates,
    optional_str,
    require_str,
)
from chunkbridge.protocol_specs import agent_ops_v2 as spec
from chunkbridge.protocol_specs.agent_ops_v2 import FINALIZE_REASONS, HYDRATION_EVENTS


@dataclass(slots=True)
class _Call:
    name: str
    #: ``tool-input-available`` was sent (the input is known).
    has_input: bool = False
    settled: bool = False


class AgentOpsV2Translator(Translator):
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
        #: ``turnId`` of the current turn (a repeated ``message.create`` for it is bookkeeping).
        self._turn_id: str | None = None
        #: Text streamed in the current turn, and whether any came after the last tool.
        self._turn_text: list[str] = []
        self._text_since_tool = False

    # -- turn framing ----------------------------------------------------------------------------

    def _on_create(self, event: dict[str, Any]) -> Sequence[Item]:
        turn_id = optional_str(event, "turnId")
        if turn_id is not None and turn_id == self._turn_id:
            self.stats["repeated-message-create"] += 1  # no new turn: nothing to split
            return []
        self._turn_id = turn_id
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
        return self.begin(metadata=metadata)

    def _on_text_delta(self, event: dict[str, Any]) -> Sequence[Item]:
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

    def _on_legacy_chunk(self, event: dict[str, Any]) -> Sequence[Item]:
        return self._on_text_delta({"delta": require_str(event, "content")})

    def _on_finalize(self, event: dict[str, Any]) -> Sequence[Item]:
        reason = optional_str(event, "reason") or "end_turn"
        out: list[Item] = [*self._final_text(optional_str(event, "finalText"))]
        out += self.end_parts()
        if reason in FINALIZE_REASONS and FINALIZE_REASONS[reason] is None:
            text = error_message(event.get("error"), "The agent reported an error.")
            out.append(CloseRequest(CloseReason.UPSTREAM_ERROR, text))
            return out
        finish_reason = self.finish_reason_after_asking(FINALIZE_REASONS.get(reason) or "other")
        if finish_reason == "interrupted":
            out.append(CloseRequest(CloseReason.ABORTED, finish_reason="interrupted"))
        else:
            out.append(CloseRequest(CloseReason.COMPLETED, finish_reason=finish_reason))
        return out

    def _final_text(self, final_text: str | None) -> list[Chunk]:
        """``finalText`` only when it was not streamed (see the mapping table)."""
        if not final_text or self._text_since_tool:
            return []
        if join_surrogates("".join(self._turn_text)).endswith(join_surrogates(final_text)):
            return []
        self.stats["final-text-used"] += 1
        return [*self.text_delta(final_text), *self.end_text()]

    def _on_complete(self, event: dict[str, Any]) -> Sequence[Item]:
        return [*self.end_parts(), self._completed()]

    def _completed(self) -> CloseRequest:
        """The agent's own end (``stop``, or ``tool-calls`` when it asked and still waits)."""
        return CloseRequest(
            CloseReason.COMPLETED, finish_reason=self.finish_reason_after_asking("stop")
        )

    def _on_error(self, event: dict[str, Any]) -> Sequence[Item]:
        text = error_message(event.get("error") or event.get("message"), AGENT_ERROR)
        return [CloseRequest(CloseReason.UPSTREAM_ERROR, text)]

    # -- tools -----------------------------------------------------------------------------------

    def _on_tool_update(self, event: dict[str, Any]) -> Sequence[Item]:
        call_id = require_str(event, "callId")
        status = require_str(event, "status")
        name = optional_str(event, "toolName")
        args = event.get("args")
        out = self._tool_chunks(call_id, status, name, args, event)
        if not out:  # a repeated or late update: no content, so the text part goes on
            return out
        self._text_since_tool = False
        return [*self.end_text(), *out]

    def _tool_chunks(
        self, call_id: str, status: str, name: str | None, args: Any, event: dict[str, Any]
    ) -> list[Item]:
        out: list[Item] = []
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
        if status == spec.APPROVAL_STATUS:
            return self._approval_request(call_id, call, args, event, out)
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
                    "errorText": error_message(event.get("error"), TOOL_ERROR),
                    **self.tool_flags(providerExecuted=True),
                }
            )
        return out

    def _approval_request(
        self, call_id: str, call: _Call, args: Any, event: dict[str, Any], out: list[Item]
    ) -> list[Item]:
        """The backend waits for the user's approval: the request, and the turn ends (the
        socket is closed without the abort frame, like a question)."""
        if not call.has_input:
            out.append(self._input_available(call_id, call, args if args is not None else {}))
        request: Chunk = {
            "type": "tool-approval-request",
            "approvalId": optional_str(event, "approvalId") or call_id,
            "toolCallId": call_id,
        }
        reason = optional_str(event, "reason")
        if reason:
            request["reason"] = reason
        return [*out, request, self.await_answer()]

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

    def _on_agent_status(self, event: dict[str, Any]) -> Sequence[Item]:
        status = require_str(event, "status")
        data = {"status": status}
        detail = event.get("detail")
        if detail is not None:
            data["detail"] = detail
        out: list[Item] = [{"type": "data-agent-status", "data": data, "transient": True}]
        if self.asked and status in spec.WAITING_STATUSES:
            # It asked and says it waits for the answer: the turn is over now.
            return [*out, *self.end_parts(), self._completed()]
        if self.asked and status in spec.BUSY_STATUSES:
            return [*out, *self.going_on()]  # it asked in passing and works on
        if status == "idle" and self._turns:
            # The agent went idle: its turn is over even if neither message.finalize nor
            # complete follows (the session socket stays open, so nothing else would end it).
            self.stats["ended-by-idle"] += 1
            out += [*self.end_parts(), self._completed()]
        return out

    def _on_question(self, event: dict[str, Any]) -> Sequence[Item]:
        """The agent asks: a client-side tool call the app answers; the turn ends when the
        agent waits (see the spec module)."""
        question_id = event.get("questionId", event.get("id"))
        if not isinstance(question_id, str) or not question_id:
            question_id = self.ids("question")
        data = {k: v for k, v in event.items() if k != "type"}
        # the text part stays open: an agent asking in passing goes on with its sentence
        return [*self.question(question_id, data), self.await_answer()]

    def _on_status(self, event: dict[str, Any]) -> Sequence[Item]:
        data = {k: v for k, v in event.items() if k != "type"}
        return [{"type": "data-session-status", "data": data, "transient": True}]

    def _on_hydration(self, event: dict[str, Any]) -> Sequence[Item]:
        self.stats["hydration"] += 1
        return []
