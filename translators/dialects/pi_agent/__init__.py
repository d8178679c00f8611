"""The ``pi-agent`` dialect: the agent events of pi's agent core (``pi-agent-core``).

Events → UI chunks (mapping and reasons: ``protocol_specs/pi_agent.py``), and the frames: the
RPC ``prompt`` command to start a turn, ``abort`` to stop it, ``steer`` to give a running one
a new user message (WebSocket), or the prompt POSTed
to a server that answers with the events as SSE.
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, HttpSseContract, WebSocketContract
from chunkbridge.protocol_specs import pi_agent as spec
from chunkbridge.translators.dialects.pi_agent.demo import demo_script
from chunkbridge.translators.dialects.pi_agent.request import (
    answer_frame,
    approval_frame,
    http_request,
    prompt_frame,
    steer_frame,
)
from chunkbridge.translators.dialects.pi_agent.translator import PiAgentTranslator

__all__ = [
    "DIALECT",
    "PiAgentTranslator",
    "answer_frame",
    "approval_frame",
    "demo_script",
    "http_request",
    "prompt_frame",
    "steer_frame",
]

DIALECT = Dialect(
    name="pi-agent",
    summary="pi agent core events (agent_start … agent_end), WebSocket or HTTP SSE",
    translator=PiAgentTranslator,
    websocket=WebSocketContract(
        prompt_frame=prompt_frame,
        abort_frame=lambda turn: {"type": "abort"},
        answer_frame=answer_frame,
        approval_frame=approval_frame,
        steer_frame=steer_frame,
    ),
    http=HttpSseContract(request=http_request),
    spec=spec.__name__,
    demo=demo_script,
)
