"""Round trip: every recorded answer, kept by the real ai 7 client and sent back with the next
question, becomes the same provider request from chunkbridge as from the AI SDK
(``convertToModelMessages`` + the provider package) — apart from the differences each dialect's
spec module lists in ``AI_SDK_REQUEST_DIFFERENCES`` with its reason.

This is what keeps a conversation going: compaction summaries, signed thinking, citations,
server tools and their results, calls a program made, the app's answers to the built-in tools
it runs (shell, patch, tool search) — each must reach the provider in the form it wants back.
The app's calls that the recording leaves waiting are answered first, in each tool's own output
shape, as an app would answer them; a later response of a run is sent back as the whole message
the run built (``tests/recorded_runs.py``).
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers import provider_turn
from tests.recorded_runs import (
    AFTER_A_DENIAL,
    APP_ANSWERS,
    USER,
    Recording,
    answered,
    our_runs,
    recordings,
)

#: dialect → (its module, its settings class, the request's history key, the AI SDK's options).
ROUND_TRIPS = {
    "anthropic-messages": ("anthropic_messages", "AnthropicSettings", "messages", None),
    # store: false is the AI SDK's mode that sends items whole, as chunkbridge always does
    "openai-responses": (
        "openai_responses",
        "OpenAIResponsesSettings",
        "input",
        {"openai": {"store": False}},
    ),
}

#: The next question, after the recorded answer.
NEXT = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go on"}]}

Items = list[Any]
#: (AI SDK's history, ours) → both with one documented difference erased.
RequestNormalizer = Callable[[Items, Items], tuple[Items, Items]]


def _declared(dialect: str, tools: list[str], provider_tools: list[dict[str, Any]]) -> Any:
    """The deployment's ``tools`` setting for the tools the recording's app declared."""
    declared: dict[str, Any] = {name: {"input_schema": {"type": "object"}} for name in tools}
    if dialect == "openai-responses":
        for tool in provider_tools:
            declared[tool["name"]] = {"type": tool.get("type", tool["name"])}
    return declared


def _without_nulls(value: Any) -> Any:
    """``null`` and absent are the same to the APIs' optional fields (the AI SDK leaves out what
    is ``undefined``, chunkbridge may write ``null``)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _blocks(messages: Items) -> list[dict[str, Any]]:
    return [b for m in messages if isinstance(m.get("content"), list) for b in m["content"]]


def _server_tool_error_code_kept(sdk: Items, ours: Items) -> tuple[Items, Items]:
    codes = {
        b["tool_use_id"]: b["content"]["error_code"]
        for b in _blocks(sdk)
        if isinstance(b.get("content"), dict) and "error_code" in b["content"]
    }
    ours = copy.deepcopy(ours)
    for block in _blocks(ours):
        content = block.get("content")
        if isinstance(content, dict) and codes.get(block.get("tool_use_id")) == "unavailable":
            content["error_code"] = "unavailable"
    return sdk, ours


def _empty_text_not_sent(sdk: Items, ours: Items) -> tuple[Items, Items]:
    empty = {"role": "assistant", "content": ""}
    return [item for item in sdk if item != empty], ours


def _decided_approval_sent_once(sdk: Items, ours: Items) -> tuple[Items, Items]:
    sent = {i.get("approval_request_id") for i in ours if isinstance(i, dict)}

    def resent(item: Any) -> bool:
        answer = item.get("type") == "mcp_approval_response"
        return answer and item.get("approval_request_id") not in sent

    return [item for item in sdk if not resent(item)], ours


def _approval_request_by_reference(sdk: Items, ours: Items) -> tuple[Items, Items]:
    answered = {
        i.get("approval_request_id")
        for i in ours
        if isinstance(i, dict) and i.get("type") == "mcp_approval_response"
    }

    def referenced(item: Any) -> bool:
        return item.get("type") == "item_reference" and item.get("id") in answered

    def denied_output(item: Any) -> bool:
        return item.get("type") == "function_call_output" and item.get("call_id") in answered

    return [i for i in sdk if not denied_output(i)], [i for i in ours if not referenced(i)]


