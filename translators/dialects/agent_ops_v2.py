"""The ``agent-ops-v2`` dialect: the agent-ops V2 session backend over WebSocket.

Events → UI chunks (mapping and reasons: ``protocol_specs/agent_ops_v2.py``), the prompt and abort
frames, and the demo backend ``chunkbridge demo`` plays.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from chunkbridge.kit import (
    AnsweredCall,
    ApprovalAnswer,
    Chunk,
    CloseReason,
    CloseRequest,
    DemoStep,
    Dialect,
    Item,
    Pause,
    Translator,
    TranslatorOptions,
    TurnInput,
    WebSocketContract,
    error_message,
    join_surrogates,
    optional_str,
    require_str,
)
from chunkbridge.protocol_specs import agent_ops_v2 as spec
from chunkbridge.protocol_specs.agent_ops_v2 import FINALIZE_REASONS, HYDRATION_EVENTS
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL

__all__ = ["DIALECT", "AgentOpsV2Translator"]


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
        if self.started:  # e.g. an agentStatus came first: the metadata is what is left
            head: list[Chunk] = (
                [{"type": "message-metadata", "messageMetadata": metadata}] if metadata else []
            )
            return [*head, {"type": "start-step"}]
        start: Chunk = {"type": "start"}
        if metadata:
            start["messageMetadata"] = metadata
        return [start, {"type": "start-step"}]

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
        text = error_message(event.get("error") or event.get("message"), "The agent failed.")
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
                    "errorText": error_message(event.get("error"), "The tool failed."),
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
        return [
            *self.end_parts(),
            *self.question(question_id, data),
            self.await_answer(),
        ]

    def _on_status(self, event: dict[str, Any]) -> Sequence[Item]:
        data = {k: v for k, v in event.items() if k != "type"}
        return [{"type": "data-session-status", "data": data, "transient": True}]

    def _on_hydration(self, event: dict[str, Any]) -> Sequence[Item]:
        self.stats["hydration"] += 1
        return []


# -- the upstream contract -----------------------------------------------------------------------


def _prompt_frame(turn: TurnInput) -> dict[str, Any]:
    prompt = turn.require_prompt()
    attachments = [f.model_dump(exclude_none=True) for f in prompt.files]
    return spec.prompt_frame(prompt.text, prompt.message_id or turn.run_id, attachments)


def _regenerate_frame(turn: TurnInput) -> dict[str, Any]:
    return {**_prompt_frame(turn), "regenerate": True}


def _abort_frame(turn: TurnInput) -> dict[str, Any]:
    return dict(spec.ABORT_FRAME)


def _answer_frame(turn: TurnInput, call: AnsweredCall) -> dict[str, Any] | None:
    """The answer to one of the agent's questions (other client-side calls are not its)."""
    if call.tool_name != QUESTION_TOOL:
        return None
    return spec.answer_frame(call.tool_call_id, call.output, call.is_error)


def _approval_frame(turn: TurnInput, answer: ApprovalAnswer) -> dict[str, Any]:
    return spec.approval_frame(
        answer.approval_id, answer.tool_call_id, answer.approved, answer.reason
    )


# -- the demo backend (``chunkbridge demo``) -----------------------------------------------------

DEMO_DELAY = 0.03
DEMO_ANSWER = (
    "## What chunkbridge does\n\n"
    "It sits **between** your agent backend and any `useChat` app:\n\n"
    "1. the app POSTs the chat request,\n"
    "2. chunkbridge opens the session's WebSocket and sends the prompt,\n"
    "3. every upstream event becomes AI SDK UI message chunks.\n\n"
)
DEMO_AFTER_TOOL = "The search found **3 matches**. Ask me anything else to see another turn."
DEMO_RESULT = {"matches": 3, "top": "README.md#usage"}
DEMO_FAILURE = "The demo agent failed on purpose (you asked)."
#: The tool the demo asks permission for ("approve" in the prompt).
DEMO_GATED_TOOL = "delete_branch"
DEMO_GATED_ARGS = {"branch": "feature/old-demo"}


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


