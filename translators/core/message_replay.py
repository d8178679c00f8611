"""The chunks that rebuild an assistant ``UIMessage`` in a client: a continuation's resume.

A continuation (an answered question, a decided approval) streams only what comes after the
answer, and the client adds it to the message it already has. A client that resumes that
response on a fresh page — a reload — has no such message: ai 6 and 7 start over at the
response's ``start`` chunk (``resumeStreamIsReplay``), ai 5 starts a new message. So the
resumable log of a continuation begins with :func:`replay_chunks` of the continued message: the
client rebuilds it, then applies the continuation to it, and the reloaded page shows the whole
answer rather than its last piece.

It is the inverse of :class:`~chunkbridge.translators.core.message_assembly.MessageAssembler`
for the major it is told: assembling the chunks gives the message back (the round trip is
tested on every golden's message for ai 5, 6 and 7). Client-side state with no chunk of its own
— an approval answered in ai 5 or 6 — comes back as the request it answered; the continuation's
own chunks move it on.
"""

from __future__ import annotations

from typing import Any

import orjson

from chunkbridge.translators.core.message_tools import is_tool

__all__ = ["replay_chunks"]

Chunk = dict[str, Any]

_APPROVED_STATES = ("approval-responded", "output-denied", "output-available", "output-error")


def _with(chunk: Chunk, part: dict[str, Any], *keys: str | tuple[str, str]) -> Chunk:
    """``chunk`` with the part's values of ``keys`` it has (``(part key, chunk key)`` renames)."""
    for key in keys:
        source, target = key if isinstance(key, tuple) else (key, key)
        if part.get(source) is not None:
            chunk[target] = part[source]
    return chunk


def replay_chunks(message: dict[str, Any], major: int) -> list[Chunk]:
    """Chunks from which a client of ``major`` builds ``message`` (an assistant message as the
    assembler or a client has it), beginning with ``start`` and ending outside any step."""
    chunks: list[Chunk] = [
        _with(
            {"type": "start", "messageId": message["id"]}, message, ("metadata", "messageMetadata")
        )
    ]
    in_step = False
    for index, part in enumerate(message.get("parts", ())):
        kind = part["type"]
        if kind == "step-start":
            if in_step:
                chunks.append({"type": "finish-step"})
            chunks.append({"type": "start-step"})
            in_step = True
        elif kind in ("text", "reasoning"):
            chunks.extend(_text(part, part.get("id") or f"replay-{index}"))
        elif is_tool(part):
            chunks.extend(_tool(part, major))
        elif kind.startswith("data-"):
            chunks.append(dict(part))
        elif kind in ("file", "reasoning-file"):
            chunks.append(_with({"type": kind}, part, "mediaType", "url", "providerMetadata"))
        elif kind == "source-url":
            chunks.append(
                _with({"type": kind}, part, "sourceId", "url", "title", "providerMetadata")
            )
        elif kind == "source-document":
            chunks.append(
                _with(
                    {"type": kind},
                    part,
                    "sourceId",
                    "mediaType",
                    "title",
                    "filename",
                    "providerMetadata",
                )
            )
        elif kind == "custom":
            chunks.append(_with({"type": kind}, part, "kind", "providerMetadata"))
        elif kind == "steering-message":
            chunks.append({"type": kind, "id": part["id"], "parts": part["parts"]})
    if in_step:
        chunks.append({"type": "finish-step"})
    return chunks


def _text(part: dict[str, Any], part_id: str) -> list[Chunk]:
    kind = part["type"]
    chunks = [_with({"type": f"{kind}-start", "id": part_id}, part, "providerMetadata")]
    if part.get("text"):
        chunks.append({"type": f"{kind}-delta", "id": part_id, "delta": part["text"]})
    if part.get("state") != "streaming":
        chunks.append(
            _with({"type": f"{kind}-end", "id": part_id}, part, "providerMetadata", "citations")
        )
    return chunks


