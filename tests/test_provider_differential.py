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

from chunkbridge.gateway.devtools.recordings import read_frames
from chunkbridge.gateway.devtools.replay import replay_file
from tests.conformance.harness import Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

RECORDED = FIXTURES / "recorded"

#: dialect → (the AI SDK provider that speaks the same API, the dialect's spec module, whether
#: tool call ids are generated on each side rather than sent by the provider).
PROVIDER_DIALECTS = {
    "anthropic-messages": ("anthropic", "chunkbridge.protocol_specs.anthropic_messages", False),
    "openai-responses": ("openai", "chunkbridge.protocol_specs.openai_responses", False),
    "openai-chat": ("openai-compatible", "chunkbridge.protocol_specs.openai_chat", False),
    "gemini": ("google", "chunkbridge.protocol_specs.gemini", True),
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


#: Provider-run tools the AI SDK names and shapes only when the app declares them (as the AI
#: SDK's own tests do): server tool name in the stream → (declared name, factory, arguments).
_ANTHROPIC_SERVER_TOOLS = {
    "bash_code_execution": ("code_execution", "codeExecution_20250825"),
    "text_editor_code_execution": ("code_execution", "codeExecution_20250825"),
    "code_execution": ("code_execution", "codeExecution_20250825"),
    "web_fetch": ("web_fetch", "webFetch_20250910"),
    "web_search": ("web_search", "webSearch_20250305"),
    "tool_search_tool_regex": ("tool_search", "toolSearchRegex_20251119"),
    "tool_search_tool_bm25": ("tool_search", "toolSearchBm25_20251119"),
}


def _declarations(frames: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """The tools a recording's app declared: the ones it runs (to ``streamText`` without
    ``execute``, as an app's client-side tools are) and the provider's own tools, declared with
    the provider's factory where the AI SDK needs it to name or place them."""
    names: set[str] = set()
    provider: dict[str, dict[str, Any]] = {}
    for frame in frames:
        try:
            event = json.loads(frame)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        blocks = [event.get("content_block"), event.get("item"), *(message.get("content") or [])]
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind, name = block.get("type"), block.get("name")
            if kind in ("tool_use", "function_call", "custom_tool_call"):
                names.add(name)
            elif kind == "server_tool_use" and name in _ANTHROPIC_SERVER_TOOLS:
                declared, factory = _ANTHROPIC_SERVER_TOOLS[name]
                provider[declared] = {"name": declared, "factory": factory}
            elif kind == "shell_call":
                env = (block.get("environment") or {}).get("type")
                args = {"environment": {"type": "containerAuto"}} if env else {}
                provider["shell"] = {"name": "shell", "factory": "shell", "args": args}
            elif kind == "apply_patch_call":
                provider["apply_patch"] = {"name": "apply_patch", "factory": "applyPatch"}
            elif kind == "local_shell_call":
                provider["local_shell"] = {"name": "local_shell", "factory": "localShell"}
            elif kind == "program":
                provider["programmatic_tool_calling"] = {
                    "name": "programmatic_tool_calling",
                    "factory": "programmaticToolCalling",
                }
            elif kind == "tool_search_call":
                args = {"execution": "client"} if block.get("execution") == "client" else {}
                provider["tool_search"] = {
                    "name": "tool_search",
                    "factory": "toolSearch",
                    "args": args,
                }
        for choice in event.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                if isinstance(call, dict) and isinstance(call.get("function"), dict):
                    names.add(call["function"].get("name"))
        for candidate in event.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if isinstance(part.get("functionCall"), dict):
                    names.add(part["functionCall"].get("name"))
    app = sorted(n for n in names if isinstance(n, str) and n)
    return app, list(provider.values())


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


def _provider_tools_not_dynamic(sdk: Side, ours: Side) -> tuple[Side, Side]:
    typed = {(p.get("type"), p.get("toolCallId")) for p in ours.parts}

    def change(part: dict[str, Any]) -> dict[str, Any]:
        if part.get("type") == "dynamic-tool" and part.get("providerExecuted"):
            key = ("tool-" + str(part.get("toolName")), part.get("toolCallId"))
            if key in typed:
                part["type"] = key[0]
                del part["toolName"]
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


def _ai_sdk_rejects_real_stream(sdk: Side, ours: Side) -> tuple[Side, Side]:
    """The AI SDK's strict schemas reject a real event (xAI's citations without indexes) or
    its stream fails on a result for a call of an earlier response: what it showed, if
    anything, is part of ours, and ours goes on."""
    failed = (sdk.verdict.error_text or "").startswith("Type validation failed")
    shown = [p for p in sdk.parts if p.get("type") not in ("step-start", "custom")]
    if not failed and not (sdk.ending is None and not shown and ours.parts):
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


def _recordings(dialect: str) -> list[tuple[Path, str]]:
    """The dialect's recordings and the AI SDK provider package that reads each: the ones
    written from the providers' documentation (``fixtures/<dialect>/``), then the ones recorded
    from the live APIs (``fixtures/recorded/<dialect>/``, see its ``index.json``)."""
    provider = PROVIDER_DIALECTS[dialect][0]
    written = [(path, provider) for path in sorted((FIXTURES / dialect).glob("*.jsonl"))]
    if dialect == "openai-chat":
        written = []  # written for the dialect's extensions, which no AI SDK provider reads
    index = json.loads((RECORDED / "index.json").read_text())["recordings"]
    recorded = [
        (RECORDED / name, entry["sdk_provider"])
        for name, entry in sorted(index.items())
        if name.startswith(f"{dialect}/")
    ]
    return written + recorded


@pytest.mark.conformance
@pytest.mark.parametrize("dialect", sorted(PROVIDER_DIALECTS))
def test_final_messages_agree_with_the_ai_sdk_provider(real_clients, dialect: str) -> None:
    _, spec_name, generated_tool_ids = PROVIDER_DIALECTS[dialect]
    documented: dict[str, str] = importlib.import_module(spec_name).AI_SDK_DIFFERENCES
    assert set(documented) <= set(NORMALIZERS), "a documented difference has no normalizer"
    recordings = _recordings(dialect)
    cases = []
    for recording, provider in recordings:
        frames = [f if isinstance(f, str) else f.decode() for f in read_frames(recording)]
        tools, provider_tools = _declarations(frames)
        cases.append(
            {
                "provider": provider,
                "frames": frames,
                "tools": tools,
                "providerTools": provider_tools,
            }
        )
    sdk_bodies = real_clients.ai_sdk_provider_bodies(cases)
    ours = [replay_file(dialect, recording, target=7) for recording, _ in recordings]
    verdicts = real_clients.check_many([*sdk_bodies, *ours], majors=(7,))
    seen: set[str] = set()
    failures = []
    for i, (recording, _) in enumerate(recordings):
        sdk_verdict, our_verdict = verdicts[i][7], verdicts[len(recordings) + i][7]
        assert our_verdict.ok, (recording.name, our_verdict.fatal)
        sdk = _side(sdk_verdict, generated_tool_ids)
        mine = _side(our_verdict, generated_tool_ids)
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
def test_every_recorded_stream_is_accepted_by_ai_5_6_and_7(real_clients) -> None:
    """The held-out recordings, translated for each major, are accepted by that major's client,
    and none ends with an empty message unless it reports an error or a refusal with no words."""
    names = sorted(json.loads((RECORDED / "index.json").read_text())["recordings"])
    for major in (5, 6, 7):
        bodies = [replay_file(name.split("/")[0], RECORDED / name, target=major) for name in names]
        verdicts = real_clients.check_many(bodies, majors=(major,))
        for name, verdict in zip(names, verdicts, strict=True):
            result = verdict[major]
            assert result.ok, (name, major, result.fatal)
            message = result.message or {}
            parts = [p for p in message.get("parts", []) if p["type"] != "step-start"]
            said_why = result.error_text is not None or result.finish_reason == "content-filter"
            assert parts or said_why, (name, major, "an empty message")
