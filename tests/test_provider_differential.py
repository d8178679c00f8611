"""Differential conformance: every recorded provider stream, through chunkbridge and through the
AI SDK's own provider package (+ ``streamText`` + ``toUIMessageStream``), ends in the same
``UIMessage`` for the real ai 7 client — ids aside, and apart from the differences each dialect's
spec module lists in ``AI_SDK_DIFFERENCES`` with its reason. A recording that is a later response
of a run continues, on each side, the message that side ended the previous one with (the app's
calls answered): a result for a call of an earlier response lands on that call's part.

Each documented difference has a normalizer here that erases exactly that difference; the test
fails when a difference is left after them (fix it or document it), and when a documented
difference is no longer seen in any recording (the table went stale).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from tests.conformance.harness import Verdict
from tests.recorded_runs import PROVIDER_DIALECTS, our_runs, recordings, result_ids, sdk_runs

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

    sdk = _map(sdk, change)
    if all(part.get("type") == "step-start" for part in sdk.parts):
        sdk = replace(sdk, parts=[])  # a message with nothing in it, as _side has it
    return sdk, ours


def _result_metadata_on_the_call(sdk: Side, ours: Side) -> tuple[Side, Side]:
    """The AI SDK repeats a call's metadata (its MCP server, the program that called it) on
    its result (``resultProviderMetadata``); ours carries it on the call only."""

    def change(part: dict[str, Any]) -> dict[str, Any]:
        part.pop("resultProviderMetadata", None)
        return part

    return _map(sdk, change), _map(ours, change)


def _spliced_message_start(sdk: Side, ours: Side) -> tuple[Side, Side]:
    """A second ``message_start`` in the middle of a tool call's input (the AI SDK's own test
    of a broken stream): the AI SDK ends with an error; ours ends the turn at the first
    message's end, the call's text joined and reported as not JSON."""
    if sdk.ending != "error chunk" or not (sdk.verdict.error_text or "").startswith(
        "Received message_start"
    ):
        return sdk, ours
    assert ours.verdict.ok
    return ours, ours


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
    # The AI SDK stopped at the unknown event; what it had shown is a prefix of ours.
    return _ours_goes_on(sdk, ours)


def _ours_goes_on(sdk: Side, ours: Side) -> tuple[Side, Side]:
    """Where the AI SDK stopped short: ours ends normally, and every text the AI SDK had shown
    is in ours; ours is then the answer on both sides."""
    assert ours.verdict.ok and ours.ending not in ("error chunk", None)
    ours_text = "".join(p.get("text", "") for p in ours.parts)
    assert all(p.get("text", "") in ours_text for p in sdk.parts)
    return ours, ours


def _document_citation_sources(sdk: Side, ours: Side) -> tuple[Side, Side]:
    def change(part: dict[str, Any]) -> dict[str, Any] | None:
        return None if part.get("type") == "source-document" else part

    if any(p.get("type") == "source-document" for p in sdk.parts):
        return sdk, ours
    return sdk, _map(ours, change)


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
    """An ``mcp_call`` with ``approval_request_id`` is the call the user approved: ours lands
    on the approval's part (that id). The AI SDK shows it as a part of its own (the item id)
    and leaves the approved part ``approval-responded``, waiting forever."""

    def mcp(part: dict[str, Any]) -> bool:
        return part.get("type") == "dynamic-tool" and str(part.get("toolName")).startswith("mcp.")

    parts: Parts = []
    for part in sdk.parts:
        approved = [
            p
            for p in parts
            if mcp(p)
            and p.get("state") == "approval-responded"
            and (p.get("toolName"), p.get("input")) == (part.get("toolName"), part.get("input"))
        ]
        if mcp(part) and str(part.get("state")).startswith("output-") and approved:
            landed = {k: v for k, v in part.items() if k not in ("toolCallId", "approval")}
            approved[0].update(landed)
            continue
        parts.append(dict(part))
    sdk = replace(sdk, parts=parts)

    def change(part: dict[str, Any]) -> dict[str, Any]:
        if mcp(part):
            part.pop("toolCallId", None)
        return part

    return _map(sdk, change), _map(ours, change)


def _ai_sdk_rejects_real_stream(sdk: Side, ours: Side) -> tuple[Side, Side]:
    """The AI SDK's strict schemas reject a real event (xAI's citations without indexes): what
    it showed is part of ours, and ours goes on."""
    if not (sdk.verdict.error_text or "").startswith("Type validation failed"):
        return sdk, ours
    return _ours_goes_on(sdk, ours)


def _raw_reasoning_text_kept(sdk: Side, ours: Side) -> tuple[Side, Side]:
    """``reasoning_text.delta`` (LM Studio's raw reasoning): the AI SDK's part stays empty."""

    def empty(part: dict[str, Any]) -> dict[str, Any]:
        if part.get("type") == "reasoning":
            part["text"] = ""
        return part

    sdk_empty = [p for p in sdk.parts if p.get("type") == "reasoning" and not p.get("text")]
    if not sdk_empty:
        return sdk, ours
    return sdk, _map(ours, empty)


def _hosted_tool_status_text(sdk: Side, ours: Side) -> tuple[Side, Side]:
    """A hosted tool that ended in another status: the AI SDK's ``errorText`` is the item's
    JSON (``{"status":"searching"}``), ours a sentence naming the status."""

    def change(part: dict[str, Any]) -> dict[str, Any]:
        if part.get("providerExecuted") and part.get("state") == "output-error":
            text = part.get("errorText", "")
            try:
                part["errorText"] = json.loads(text)["status"]
            except (ValueError, KeyError, TypeError):
                if " ended with status " in text:
                    part["errorText"] = text.rsplit(" ", 1)[-1]
        return part

    return _map(sdk, change), _map(ours, change)


def _app_run_tools_finish_tool_calls(sdk: Side, ours: Side) -> tuple[Side, Side]:
    """A shell command, a local shell action or a client-side tool search waits for the app:
    ours finishes ``tool-calls``, the AI SDK's provider ``stop`` (it counts only function,
    custom, computer and patch calls)."""
    waiting = [
        p
        for p in ours.parts
        if p.get("state") == "input-available"
        and not p.get("providerExecuted")
        and p.get("type") in ("tool-shell", "tool-local_shell", "tool-tool_search")
    ]
    if waiting and (sdk.ending, ours.ending) == ("stop", "tool-calls"):
        return replace(sdk, ending="tool-calls"), ours
    return sdk, ours


def _citations_as_sources(sdk: Side, ours: Side) -> tuple[Side, Side]:
    if any(part["type"] == "source-url" for part in sdk.parts):
        return sdk, ours
    return sdk, _map(ours, lambda part: None if part["type"] == "source-url" else part)


NORMALIZERS: dict[str, Normalizer] = {
    "citations-as-sources": _citations_as_sources,
    "result-metadata-on-the-call": _result_metadata_on_the_call,
    "spliced-message-start": _spliced_message_start,
    "ai-sdk-rejects-real-stream": _ai_sdk_rejects_real_stream,
    "raw-reasoning-text-kept": _raw_reasoning_text_kept,
    "hosted-tool-status-text": _hosted_tool_status_text,
    "app-run-tools-finish-tool-calls": _app_run_tools_finish_tool_calls,
    "mcp-call-on-approval-part": _mcp_call_on_approval_part,
    "message-start-custom-part": _drop_message_start_custom,
    "server-tool-error-text": _server_tool_error_text,
    "invalid-tool-input-text": _invalid_tool_input_text,
    "error-closes-parts": _error_closes_parts,
    "incomplete-closes-parts": _incomplete_closes_parts,
    "truncation-is-an-error": _truncation_is_an_error,
    "unknown-events-forwarded": _unknown_events_forwarded,
    "document-citation-sources": _document_citation_sources,
    "text-split-at-provider-tools": _text_split_at_provider_tools,
}


@pytest.mark.conformance
@pytest.mark.parametrize("dialect", sorted(PROVIDER_DIALECTS))
def test_final_messages_agree_with_the_ai_sdk_provider(real_clients, dialect: str) -> None:
    _, spec_name, generated_tool_ids = PROVIDER_DIALECTS[dialect]
    documented: dict[str, str] = importlib.import_module(spec_name).AI_SDK_DIFFERENCES
    assert set(documented) <= set(NORMALIZERS), "a documented difference has no normalizer"
    runs = recordings(dialect)
    sdk_verdicts = sdk_runs(real_clients, runs)
    our_verdicts, _ = our_runs(real_clients, dialect, runs, 7)
    seen: set[str] = set()
    failures = []
    for i, recording in enumerate(runs):
        assert our_verdicts[i].ok, (recording.name, our_verdicts[i].fatal)
        sdk = _side(sdk_verdicts[i], generated_tool_ids)
        mine = _side(our_verdicts[i], generated_tool_ids)
        for name in documented:
            after = NORMALIZERS[name](sdk, mine)
            if after != (sdk, mine):
                seen.add(name)
                sdk, mine = after
        if (mine.parts, mine.ending) != (sdk.parts, sdk.ending):
            failures.append((recording.name, sdk.parts, sdk.ending, mine.parts, mine.ending))
    for name, sdk_parts, sdk_ending, our_parts, our_ending in failures:
        print(f"\n=== {name}\n--- AI SDK ({sdk_ending}):\n{json.dumps(sdk_parts)[:3000]}")
        print(f"--- chunkbridge ({our_ending}):\n{json.dumps(our_parts)[:3000]}")
    assert not failures, f"undocumented differences from the AI SDK: {[f[0] for f in failures]}"
    stale = set(documented) - seen
    assert not stale, f"documented differences no recording shows any more: {sorted(stale)}"


@pytest.mark.conformance
@pytest.mark.parametrize("major", [5, 6, 7])
def test_every_recorded_stream_is_accepted_by_ai_5_6_and_7(real_clients, major: int) -> None:
    """The held-out recordings, translated for each major (a later response of a run as the
    continuation of the message before), are accepted by that major's client; none ends with
    an empty message unless it reports an error or a refusal with no words; and a result for a
    call of an earlier response lands on that call's part."""
    landed = []
    for dialect in sorted(PROVIDER_DIALECTS):
        runs = recordings(dialect, written_too=False)
        verdicts, histories = our_runs(real_clients, dialect, runs, major)
        for i, recording in enumerate(runs):
            result = verdicts[i]
            assert result.ok, (recording.name, major, result.fatal)
            message = result.message or {}
            parts = [p for p in message.get("parts", []) if p["type"] != "step-start"]
            said_why = result.error_text is not None or result.finish_reason == "content-filter"
            assert parts or said_why, (recording.name, major, "an empty message")
            earlier = {p.get("toolCallId") for p in (histories[i] or {}).get("parts", [])}
            for call_id in result_ids(recording.frames) & earlier:
                (part,) = [p for p in parts if p.get("toolCallId") == call_id]
                assert part["state"] == "output-available", (recording.name, major, part)
                landed.append(recording.name)
    # the runs that show it: Anthropic's programmatic tool calling and deferred tool searches,
    # OpenAI's program, an MCP call after its approval
    assert len(landed) >= 5, landed