def _tool(part: dict[str, Any], major: int) -> list[Chunk]:
    call = _call(part)
    state = part.get("state")
    if state == "output-error" and "input" not in part and "rawInput" in part:  # input refused
        return [
            _with(
                {"type": "tool-input-error", **call},
                part,
                ("rawInput", "input"),
                "errorText",
                ("resultProviderMetadata", "providerMetadata"),
                ("callProviderMetadata", "providerMetadata"),
            )
        ]
    chunks = _tool_input(part, call)
    if state == "input-streaming":
        return chunks
    approval = part.get("approval")
    if isinstance(approval, dict) and "id" in approval:
        chunks.extend(_approval(approval, call["toolCallId"], state, major))
    result = _tool_result(part, call, state)
    if result is not None:
        chunks.append(result)
    return chunks


def _call(part: dict[str, Any]) -> Chunk:
    """The fields that name the call in every chunk of its input."""
    dynamic = part["type"] == "dynamic-tool"
    call: Chunk = {
        "toolCallId": part["toolCallId"],
        "toolName": part["toolName"] if dynamic else part["type"][len("tool-") :],
    }
    if dynamic:
        call["dynamic"] = True
    return _with(call, part, "providerExecuted", "title", "toolMetadata")


def _tool_input(part: dict[str, Any], call: Chunk) -> list[Chunk]:
    """The input as the part has it: complete (``tool-input-available``), or the text streamed
    so far (``tool-input-start`` and one delta), which the client parses as it did then."""
    if part.get("state") != "input-streaming" and "rawInput" not in part and "input" in part:
        return [
            _with(
                {"type": "tool-input-available", **call, "input": part.get("input")},
                part,
                "inputEncoding",
                ("callProviderMetadata", "providerMetadata"),
            )
        ]
    raw = part.get("rawInput")
    if raw is None and "input" in part:
        raw = orjson.dumps(part["input"]).decode()
    chunks = [
        _with(
            {"type": "tool-input-start", **call},
            part,
            "inputEncoding",
            ("callProviderMetadata", "providerMetadata"),
        )
    ]
    if raw:
        chunks.append(
            {"type": "tool-input-delta", "toolCallId": call["toolCallId"], "inputTextDelta": raw}
        )
    return chunks


def _approval(approval: dict[str, Any], call_id: str, state: Any, major: int) -> list[Chunk]:
    """The approval request, and for ai 7 its answer once the part has moved past it (ai 5 and
    6 keep an answer in the client only: the continuation's own chunks move the part on)."""
    chunks = [
        _with(
            {"type": "tool-approval-request", "toolCallId": call_id, "approvalId": approval["id"]},
            approval,
            ("descriptor", "approvalDescriptor"),
            "inputSchemaInput",
            ("requestReason", "reason"),
            "isAutomatic",
            "signature",
        )
    ]
    if major >= 7 and state in _APPROVED_STATES and "approved" in approval:
        chunks.append(
            _with(
                {
                    "type": "tool-approval-response",
                    "approvalId": approval["id"],
                    "approved": approval["approved"],
                },
                approval,
                "reason",
            )
        )
    return chunks


def _tool_result(part: dict[str, Any], call: Chunk, state: Any) -> Chunk | None:
    """The chunk that settles the call, if the part's state says it is settled."""
    result: Chunk = {"toolCallId": call["toolCallId"]}
    if call.get("dynamic"):
        result["dynamic"] = True
    _with(result, part, "providerExecuted", ("resultProviderMetadata", "providerMetadata"))
    if state == "output-available":
        return _with(
            {"type": "tool-output-available", **result, "output": part.get("output")},
            part,
            "preliminary",
        )
    if state == "output-error":
        return _with({"type": "tool-output-error", **result}, part, "errorText")
    if state == "output-denied":
        return {"type": "tool-output-denied", "toolCallId": call["toolCallId"]}
    return None
