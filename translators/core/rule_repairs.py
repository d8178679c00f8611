"""What the guard sends instead of a chunk the client would throw on.

:meth:`ClientModel.check <chunkbridge.translators.core.client_model.ClientModel.check>` names
the rule a chunk breaks; :func:`rule_repair` says what the chunk becomes: the part it needs
opened first, nothing (an end or a delta that cannot be placed), or a ``data-*`` part that keeps
the information where the client has no part to attach it to. A pure decision: the guard counts
the repair by its name and applies the chunks.
"""

from __future__ import annotations

from typing import Any

from chunkbridge.protocol_specs.ui_message_stream import DATA_PREFIX
from chunkbridge.translators.core.client_model import ClientModel, Rule

__all__ = ["rule_repair"]

Chunk = dict[str, Any]


def rule_repair(rule: Rule, chunk: Chunk, model: ClientModel) -> tuple[str, tuple[Chunk, ...]]:
    """The repair's name (a key of ``StreamGuard.repairs``) and the chunks to apply in place of
    ``chunk``, which breaks ``rule``."""
    chunk_type = chunk["type"]
    if rule is Rule.TEXT_NOT_OPEN or rule is Rule.REASONING_NOT_OPEN:
        if chunk_type.endswith("-end"):
            return f"dropped-{chunk_type}-unknown-id", ()
        kind = "text" if rule is Rule.TEXT_NOT_OPEN else "reasoning"
        return f"opened-{kind}", ({"type": f"{kind}-start", "id": chunk["id"]}, chunk)
    if rule is Rule.TOOL_INPUT_NOT_STARTED:
        if chunk["toolCallId"] in model.tools:
            # The input is already complete; re-opening it would move the part backwards.
            return "dropped-tool-input-delta-after-input", ()
        start = {
            "type": "tool-input-start",
            "toolCallId": chunk["toolCallId"],
            "toolName": "unknown",
        }
        return "opened-tool-input", (start, chunk)
    # TOOL_CALL_UNKNOWN / APPROVAL_UNKNOWN (TOOL_KIND_MISMATCH is prevented by the dynamic fix):
    # the client has no part to attach it to; keep the information as a data part.
    data = {k: v for k, v in chunk.items() if k != "type"}
    orphan = {"type": f"{DATA_PREFIX}orphan-{chunk_type}", "data": data}
    return f"orphan-{chunk_type}-as-data", (orphan,)