def demo_turn(
    prompt: dict[str, Any], number: int, aborted: Callable[[], bool]
) -> Iterator[DemoStep]:
    """One scripted, realistic turn: status updates, a markdown answer streamed word by word, a
    tool going pending → running → completed, more text. "fail" in the prompt makes the agent
    report an error mid-answer; "slow" streams eight times slower (for trying Stop); "ask" makes
    it ask a question (the answer frame continues the turn), "passing" ask one in passing and
    go on with its answer without waiting; "approve" makes it ask permission
    before a tool runs (the approval frame continues it). After the abort frame the turn is
    finalized as ``canceled``."""
    text = str(prompt.get("content", "")) if isinstance(prompt, dict) else ""
    pace = DEMO_DELAY * (8 if "slow" in text.lower() else 1)
    turn, call = f"turn_{number:04d}", f"prt_{number:04d}"
    if isinstance(prompt, dict) and prompt.get("type") == "answer":  # the user answered
        yield from _answered(prompt, turn, pace, aborted)
        return
    if isinstance(prompt, dict) and prompt.get("type") == "approval":  # the user decided
        yield from _decided(prompt, turn, pace, aborted)
        return
    if "approve" in text.lower():
        yield from _opening(turn, "I can clean that up, with your permission.", pace)
        yield {
            "type": "message.part.tool-update",
            "turnId": turn,
            "callId": call,
            "toolName": DEMO_GATED_TOOL,
            "status": "awaiting_approval",
            "args": DEMO_GATED_ARGS,
            "approvalId": f"apr_{number:04d}",
            "reason": "Deleting a branch cannot be undone.",
        }
        return
    passing = "passing" in text.lower()
    question = {
        "type": "question",
        "questionId": f"q_{number:04d}",
        "question": "Which color do you prefer?",
        "options": ["red", "green", "blue"],
    }
    if not passing and ("ask" in text.lower().split() or "ask?" in text.lower()):
        yield from _opening(turn, "Before I answer, one question.", pace)
        yield question
        return

    def status(value: str) -> dict[str, Any]:
        return {"type": "agentStatus", "status": value}

    def deltas(body: str) -> list[dict[str, Any]]:
        return [
            {"type": "message.part.text-delta", "turnId": turn, "delta": word}
            for word in _words(body)
        ]

    tool = {"type": "message.part.tool-update", "turnId": turn, "callId": call}
    tool["toolName"] = "search_docs"
    query = {"query": text[:80]}
    answer: list[Any] = [
        status("thinking"),
        {"type": "message.create", "turnId": turn, "channelType": "web"},
        status("streaming"),
        *deltas(f"You said: *{text[:200]}*\n\n" + DEMO_ANSWER),
    ]
    after = [
        status("tool_calling"),
        {**tool, "status": "pending", "args": {}},
        {**tool, "status": "running", "args": query},
        Pause(pace * 5),
        {**tool, "status": "completed", "args": query, "result": DEMO_RESULT},
        status("streaming"),
        *deltas(DEMO_AFTER_TOOL),
    ]
    if passing:  # it asks, and works on without waiting for the answer
        answer[7:7] = [question, Pause(pace * 10)]  # after its first words
    ok = yield from _play(answer, pace, aborted)
    if ok and "fail" in text.lower():
        yield {"type": "error", "messageId": turn, "error": DEMO_FAILURE}
        return
    ok = ok and (yield from _play(after, pace, aborted))
    reason = "end_turn" if ok else "canceled"
    yield {"type": "message.finalize", "turnId": turn, "reason": reason}
    yield status("idle")
    yield {"type": "complete"}


def _opening(turn: str, text: str, pace: float) -> Iterator[DemoStep]:
    """A turn's start and its first words, before the agent asks something."""
    yield {"type": "message.create", "turnId": turn, "channelType": "web"}
    for word in _words(text):
        yield {"type": "message.part.text-delta", "turnId": turn, "delta": word}
        yield Pause(pace)


def _answered(
    frame: dict[str, Any], turn: str, pace: float, aborted: Callable[[], bool]
) -> Iterator[DemoStep]:
    """The continuation after the user answered the demo's question."""
    answer = frame.get("answer")
    text = f"You chose **{answer}**: a fine choice." if not frame.get("error") else "No answer."
    steps = [
        {"type": "message.create", "turnId": turn, "channelType": "web"},
        *[{"type": "message.part.text-delta", "turnId": turn, "delta": w} for w in _words(text)],
    ]
    ok = yield from _play(steps, pace, aborted)
    yield {"type": "message.finalize", "turnId": turn, "reason": "end_turn" if ok else "canceled"}
    yield {"type": "complete"}


def _decided(
    frame: dict[str, Any], turn: str, pace: float, aborted: Callable[[], bool]
) -> Iterator[DemoStep]:
    """The continuation after the user approved or denied the demo's tool call."""
    call = frame.get("callId", "call")
    steps: list[Any] = [{"type": "message.create", "turnId": turn, "channelType": "web"}]
    if frame.get("approved") is True:
        tool = {"type": "message.part.tool-update", "turnId": turn, "callId": call}
        tool |= {"toolName": DEMO_GATED_TOOL, "args": DEMO_GATED_ARGS}
        steps += [
            {**tool, "status": "running"},
            Pause(pace * 5),
            {**tool, "status": "completed", "result": {"deleted": DEMO_GATED_ARGS["branch"]}},
        ]
        text = "Done: the branch is deleted."
    else:
        reason = frame.get("reason")
        text = "Understood, I left the branch alone" + (f" ({reason})." if reason else ".")
    steps += [{"type": "message.part.text-delta", "turnId": turn, "delta": w} for w in _words(text)]
    ok = yield from _play(steps, pace, aborted)
    yield {"type": "message.finalize", "turnId": turn, "reason": "end_turn" if ok else "canceled"}
    yield {"type": "complete"}


def _play(
    steps: list[Any], pace: float, aborted: Callable[[], bool]
) -> Generator[DemoStep, None, bool]:
    """Each event followed by a pause, until the end (True) or the abort frame (False)."""
    for step in steps:
        if isinstance(step, Pause):
            yield step
            continue
        if aborted():
            return False
        yield step
        yield Pause(pace)
        if aborted():
            return False
    return True


DIALECT = Dialect(
    name="agent-ops-v2",
    summary="agent-ops V2 session backend events (WebSocket)",
    translator=AgentOpsV2Translator,
    websocket=WebSocketContract(
        prompt_frame=_prompt_frame,
        abort_frame=_abort_frame,
        regenerate_frame=_regenerate_frame,
        answer_frame=_answer_frame,
        approval_frame=_approval_frame,
    ),
    spec=spec.__name__,
    demo=demo_turn,
)
