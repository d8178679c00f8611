"""The ``open-harness`` translator: upstream events → UI chunks."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from chunkbridge.kit import (
    AGENT_ERROR,
    TOOL_ERROR,
    Chunk,
    CloseReason,
    CloseRequest,
    Item,
    MalformedEvent,
    Translator,
    TranslatorOptions,
    error_message,
    optional_str,
)
from chunkbridge.protocol_specs.open_harness import (
    BOOKKEEPING_PREFIXES,
    FLOW_STATUS_ENDS,
    FLOW_STATUS_PART_ID,
)

_MISSING = object()


def _first(event: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in event:
            return event[key]
    return _MISSING


def _delta_text(event: dict[str, Any]) -> str:
    value = _first(event, "delta", "content", "text")
    if not isinstance(value, str):
        raise MalformedEvent("text delta has no string 'delta' or 'content'")
    return value


class OpenHarnessTranslator(Translator):
    HANDLERS = {
        "agent:text:delta": "_on_text_delta",
        "agent:thinking:delta": "_on_thinking_delta",
        "agent:text": "_on_text_complete",
        "agent:thinking": "_on_thinking_complete",
        "agent:tool": "_on_tool",
        "agent:start": "_on_bookkeeping",
        "agent:complete": "_on_agent_complete",
        "agent:error": "_on_error",
        "node:start": "_on_node_start",
        "node:complete": "_on_node_complete",
        "node:error": "_on_error",
        "flow:start": "_on_flow_status",
        "flow:status": "_on_flow_status",
        "flow:complete": "_on_flow_complete",
        "flow:error": "_on_error",
    }

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        super().__init__(options)
        self._flow_framed = False
        self._flow_name: str | None = None
        #: Tool calls awaiting their output, by id, and per tool name in arrival order (for
        #: split ``agent:tool`` events without ``toolCallId``).
        self._open_calls: dict[str, str] = {}
        self._open_by_name: dict[str, deque[str]] = {}
        #: Deltas streamed into the part that the next complete event would repeat.
        self._text_streamed = False
        self._thinking_streamed = False

    def event_type(self, event: dict[str, Any]) -> str | None:
        event_type = event.get("type")
        if isinstance(event_type, str) and event_type.startswith(BOOKKEEPING_PREFIXES):
            return "agent:start"  # routed to the bookkeeping handler
        return event_type if isinstance(event_type, str) else None

    # -- text and thinking -----------------------------------------------------------------------

    def _on_text_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        delta = _delta_text(event)
        if not delta:
            return []
        self._text_streamed = True
        return self.text_delta(delta)

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        if event.get("type") != "agent:text:delta":
            return None
        delta = event.get("delta", event.get("content"))
        if type(delta) is not str or not delta:
            return None
        self._text_streamed = True
        return delta

    def _on_thinking_delta(self, event: dict[str, Any]) -> Sequence[Item]:
        delta = _delta_text(event)
        if not delta:
            return []
        self._thinking_streamed = True
        return self.reasoning_delta(delta)

    def _on_text_complete(self, event: dict[str, Any]) -> Sequence[Item]:
        text = _delta_text(event)
        if self._text_streamed:
            self._text_streamed = False
            return self.end_text()
        self.stats["complete-text-used"] += 1
        return [*self.text_delta(text), *self.end_text()] if text else []

    def _on_thinking_complete(self, event: dict[str, Any]) -> Sequence[Item]:
        text = _delta_text(event)
        if self._thinking_streamed:
            self._thinking_streamed = False
            return self.end_reasoning()
        self.stats["complete-thinking-used"] += 1
        return [*self.reasoning_delta(text), *self.end_reasoning()] if text else []

    def _end_parts(self) -> list[Chunk]:
        self._text_streamed = self._thinking_streamed = False
        return self.end_parts()

    # -- tools -----------------------------------------------------------------------------------

    def _on_tool(self, event: dict[str, Any]) -> Sequence[Item]:
        name = optional_str(event, "toolName") or optional_str(event, "name") or "unknown"
        call_id = optional_str(event, "toolCallId")
        tool_input = _first(event, "toolInput", "input", "args")
        output = _first(event, "toolOutput", "output", "result")
        error = event.get("error")
        out = self._end_parts()
        if call_id is None and tool_input is _MISSING:
            queue = self._open_by_name.get(name)
            call_id = queue[0] if queue else None
        known = call_id is not None and call_id in self._open_calls
        if not known:
            call_id = call_id or self.ids("tool")
            out.append(
                {
                    "type": "tool-input-available",
                    "toolCallId": call_id,
                    "toolName": name,
                    "input": None if tool_input is _MISSING else tool_input,
                    **self.tool_flags(providerExecuted=True),
                }
            )
            self._open_calls[call_id] = name
            self._open_by_name.setdefault(name, deque()).append(call_id)
        assert call_id is not None
        if error is not None:
            out.append(
                {
                    "type": "tool-output-error",
                    "toolCallId": call_id,
                    "errorText": error_message(error, TOOL_ERROR),
                    **self.tool_flags(providerExecuted=True),
                }
            )
        elif output is not _MISSING:
            out.append(
                {
                    "type": "tool-output-available",
                    "toolCallId": call_id,
                    "output": output,
                    **self.tool_flags(providerExecuted=True),
                }
            )
        else:
            return out
        name = self._open_calls.pop(call_id)
        queue = self._open_by_name.get(name)
        if queue is not None and call_id in queue:
            queue.remove(call_id)
        return out

    # -- framing ---------------------------------------------------------------------------------

    def _on_bookkeeping(self, event: dict[str, Any]) -> Sequence[Item]:
        self.stats["bookkeeping"] += 1
        return []

    def _on_agent_complete(self, event: dict[str, Any]) -> Sequence[Item]:
        out: list[Item] = [*self._end_parts()]
        if not self._flow_framed:
            out.append(CloseRequest(CloseReason.COMPLETED, finish_reason="stop"))
        return out

    def _on_node_start(self, event: dict[str, Any]) -> Sequence[Item]:
        return [*self._end_parts(), {"type": "start-step"}]

    def _on_node_complete(self, event: dict[str, Any]) -> Sequence[Item]:
        out = self._end_parts()
        data = {"nodeId": event.get("nodeId"), "output": event.get("output")}
        out.append({"type": "data-node-output", "data": data})
        out.append({"type": "finish-step"})
        return out

    def _flow_status(self, status: str) -> Chunk:
        data = {"status": status, "flowName": self._flow_name}
        return {"type": "data-flow-status", "id": FLOW_STATUS_PART_ID, "data": data}

    def _on_flow_status(self, event: dict[str, Any]) -> Sequence[Item]:
        self._flow_framed = True
        self._flow_name = optional_str(event, "flowName") or self._flow_name
        default = "running" if event["type"] == "flow:start" else "unknown"
        status = optional_str(event, "status") or default
        end = FLOW_STATUS_ENDS.get(status.lower()) if event["type"] == "flow:status" else None
        if end is None:
            return [self._flow_status(status)]
        # A terminal status: the flow is over whether or not flow:complete follows.
        out: list[Item] = [*self._end_parts(), self._flow_status(status)]
        if end == "complete":
            out.append(CloseRequest(CloseReason.COMPLETED, finish_reason="stop"))
        elif end == "cancelled":
            out.append(CloseRequest(CloseReason.ABORTED, finish_reason="interrupted"))
        else:
            text = error_message(event.get("error", event.get("message")), "The flow failed.")
            out.append(CloseRequest(CloseReason.UPSTREAM_ERROR, text))
        return out

    def _on_flow_complete(self, event: dict[str, Any]) -> Sequence[Item]:
        self._flow_framed = True
        out: list[Item] = [*self._end_parts()]
        out.append(self._flow_status(optional_str(event, "status") or "complete"))
        out.append(CloseRequest(CloseReason.COMPLETED, finish_reason="stop"))
        return out

    def _on_error(self, event: dict[str, Any]) -> Sequence[Item]:
        text = error_message(event.get("error", event.get("message")), AGENT_ERROR)
        out: list[Item] = [*self._end_parts()]
        if event["type"] == "flow:error":
            out.append(self._flow_status("error"))
        out.append(CloseRequest(CloseReason.UPSTREAM_ERROR, text))
        return out
