"""The ``openai-agents`` dialect: the OpenAI Agents SDK's run stream, in the host app's process.

``Runner.run_streamed(agent, input).stream_events()`` yields the events this dialect translates
(mapping and reasons: ``protocol_specs/openai_agents.py``). In-process only: no upstream URL.
Importing it does not import the SDK (``pip install 'chunkbridge[openai-agents]'`` brings it).
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, InProcessContract
from chunkbridge.protocol_specs import openai_agents as spec
from chunkbridge.translators.dialects.openai_agents.translator import (
    OpenAiAgentsTranslator,
    record_event,
)

__all__ = ["DIALECT", "OpenAiAgentsTranslator", "record_event"]

DIALECT = Dialect(
    name="openai-agents",
    summary="OpenAI Agents SDK Runner.run_streamed() events, in your own Python app",
    translator=OpenAiAgentsTranslator,
    in_process=InProcessContract(
        extra="openai-agents",
        events="the OpenAI Agents SDK's Runner.run_streamed(...).stream_events()",
        record=record_event,
    ),
    spec=spec.__name__,
    history="full",
)
