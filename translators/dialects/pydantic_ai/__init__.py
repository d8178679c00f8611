"""The ``pydantic-ai`` dialect: a pydantic-ai agent's run events, in the host app's process.

``async with agent.run_stream_events(...) as events`` yields the events this dialect translates
(mapping and reasons: ``protocol_specs/pydantic_ai.py``); :func:`agent_input` turns the chat's
history into the run's ``message_history`` and ``deferred_tool_results``. In-process only: no
upstream URL. Importing it does not import pydantic-ai (``pip install
'chunkbridge[pydantic-ai]'`` brings it).
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, InProcessContract
from chunkbridge.protocol_specs import pydantic_ai as spec
from chunkbridge.translators.dialects.pydantic_ai.history import AgentInput, agent_input
from chunkbridge.translators.dialects.pydantic_ai.translator import (
    PydanticAiTranslator,
    record_event,
)

__all__ = ["DIALECT", "AgentInput", "PydanticAiTranslator", "agent_input", "record_event"]

DIALECT = Dialect(
    name="pydantic-ai",
    summary="pydantic-ai agent.run_stream_events() events, in your own Python app",
    translator=PydanticAiTranslator,
    in_process=InProcessContract(
        extra="pydantic-ai",
        events="pydantic-ai's agent.run_stream_events() events",
        record=record_event,
    ),
    spec=spec.__name__,
    history="full",  # a pydantic-ai agent keeps no conversation: each run gets the history
)
