"""The ``agent-ops-v2`` dialect: the agent-ops V2 session backend over WebSocket.

Events → UI chunks (mapping and reasons: ``protocol_specs/agent_ops_v2.py``), the prompt and abort
frames, and the demo backend ``chunkbridge demo`` plays.
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, WebSocketContract
from chunkbridge.protocol_specs import agent_ops_v2 as spec
from chunkbridge.translators.dialects.agent_ops_v2.demo import demo_turn
from chunkbridge.translators.dialects.agent_ops_v2.request import (
    abort_frame,
    answer_frame,
    approval_frame,
    prompt_frame,
    regenerate_frame,
)
from chunkbridge.translators.dialects.agent_ops_v2.translator import AgentOpsV2Translator

__all__ = [
    "DIALECT",
    "AgentOpsV2Translator",
    "abort_frame",
    "answer_frame",
    "approval_frame",
    "demo_turn",
    "prompt_frame",
    "regenerate_frame",
]

DIALECT = Dialect(
    name="agent-ops-v2",
    summary="agent-ops V2 session backend events (WebSocket)",
    translator=AgentOpsV2Translator,
    websocket=WebSocketContract(
        prompt_frame=prompt_frame,
        abort_frame=abort_frame,
        regenerate_frame=regenerate_frame,
        answer_frame=answer_frame,
        approval_frame=approval_frame,
    ),
    spec=spec.__name__,
    demo=demo_turn,
)
