"""The ``langgraph`` dialect: a LangGraph graph's stream, in the host app's process.

``graph.astream(input, config, stream_mode=["messages", "updates", "custom"])`` yields the
tuples this dialect translates (mapping and reasons: ``protocol_specs/langgraph.py``);
:func:`graph_input` turns a chat request into the graph's input. In-process only: no upstream
URL. Importing it does not import LangGraph (``pip install 'chunkbridge[langgraph]'`` brings it).
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, InProcessContract
from chunkbridge.protocol_specs import langgraph as spec
from chunkbridge.translators.dialects.langgraph.request import graph_input
from chunkbridge.translators.dialects.langgraph.translator import LangGraphTranslator, record_event

__all__ = ["DIALECT", "LangGraphTranslator", "graph_input", "record_event"]

DIALECT = Dialect(
    name="langgraph",
    summary="LangGraph graph.astream(stream_mode=[messages, updates, custom]), in your own app",
    translator=LangGraphTranslator,
    in_process=InProcessContract(
        extra="langgraph",
        events='a LangGraph graph.astream(..., stream_mode=["messages", "updates", "custom"])',
        record=record_event,
    ),
    spec=spec.__name__,
)
