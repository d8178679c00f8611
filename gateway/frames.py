"""What the gateway sends upstream per dialect: the prompt, regenerate and abort frames.

Defaults (documented in each dialect's ``protocol_specs`` module):

* agent-ops-v2: ``{"type":"prompt","content":<latest user text>,"messageId":<id>,
  "attachments":[<file parts>]}``; regenerate: the same with ``"regenerate": true``;
  abort: ``{"type":"abort"}``.
* open-harness: ``{"type":"send","runId":<id>,"message":<text>}``; abort:
  ``{"type":"abort","runId":<id>}``.
* openai-chat over a WebSocket: a chat-completions request (``stream: true``) converted from the
  UIMessage history; abort: ``{"type":"abort"}``.

Config ``prompt_frame`` / ``regenerate_frame`` / ``abort_frame`` replace them with templates: JSON
objects whose string values may contain ``{text}``, ``{message_id}``, ``{run_id}``,
``{session_id}``, ``{chat_id}`` (a value that is exactly ``"{attachments}"`` or ``"{messages}"``
becomes that list).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.config import GatewayConfig, HistoryMode
from gateway.errors import BadRequest
from protocol_specs import agent_ops_v2, open_harness, openai_chat
from protocol_specs.chat_request import ChatRequest

__all__ = ["TurnFrames", "build_frames"]


@dataclass(frozen=True, slots=True)
class TurnFrames:
    prompt: dict[str, Any]
    abort: dict[str, Any]


def _fill(template: Any, values: dict[str, Any]) -> Any:
    if isinstance(template, dict):
        return {k: _fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, values) for v in template]
    if isinstance(template, str):
        if template in ("{attachments}", "{messages}"):
            return values[template[1:-1]]
        for key in ("text", "message_id", "run_id", "session_id", "chat_id"):
            template = template.replace("{" + key + "}", str(values[key]))
    return template


def build_frames(
    config: GatewayConfig, request: ChatRequest, session_id: str, run_id: str
) -> TurnFrames:
    """The frames for one turn. Raises :class:`BadRequest` when there is nothing to send."""
    prompt = request.latest_user_message()
    if prompt is None and config.dialect != "openai-chat":
        raise BadRequest("The request has no user message to send.")
    text = prompt.text if prompt else ""
    attachments = [f.model_dump(exclude_none=True) for f in prompt.files] if prompt else []
    message_id = (prompt.message_id if prompt else "") or run_id
    history = [m.model_dump(exclude_none=True) for m in request.messages]
    values = {
        "text": text,
        "message_id": message_id,
        "run_id": run_id,
        "session_id": session_id,
        "chat_id": request.id,
        "attachments": attachments,
        "messages": history,
    }
    regenerate = request.trigger == "regenerate-message"
    if regenerate and config.regenerate_frame is not None:
        frame = _fill(config.regenerate_frame, values)
    elif config.prompt_frame is not None:
        frame = _fill(config.prompt_frame, values)
    elif config.dialect == "open-harness":
        frame = open_harness.send_frame(run_id, text)
    elif config.dialect == "openai-chat":
        frame = {
            "model": config.openai_model,
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": openai_chat.messages_from_ui(request.messages),
        }
    else:
        frame = agent_ops_v2.prompt_frame(text, message_id, attachments)
        if regenerate:
            frame["regenerate"] = True
    if config.history is HistoryMode.FULL and "messages" not in frame:
        frame["messages"] = history
    if config.abort_frame is not None:
        abort = _fill(config.abort_frame, values)
    elif config.dialect == "open-harness":
        abort = open_harness.abort_frame(run_id)
    else:
        abort = dict(agent_ops_v2.ABORT_FRAME)
    return TurnFrames(prompt=frame, abort=abort)