REQUEST_NORMALIZERS: dict[str, RequestNormalizer] = {
    "server-tool-error-code-kept": _server_tool_error_code_kept,
    "empty-text-not-sent": _empty_text_not_sent,
    "decided-approval-sent-once": _decided_approval_sent_once,
    "approval-request-by-reference": _approval_request_by_reference,
}


@pytest.mark.conformance
@pytest.mark.parametrize("dialect", sorted(ROUND_TRIPS))
def test_the_next_request_agrees_with_the_ai_sdk_provider(real_clients, dialect: str) -> None:
    """The next question after each recorded answer, and the continuation that asked for each
    later response of a run (the message so far, the app's calls answered)."""
    module_name, settings_name, key, provider_options = ROUND_TRIPS[dialect]
    dialects = "chunkbridge.translators.dialects"
    dialect_module = importlib.import_module(f"{dialects}.{module_name}.request")
    spec = importlib.import_module(f"chunkbridge.protocol_specs.{module_name}")
    documented: dict[str, str] = spec.AI_SDK_REQUEST_DIFFERENCES
    assert set(documented) <= set(REQUEST_NORMALIZERS), "a documented difference has no normalizer"
    runs = recordings(dialect)
    verdicts, _ = our_runs(real_clients, dialect, runs, 7)
    cases, ours, names = [], [], []

    def add(name: str, recording: Recording, history: list[dict[str, Any]]) -> None:
        case = recording.sdk_case(None)
        case["messages"] = history
        if provider_options:
            case["providerOptions"] = provider_options
        cases.append(case)
        settings = getattr(dialect_module, settings_name)
        declared = _declared(dialect, recording.tools, recording.provider_tools)
        turn = provider_turn(settings, history, tools=declared, tool_names=recording.tool_names)
        ours.append(dialect_module.request_body(turn)[key])
        names.append(name)

    for i, recording in enumerate(runs):
        message = verdicts[i].message or {}
        if message.get("parts"):  # (else nothing to send back: an error before any content)
            add(recording.name, recording, [USER, answered(message, approve=None), NEXT])
        if recording.previous is not None:  # the continuation that asked for this response
            approve = recording.name not in AFTER_A_DENIAL
            continued = answered(verdicts[recording.previous].message or {}, approve)
            add(f"{recording.name} (the continuation)", recording, [USER, continued])
    sdk_requests = real_clients.ai_sdk_provider_requests(cases)
    assert len(names) > 50, "too few recordings to hold the request side to the AI SDK's"
    seen: set[str] = set()
    failures = []
    for name, request, mine in zip(names, sdk_requests, ours, strict=True):
        sdk_items, our_items = _without_nulls(request[key]), _without_nulls(mine)
        for difference in documented:
            after = REQUEST_NORMALIZERS[difference](sdk_items, our_items)
            if after != (sdk_items, our_items):
                seen.add(difference)
                sdk_items, our_items = after
        if sdk_items != our_items:
            failures.append((name, sdk_items, our_items))
    for name, sdk_items, our_items in failures:
        print(f"\n=== {name}\n--- AI SDK:\n{json.dumps(sdk_items)[:3000]}")
        print(f"--- chunkbridge:\n{json.dumps(our_items)[:3000]}")
    assert not failures, f"requests differ from the AI SDK's: {[f[0] for f in failures]}"
    stale = set(documented) - seen
    assert not stale, f"documented differences no recording shows any more: {sorted(stale)}"


def test_round_trip_answers_cover_every_built_in_tool_the_app_runs() -> None:
    from chunkbridge.protocol_specs.openai_responses_tools import APP_RUN_ITEMS

    assert set(APP_ANSWERS) == set(APP_RUN_ITEMS)
