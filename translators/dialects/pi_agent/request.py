"""The ``pi-agent`` upstream contract: settings, and what a turn sends upstream."""

from __future__ import annotations

from typing import Any

import orjson

from chunkbridge.kit import (
    AnsweredCall,
    ApprovalAnswer,
    HttpRequest,
    RequestRejected,
    TurnInput,
)
from chunkbridge.protocol_specs import pi_agent as spec
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL, parse_approval_answer


def prompt_frame(turn: TurnInput) -> dict[str, Any]:
    prompt = turn.require_prompt()
    images = spec.prompt_images(prompt.files)
    if len(images) != len(prompt.files):
        raise RequestRejected("pi takes images only (as data URLs); other files cannot be sent.")
    frame: dict[str, Any] = {"type": "prompt", "id": turn.run_id, "message": prompt.text}
    if images:
        frame["images"] = images
    return frame


def steer_frame(turn: TurnInput) -> dict[str, Any]:
    """pi's ``steer`` command: the new user message, which the agent takes after the running
    turn's tool batch, before its next model call (``Agent.steer``)."""
    frame = prompt_frame(turn)
    frame["type"] = "steer"
    return frame


def answer_frame(turn: TurnInput, call: AnsweredCall) -> dict[str, Any] | None:
    """The ``extension_ui_response`` to a dialog the app answered."""
    if call.tool_name != QUESTION_TOOL:
        return None
    confirm = isinstance(call.input, dict) and call.input.get("method") == "confirm"
    if call.is_error:
        return spec.ui_response(call.tool_call_id, cancelled=True)
    if confirm:
        decision = parse_approval_answer(call.output, False)
        if decision is None:
            return spec.ui_response(call.tool_call_id, cancelled=True)
        return spec.ui_response(call.tool_call_id, confirmed=decision[0])
    value = call.output if isinstance(call.output, str) else orjson.dumps(call.output).decode()
    return spec.ui_response(call.tool_call_id, value=value)


def approval_frame(turn: TurnInput, answer: ApprovalAnswer) -> dict[str, Any]:
    return spec.ui_response(answer.approval_id, confirmed=answer.approved)


def http_request(turn: TurnInput) -> HttpRequest:
    return HttpRequest(path="", body=prompt_frame(turn))
