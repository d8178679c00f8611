"""The ``ag-ui`` dialect: AG-UI 1.0 agents (pydantic-ai, LangGraph, CrewAI, Mastra, AgentCore…).

Events → UI chunks (mapping and reasons: ``protocol_specs/ag_ui.py``), and the run request: a
``RunAgentInput`` POSTed over HTTP (SSE back) or sent as the first WebSocket frame.
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, HttpSseContract, WebSocketContract
from chunkbridge.protocol_specs import ag_ui as spec
from chunkbridge.translators.dialects.ag_ui.demo import demo_script
from chunkbridge.translators.dialects.ag_ui.request import AgUiSettings, http_request, run_input
from chunkbridge.translators.dialects.ag_ui.translator import AgUiTranslator

__all__ = ["DIALECT", "AgUiSettings", "AgUiTranslator", "demo_script", "http_request", "run_input"]

DIALECT = Dialect(
    name="ag-ui",
    summary="AG-UI 1.0 agent events (HTTP SSE or WebSocket): pydantic-ai, LangGraph, CrewAI…",
    translator=AgUiTranslator,
    websocket=WebSocketContract(prompt_frame=run_input),
    http=HttpSseContract(request=http_request),
    settings=AgUiSettings,
    spec=spec.__name__,
    history="full",  # most AG-UI agents are stateless: each run gets the whole thread
    demo=demo_script,
)
