"""What a dialect may read of a turn to start it upstream: the chat request, the answers it
carries (tools the app ran, questions it answered, approvals it decided), the settings.

Everything is derived from the validated request on first use and never changes (a frozen
dataclass): a dialect's builders are pure functions of a :class:`TurnInput`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from chunkbridge.protocol_specs.chat_request import (
    ANSWERED_STATES,
    ChatRequest,
    DynamicToolPart,
    StepStartPart,
    ToolPart,
    UserPrompt,
)
from chunkbridge.protocol_specs.human_in_the_loop import (
    QUESTION_TOOL,
    is_approval_question,
    parse_approval_answer,
)
from chunkbridge.translators.core.client_model import KnownToolCall

__all__ = ["AnsweredCall", "ApprovalAnswer", "RequestRejected", "TurnInput", "is_answered"]


def is_answered(part: Any) -> bool:
    """A tool part of the history whose call has its answer: an output, an error, a denial."""
    return getattr(part, "state", None) in ANSWERED_STATES


class RequestRejected(ValueError):
    """The chat request cannot become an upstream turn (answered 400 with this message)."""

    def __init__(self, client_message: str) -> None:
        super().__init__(client_message)
        self.client_message = client_message


@dataclass(frozen=True, slots=True)
class AnsweredCall:
    """A client-side tool call the app answered (``addToolOutput``) in the continued message."""

    tool_call_id: str
    tool_name: str
    output: Any
    #: The app reported an error (``output-error``: its ``errorText`` is the output).
    is_error: bool
    #: The call's input (a question's fields).
    input: Any = None


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """The app's decision on an approval the gateway requested (ai 6/7 ``approval-responded``,
    or the answered question form on ai 5). Untrusted until the gateway checked it."""

    approval_id: str
    tool_call_id: str
    tool_name: str
    approved: bool
    reason: str | None
    #: The signature the request carried back, if any.
    signature: str | None
    #: The approved call's input as the request holds it (what a signature binds).
    input: Any


@dataclass(frozen=True)  # not slots: the cached properties need an instance dict
class TurnInput:
    """What a dialect may use to start one turn upstream."""

    request: ChatRequest
    #: The session id from the URL (the agent's session, the upstream's conversation…).
    session_id: str
    #: A fresh id for this turn (for upstreams that name runs).
    run_id: str
    #: The dialect's settings (an instance of its :attr:`Dialect.settings` model).
    settings: Any = None
    #: The gateway's ``history`` setting: ``"latest"`` (the upstream keeps the history) or
    #: ``"full"`` (it wants the whole ``UIMessage`` history too).
    history: Literal["latest", "full"] = "latest"

    @property
    def chat_id(self) -> str:
        """The chat's id (``useChat``'s ``id``), as the request carries it."""
        return self.request.id

    @property
    def regenerate(self) -> bool:
        """The user asked for the last answer again (``regenerate-message``)."""
        return self.request.trigger == "regenerate-message"

    @cached_property
    def prompt(self) -> UserPrompt | None:
        """The newest user message (text and files), if there is one."""
        return self.request.latest_user_message()

    @cached_property
    def _continued_tools(self) -> tuple[list[ToolPart], list[ToolPart]]:
        """The continued message's tool parts: all of them, and those of its last step (where a
        continuation's new answers are; earlier steps hold answers already delivered)."""
        message = self.request.continued_message()
        if message is None:
            return [], []
        every: list[ToolPart] = []
        last: list[ToolPart] = []
        for part in message.parts:
            if isinstance(part, StepStartPart):
                last = []
            elif isinstance(part, ToolPart):  # tool-<name> and dynamic-tool parts
                every.append(part)
                last.append(part)
        return every, last

    def answered_calls(self) -> list[AnsweredCall]:
        """The client-side tool calls the app answered (``addToolOutput``) in the last step of
        the message this request continues (spec §5.4), in order; empty for a new message. A
        dialect whose agent waits for such answers (questions) sends them instead of a new
        prompt. Approvals in their ai 5 question form are not here: :meth:`approval_answers`."""
        out = []
        for part in self._continued_tools[1]:
            if part.providerExecuted:
                continue
            if part.tool_name == QUESTION_TOOL and is_approval_question(part.input):
                continue
            if part.state == "output-available":
                out.append(
                    AnsweredCall(part.toolCallId, part.tool_name, part.output, False, part.input)
                )
            elif part.state == "output-error":
                out.append(
                    AnsweredCall(part.toolCallId, part.tool_name, part.errorText, True, part.input)
                )
        return out

    @cached_property
    def approval_answers(self) -> list[ApprovalAnswer]:
        """The approvals the app answered in the last step of the continued message, in order.
        :class:`RequestRejected` when one is malformed (the shapes: module
        ``chunkbridge.protocol_specs.human_in_the_loop``). The gateway checks them before the turn
        starts."""
        every, last = self._continued_tools
        out = []
        for part in last:
            approval = part.approval
            if part.state == "approval-responded" and approval is not None:
                if approval.approved is None:
                    raise RequestRejected(
                        f"tool call {part.toolCallId!r}: approval-responded needs approval.approved"
                    )
                out.append(
                    ApprovalAnswer(
                        approval.id,
                        part.toolCallId,
                        part.tool_name,
                        approval.approved,
                        approval.reason,
                        approval.signature,
                        part.input,
                    )
                )
            elif part.tool_name == QUESTION_TOOL and is_approval_question(part.input):
                if part.state not in ("output-available", "output-error"):
                    continue  # not answered yet
                is_error = part.state == "output-error"
                decision = parse_approval_answer(
                    part.errorText if is_error else part.output, is_error
                )
                form = part.input["approval"]
                call_id, name = form.get("toolCallId"), form.get("toolName")
                if decision is None or not isinstance(call_id, str) or not isinstance(name, str):
                    raise RequestRejected(
                        f'approval {part.toolCallId!r}: answer with "approve" or "deny" '
                        '(or {"approved": true|false, "reason": "…"})'
                    )
                called = next((p for p in every if p.toolCallId == call_id), None)
                signature = form.get("signature")
                approval_id = form.get("approvalId")
                out.append(
                    ApprovalAnswer(
                        approval_id if isinstance(approval_id, str) else part.toolCallId,
                        call_id,
                        name,
                        decision[0],
                        decision[1],
                        signature if isinstance(signature, str) else None,
                        called.input if called is not None else None,
                    )
                )
        return out

    def known_tool_calls(self) -> list[KnownToolCall]:
        """The continued message's tool parts, for the stream guard."""
        return [
            KnownToolCall(
                part.toolCallId,
                part.tool_name,
                isinstance(part, DynamicToolPart),
                part.state,
                bool(part.providerExecuted),
                part.input,
            )
            for part in self._continued_tools[0]
        ]

    def require_prompt(self) -> UserPrompt:
        """The newest user message; :class:`RequestRejected` when there is none."""
        prompt = self.prompt
        if prompt is None:
            raise RequestRejected("The request has no user message to send.")
        return prompt

    @cached_property
    def history_dump(self) -> list[dict[str, Any]]:
        """The ``UIMessage`` history as plain JSON (built on first use: it can be long)."""
        return [m.model_dump(exclude_none=True) for m in self.request.messages]

    def template_values(self) -> dict[str, Any]:
        """The placeholders of frame templates (:class:`FrameTemplates`)."""
        prompt = self.prompt
        return {
            "text": prompt.text if prompt else "",
            "message_id": (prompt.message_id if prompt else "") or self.run_id,
            "run_id": self.run_id,
            "session_id": self.session_id,
            "chat_id": self.chat_id,
            "attachments": [f.model_dump(exclude_none=True) for f in prompt.files]
            if prompt
            else [],
            "messages": self.history_dump,
        }
