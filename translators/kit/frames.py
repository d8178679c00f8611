"""Frames of WebSocket upstreams: the dialect's own builders, or templates from the
configuration, filled from a :class:`~chunkbridge.kit.turn_input.TurnInput`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from chunkbridge.kit.dialect import Frame, WebSocketContract
from chunkbridge.kit.turn_input import TurnInput

__all__ = ["FrameTemplates", "TurnFrames", "answer_frames", "build_frames"]


@dataclass(frozen=True, slots=True)
class FrameTemplates:
    """Deployment overrides of a WebSocket dialect's frames: JSON objects whose string values may
    hold ``{text}``, ``{message_id}``, ``{run_id}``, ``{session_id}``, ``{chat_id}``; a value that
    is exactly ``"{attachments}"`` or ``"{messages}"`` becomes that list."""

    prompt: Frame | None = None
    regenerate: Frame | None = None
    abort: Frame | None = None
    #: Replaces the dialect's answer frame: ``{question_id}``, and ``"{answer}"`` (the app's
    #: output as it is) besides the placeholders above.
    answer: Frame | None = None
    #: Replaces the dialect's approval frame: ``{approval_id}``, ``{tool_call_id}``,
    #: ``{tool_name}``, ``"{approved}"`` (a JSON boolean) and ``"{reason}"`` (string or null).
    approval: Frame | None = None


@dataclass(frozen=True, slots=True)
class TurnFrames:
    """The WebSocket frames of one turn, built from the dialect's frames (or the configured
    templates) by :func:`build_frames`."""

    #: What starts the turn: the answers to the agent's questions and approvals, one frame
    #: each, when the request carries some; else the one prompt (or regenerate) frame.
    prompts: list[Frame]
    abort: Frame | None

    @property
    def prompt(self) -> Frame:
        """The first frame that starts the turn."""
        return self.prompts[0]


_SCALARS = (
    "text",
    "message_id",
    "run_id",
    "session_id",
    "chat_id",
    "question_id",
    "approval_id",
    "tool_call_id",
    "tool_name",
)


_VALUES = ("{attachments}", "{messages}", "{answer}", "{approved}", "{reason}")


#: One pass over the template: what a placeholder is replaced by is never scanned again, so a
#: user's text that contains ``{session_id}`` reaches the upstream as typed.
_PLACEHOLDER = re.compile(r"\{(" + "|".join(_SCALARS) + r")\}")


def _fill(template: Any, values: dict[str, Any]) -> Any:
    if isinstance(template, dict):
        return {k: _fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, values) for v in template]
    if isinstance(template, str):
        if template in _VALUES:
            return values[template[1:-1]]
        return _PLACEHOLDER.sub(
            lambda match: str(values[match[1]]) if match[1] in values else match[0], template
        )
    return template


def answer_frames(
    contract: WebSocketContract, turn: TurnInput, templates: FrameTemplates = FrameTemplates()
) -> list[Frame]:
    """One frame per answer the request carries (questions, then approvals), templated where
    the deployment has templates; empty when it carries none this upstream understands."""
    frames: list[Frame] = []
    base = turn.template_values() if templates.answer or templates.approval else {}
    if contract.answer_frame is not None:
        for call in turn.answered_calls():
            frame = contract.answer_frame(turn, call)
            if frame is not None and templates.answer is not None:
                values = {**base, "question_id": call.tool_call_id, "answer": call.output}
                frame = _fill(templates.answer, values)
            if frame is not None:
                frames.append(frame)
    if contract.approval_frame is not None:
        for answer in turn.approval_answers:
            if templates.approval is not None:
                values = {
                    **base,
                    "approval_id": answer.approval_id,
                    "tool_call_id": answer.tool_call_id,
                    "tool_name": answer.tool_name,
                    "approved": answer.approved,
                    "reason": answer.reason,
                }
                frames.append(_fill(templates.approval, values))
            else:
                frames.append(contract.approval_frame(turn, answer))
    return frames


def build_frames(
    contract: WebSocketContract, turn: TurnInput, templates: FrameTemplates = FrameTemplates()
) -> TurnFrames:
    """The frames that start one turn and its abort frame: the deployment's templates where it
    has them, else the dialect's; with ``history = "full"`` the first carries ``messages``."""
    values = turn.template_values() if templates != FrameTemplates() else {}
    prompts = answer_frames(contract, turn, templates)
    if prompts:
        pass
    elif turn.regenerate and templates.regenerate is not None:
        prompts = [_fill(templates.regenerate, values)]
    elif templates.prompt is not None:
        prompts = [_fill(templates.prompt, values)]
    elif turn.regenerate and contract.regenerate_frame is not None:
        prompts = [contract.regenerate_frame(turn)]
    else:
        prompts = [contract.prompt_frame(turn)]
    if turn.history == "full" and "messages" not in prompts[0]:
        prompts[0]["messages"] = turn.history_dump
    if templates.abort is not None:
        abort = _fill(templates.abort, values)
    else:
        abort = contract.abort_frame(turn)
    return TurnFrames(prompts, abort)
