"""The ``agent-ops-v2`` upstream contract: settings, and what a turn sends upstream."""

from __future__ import annotations

from typing import Any

from chunkbridge.kit import (
    AnsweredCall,
    ApprovalAnswer,
    TurnInput,
)
from chunkbridge.protocol_specs import agent_ops_v2 as spec
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL


def prompt_frame(turn: TurnInput) -> dict[str, Any]:
    prompt = turn.require_prompt()
    attachments = [f.model_dump(exclude_none=True) for f in prompt.files]
    return spec.prompt_frame(prompt.text, prompt.message_id or turn.run_id, attachments)


def regenerate_frame(turn: TurnInput) -> dict[str, Any]:
    return {**prompt_frame(turn), "regenerate": True}


def abort_frame(turn: TurnInput) -> dict[str, Any]:
    return dict(spec.ABORT_FRAME)


def answer_frame(turn: TurnInput, call: AnsweredCall) -> dict[str, Any] | None:
    """The answer to one of the agent's questions (other client-side calls are not its)."""
    if call.tool_name != QUESTION_TOOL:
        return None
    return spec.answer_frame(call.tool_call_id, call.output, call.is_error)


def approval_frame(turn: TurnInput, answer: ApprovalAnswer) -> dict[str, Any]:
    return spec.approval_frame(
        answer.approval_id, answer.tool_call_id, answer.approved, answer.reason
    )
