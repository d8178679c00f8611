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
from pathlib import Path
from typing import Any

import pytest

from gateway.recordings import read_frames
from gateway.replay import replay_file
from tests.conformance.harness import Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

#: dialect → (the AI SDK provider that speaks the same API, the dialect's spec module).
PROVIDER_DIALECTS = {
    "anthropic-messages": ("anthropic", "protocol_specs.anthropic_messages"),
    "openai-responses": ("openai", "protocol_specs.openai_responses"),
}

Parts = list[dict[str, Any]]
Side = tuple[Verdict, Parts]
#: A normalizer gets (AI SDK side, our side) and returns the two part lists with one documented
#: difference erased; it must leave them unchanged where that difference does not occur.
Normalizer = Callable[[Side, Side], tuple[Parts, Parts]]


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
    return sorted(n for n in names if isinstance(n, str))


def _without_ids(parts: Parts) -> Parts:
    out = []
    for part in parts:
        part = {k: v for k, v in part.items() if k not in ("id", "sourceId")}
        out.append(part)
    return out


def _map(parts: Parts, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Parts:
    out = []
    for part in parts:
        changed = change(dict(part))
        if changed is not None:
            out.append(changed)
    return out


def _drop_message_start_custom(sdk: Side, ours: Side) -> tuple[Parts, Parts]:
    def change(part: dict[str, Any]) -> dict[str, Any] | None:
        return None if part.get("kind") == "anthropic.message_start" else part

    return _map(sdk[1], change), ours[1]


def _provider_tool_input(sdk: Side, ours: Side) -> tuple[Parts, Parts]:
    def change(part: dict[str, Any]) -> dict[str, Any]:
        tool_input = part.get("input")
        if part.get("providerExecuted") and isinstance(tool_input, dict):
            if tool_input.get("type") == "programmatic-tool-call":
                part["input"] = {k: v for k, v in tool_input.items() if k != "type"}
        return part

    return _map(sdk[1], change), ours[1]


def _server_tool_error_text(sdk: Side, ours: Side) -> tuple[Parts, Parts]:
    def change(part: dict[str, Any]) -> dict[str, Any]:
        if part.get("providerExecuted") and part.get("state") == "output-error":
            try:
                part["errorText"] = json.loads(part["errorText"])["errorCode"]
            except (ValueError, KeyError, TypeError):
                pass
        return part

    return _map(sdk[1], change), ours[1]


def _invalid_tool_input_text(sdk: Side, ours: Side) -> tuple[Parts, Parts]:
    def change(part: dict[str, Any]) -> dict[str, Any]:
        if part.get("state") == "output-error" and isinstance(part.get("input"), str):
            part["errorText"] = "<not JSON>"
        return part

    return _map(sdk[1], change), _map(ours[1], change)


def _close_streaming_parts(part: dict[str, Any]) -> dict[str, Any]:
    if part.get("state") == "streaming":
        part["state"] = "done"
    return part


def _error_closes_parts(sdk: Side, ours: Side) -> tuple[Parts, Parts]:
    if sdk[0].error_text is None or ours[0].error_text is None:
        return sdk[1], ours[1]
    assert sdk[0].error_text in ours[0].error_text, (sdk[0].error_text, ours[0].error_text)
    return _map(sdk[1], _close_streaming_parts), ours[1]


def _incomplete_closes_parts(sdk: Side, ours: Side) -> tuple[Parts, Parts]:
    if sdk[0].finish_reason in (None, "interrupted") or sdk[0].error_text is not None:
        return sdk[1], ours[1]
    return _map(sdk[1], _close_streaming_parts), ours[1]


def _truncation_is_an_error(sdk: Side, ours: Side) -> tuple[Parts, Parts]:
    if sdk[0].finish_reason != "interrupted":
        return sdk[1], ours[1]
    assert ours[0].error_text, "a cut-off answer must end with an error chunk"

    def change(part: dict[str, Any]) -> dict[str, Any]:
        part = _close_streaming_parts(part)
        if part.get("state") == "input-streaming":
            part["state"], part["errorText"] = "output-error", "interrupted"
        return part

    return _map(sdk[1], change), ours[1]


def _unknown_events_forwarded(sdk: Side, ours: Side) -> tuple[Parts, Parts]:
    if not (sdk[0].error_text or "").startswith("Type validation failed"):
        return sdk[1], ours[1]
    assert ours[0].ok and ours[0].error_text is None
    # The AI SDK stopped at the unknown event; what it had shown is a prefix of ours.
    sdk_parts = _map(sdk[1], _close_streaming_parts)
    ours_text = "".join(p.get("text", "") for p in ours[1])
    assert all(p.get("text", "") in ours_text for p in sdk_parts)
    return ours[1], ours[1]


def _document_citation_sources(sdk: Side, ours: Side) -> tuple[Parts, Parts]:
    def change(part: dict[str, Any]) -> dict[str, Any] | None:
        return None if part.get("type") == "source-document" else part

    if any(p.get("type") == "source-document" for p in sdk[1]):
        return sdk[1], ours[1]
    return sdk[1], _map(ours[1], change)


NORMALIZERS: dict[str, Normalizer] = {
    "message-start-custom-part": _drop_message_start_custom,
    "provider-tool-input-kept": _provider_tool_input,
    "server-tool-error-text": _server_tool_error_text,
    "invalid-tool-input-text": _invalid_tool_input_text,
    "error-closes-parts": _error_closes_parts,
    "incomplete-closes-parts": _incomplete_closes_parts,
    "truncation-is-an-error": _truncation_is_an_error,
    "unknown-events-forwarded": _unknown_events_forwarded,
    "document-citation-sources": _document_citation_sources,
}


def _recordings(dialect: str) -> list[Path]:
    return sorted((FIXTURES / dialect).glob("*.jsonl"))


@pytest.mark.conformance
@pytest.mark.parametrize("dialect", sorted(PROVIDER_DIALECTS))
def test_final_messages_agree_with_the_ai_sdk_provider(real_clients, dialect: str) -> None:
    provider, spec_name = PROVIDER_DIALECTS[dialect]
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
        sdk = (sdk_verdict, _without_ids((sdk_verdict.message or {}).get("parts", [])))
        mine = (our_verdict, _without_ids((our_verdict.message or {}).get("parts", [])))
        for name in documented:
            before = (sdk[1], mine[1])
            after = NORMALIZERS[name](sdk, mine)
            if after != before:
                seen.add(name)
                sdk, mine = (sdk[0], after[0]), (mine[0], after[1])
        assert mine[1] == sdk[1], f"{recording.name}: an undocumented difference from the AI SDK"
        if sdk_verdict.finish_reason not in (None, "interrupted"):
            assert our_verdict.finish_reason == sdk_verdict.finish_reason, recording.name
    stale = set(documented) - seen
    assert not stale, f"documented differences no recording shows any more: {sorted(stale)}"
