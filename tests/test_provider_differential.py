"""Differential conformance: every recorded provider stream, through chunkbridge and through the
AI SDK's own provider package (+ ``streamText`` + ``toUIMessageStream``), ends in the same
``UIMessage`` for the real ai 7 client — ids aside, and apart from the differences each dialect's
spec module lists in ``AI_SDK_DIFFERENCES`` with its reason.

Each documented difference has a normalizer here that erases exactly that difference; the test
fails when a difference is left after them (fix it or document it), and when a documented
difference is no longer seen in any recording (the table went stale).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from gateway.recordings import read_frames
from gateway.replay import replay_file
from tests.conformance.harness import Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

#: dialect → (the AI SDK provider that speaks the same API, the dialect's spec module, whether
#: tool call ids are generated on each side rather than sent by the provider).
PROVIDER_DIALECTS = {
    "anthropic-messages": ("anthropic", "protocol_specs.anthropic_messages", False),
    "openai-responses": ("openai", "protocol_specs.openai_responses", False),
    "gemini": ("google", "protocol_specs.gemini", True),
}

Parts = list[dict[str, Any]]


@dataclass(frozen=True)
class Side:
    """One side's result as the real ai 7 client saw it: the final parts and how it ended
    (``"error chunk"``, else the finish reason)."""

    verdict: Verdict
    parts: Parts
    ending: str | None


#: A normalizer gets (AI SDK side, our side) and returns both with one documented difference
#: erased; it must leave them unchanged where that difference does not occur.
Normalizer = Callable[[Side, Side], tuple[Side, Side]]


def _tool_names(frames: list[str]) -> list[str]:
    """Tools the recording calls (declared to ``streamText`` without ``execute``, as an app's
    client-side tools are)."""
    names = set()
    for frame in frames:
        try:
            event = json.loads(frame)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        for block in (event.get("content_block"), event.get("item")):
            if isinstance(block, dict) and block.get("type") in ("tool_use", "function_call"):
                names.add(block.get("name"))
        for candidate in event.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if isinstance(part.get("functionCall"), dict):
                    names.add(part["functionCall"].get("name"))
    return sorted(n for n in names if isinstance(n, str))


def _side(verdict: Verdict, generated_tool_ids: bool) -> Side:
    """Ids aside: part ids and source ids are generated on each side, and tool call ids too
    where the provider sends none (Gemini; an OpenAI MCP approval request, a part with an
    ``approval``). A message with no part but ``step-start`` is empty (the client reports no
    message at all for a stream without content or metadata)."""
    dropped = {"id", "sourceId"} | ({"toolCallId"} if generated_tool_ids else set())
    parts = [
        {
            k: v
            for k, v in part.items()
            if k not in dropped | ({"toolCallId"} if "approval" in part else set())
        }
        for part in (verdict.message or {}).get("parts", [])
    ]
    if all(part.get("type") == "step-start" for part in parts):
        parts = []
    ending = "error chunk" if verdict.error_text is not None else verdict.finish_reason
    return Side(verdict, parts, ending)


def _map(side: Side, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Side:
    parts = []
    for part in side.parts:
        changed = change(dict(part))
        if changed is not None:
            parts.append(changed)
    return replace(side, parts=parts)


def _drop_message_start_custom(sdk: Side, ours: Side) -> tuple[Side, Side]:
    def change(part: dict[str, Any]) -> dict[str, Any] | None:
        return None if part.get("kind") == "anthropic.message_start" else part

    return _map(sdk, change), ours


def _provider_tool_input(sdk: Side, ours: Side) -> tuple[Side, Side]:
    def change(part: dict[str, Any]) -> dict[str, Any]:
        tool_input = part.get("input")
        if part.get("providerExecuted") and isinstance(tool_input, dict):
            if tool_input.get("type") == "programmatic-tool-call":
                part["input"] = {k: v for k, v in tool_input.items() if k != "type"}
        return part

    return _map(sdk, change), ours


def _server_tool_error_text(sdk: Side, ours: Side) -> tuple[Side, Side]:
    def change(part: dict[str, Any]) -> dict[str, Any]:
        if part.get("providerExecuted") and part.get("state") == "output-error":
            try:
                part["errorText"] = json.loads(part["errorText"])["errorCode"]
            except (ValueError, KeyError, TypeError):
                pass
        return part

    return _map(sdk, change), ours


def _invalid_tool_input_text(sdk: Side, ours: Side) -> tuple[Side, Side]:
    def change(part: dict[str, Any]) -> dict[str, Any]:
        if part.get("state") == "output-error" and isinstance(part.get("input"), str):
            part["errorText"] = "<not JSON>"
        return part

    return _map(sdk, change), _map(ours, change)


def _close_streaming_parts(part: dict[str, Any]) -> dict[str, Any]:
    if part.get("state") == "streaming":
        part["state"] = "done"
    return part


def _error_closes_parts(sdk: Side, ours: Side) -> tuple[Side, Side]:
    if sdk.ending != "error chunk" or ours.ending != "error chunk":
        return sdk, ours
    sdk_text, our_text = sdk.verdict.error_text or "", ours.verdict.error_text or ""
    assert sdk_text in our_text, (sdk_text, our_text)
    return _map(sdk, _close_streaming_parts), ours


def _incomplete_closes_parts(sdk: Side, ours: Side) -> tuple[Side, Side]:
    if sdk.ending in (None, "interrupted", "error chunk"):
        return sdk, ours
    return _map(sdk, _close_streaming_parts), ours


def _truncation_is_an_error(sdk: Side, ours: Side) -> tuple[Side, Side]:
    if sdk.ending != "interrupted":
        return sdk, ours
    assert ours.ending == "error chunk", "a cut-off answer must end with an error chunk"

    def change(part: dict[str, Any]) -> dict[str, Any]:
        part = _close_streaming_parts(part)
        if part.get("state") == "input-streaming":
            part["state"], part["errorText"] = "output-error", "interrupted"
        return part

    return replace(_map(sdk, change), ending="error chunk"), ours


def _unknown_events_forwarded(sdk: Side, ours: Side) -> tuple[Side, Side]:
    if not (sdk.verdict.error_text or "").startswith("Type validation failed"):
        return sdk, ours
    assert ours.verdict.ok and ours.ending not in ("error chunk", None)
    # The AI SDK stopped at the unknown event; what it had shown is a prefix of ours.
    ours_text = "".join(p.get("text", "") for p in ours.parts)
    assert all(p.get("text", "") in ours_text for p in sdk.parts)
    return ours, ours


def _document_citation_sources(sdk: Side, ours: Side) -> tuple[Side, Side]:
    def change(part: dict[str, Any]) -> dict[str, Any] | None:
        return None if part.get("type") == "source-document" else part

    if any(p.get("type") == "source-document" for p in sdk.parts):
        return sdk, ours
    return sdk, _map(ours, change)


def _provider_tools_not_dynamic(sdk: Side, ours: Side) -> tuple[Side, Side]:
    def change(part: dict[str, Any]) -> dict[str, Any]:
        if part.get("type") == "dynamic-tool" and part.get("providerExecuted"):
            part["type"] = "tool-" + part.pop("toolName")
        return part

    return _map(sdk, change), ours


def _text_split_at_provider_tools(sdk: Side, ours: Side) -> tuple[Side, Side]:
    """Compare the text as one piece, before the first provider-run tool."""

    def joined(side: Side) -> Side:
        if not any(p.get("providerExecuted") for p in side.parts):
            return side
        text = "".join(p["text"] for p in side.parts if p.get("type") == "text")
        parts, placed = [], False
        for part in side.parts:
            if part.get("type") != "text":
                parts.append(part)
            elif not placed:
                parts.append({**part, "text": text})
                placed = True
        return replace(side, parts=parts)

    return joined(sdk), joined(ours)


def _mcp_call_on_approval_part(sdk: Side, ours: Side) -> tuple[Side, Side]:
    """An ``mcp_call`` with ``approval_request_id``: ours lands on the approval's part (that
    id); the AI SDK, with no approval in the prompt to map it to, uses the item id."""

    def change(part: dict[str, Any]) -> dict[str, Any]:
        if part.get("type") == "dynamic-tool" and str(part.get("toolName")).startswith("mcp."):
            part.pop("toolCallId", None)
        return part

    return _map(sdk, change), _map(ours, change)


NORMALIZERS: dict[str, Normalizer] = {
    "mcp-call-on-approval-part": _mcp_call_on_approval_part,
    "message-start-custom-part": _drop_message_start_custom,
    "provider-tool-input-kept": _provider_tool_input,
    "server-tool-error-text": _server_tool_error_text,
    "invalid-tool-input-text": _invalid_tool_input_text,
    "error-closes-parts": _error_closes_parts,
    "incomplete-closes-parts": _incomplete_closes_parts,
    "truncation-is-an-error": _truncation_is_an_error,
    "unknown-events-forwarded": _unknown_events_forwarded,
    "document-citation-sources": _document_citation_sources,
    "provider-tools-not-dynamic": _provider_tools_not_dynamic,
    "text-split-at-provider-tools": _text_split_at_provider_tools,
}


def _recordings(dialect: str) -> list[Path]:
    return sorted((FIXTURES / dialect).glob("*.jsonl"))


@pytest.mark.conformance
@pytest.mark.parametrize("dialect", sorted(PROVIDER_DIALECTS))
def test_final_messages_agree_with_the_ai_sdk_provider(real_clients, dialect: str) -> None:
    provider, spec_name, generated_tool_ids = PROVIDER_DIALECTS[dialect]
    documented: dict[str, str] = importlib.import_module(spec_name).AI_SDK_DIFFERENCES
    assert set(documented) <= set(NORMALIZERS), "a documented difference has no normalizer"
    recordings = _recordings(dialect)
    cases = []
    for recording in recordings:
        frames = [f if isinstance(f, str) else f.decode() for f in read_frames(recording)]
        cases.append({"provider": provider, "frames": frames, "tools": _tool_names(frames)})
    sdk_bodies = real_clients.ai_sdk_provider_bodies(cases)
    ours = [replay_file(dialect, recording, target=7) for recording in recordings]
    verdicts = real_clients.check_many([*sdk_bodies, *ours], majors=(7,))
    seen: set[str] = set()
    for i, recording in enumerate(recordings):
        sdk_verdict, our_verdict = verdicts[i][7], verdicts[len(recordings) + i][7]
        assert our_verdict.ok, (recording.name, our_verdict.fatal)
        sdk = _side(sdk_verdict, generated_tool_ids)
        mine = _side(our_verdict, generated_tool_ids)
        for name in documented:
            after = NORMALIZERS[name](sdk, mine)
            if after != (sdk, mine):
                seen.add(name)
                sdk, mine = after
        assert (mine.parts, mine.ending) == (sdk.parts, sdk.ending), (
            f"{recording.name}: an undocumented difference from the AI SDK"
        )
    stale = set(documented) - seen
    assert not stale, f"documented differences no recording shows any more: {sorted(stale)}"
