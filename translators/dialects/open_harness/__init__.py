"""The ``open-harness`` dialect: an agent-harness flow runtime (``agent:*``, ``node:*``,
``flow:*`` events) over WebSocket.

Events → UI chunks (mapping and reasons: ``protocol_specs/open_harness.py``), and the send and
abort frames that drive a run over WebSocket.
"""

from __future__ import annotations

from chunkbridge.kit import Dialect, WebSocketContract
from chunkbridge.protocol_specs import open_harness as spec
from chunkbridge.translators.dialects.open_harness.request import abort_frame, send_frame
from chunkbridge.translators.dialects.open_harness.translator import OpenHarnessTranslator

__all__ = ["DIALECT", "OpenHarnessTranslator", "abort_frame", "send_frame"]

DIALECT = Dialect(
    name="open-harness",
    summary="agent-harness flow runtime events (agent:*, node:*, flow:*)",
    translator=OpenHarnessTranslator,
    websocket=WebSocketContract(prompt_frame=send_frame, abort_frame=abort_frame),
    spec=spec.__name__,
)
