"""The shared dialect building blocks: indexed parts, streamed tool calls, usage and metadata."""

from __future__ import annotations

from typing import Any

from chunkbridge.kit import (
    IndexedParts,
    StreamedToolCalls,
    counter_ids,
    provider_metadata,
    usage_metadata,
)
from tests.helpers import assert_valid_for, guard_all, to_sse, types


def test_interleaved_blocks_each_get_their_own_part_and_the_client_reads_them() -> None:
    parts = IndexedParts(counter_ids())
    chunks: list[dict[str, Any]] = [{"type": "start-step"}]
    chunks += parts.start(0, "reasoning")
    chunks += parts.delta(1, "text", "Hel")  # opens block 1 implicitly
    chunks += parts.delta(0, "reasoning", "thinking…")
    chunks += parts.delta(1, "text", "lo")
    chunks += parts.end(0, provider_metadata("acme", signature="sig-1") or {})
    chunks += parts.end_all()
    assert chunks[1:] == [
        {"type": "reasoning-start", "id": "reasoning-1"},
        {"type": "text-start", "id": "text-1"},
        {"type": "text-delta", "id": "text-1", "delta": "Hel"},
        {"type": "reasoning-delta", "id": "reasoning-1", "delta": "thinking…"},
        {"type": "text-delta", "id": "text-1", "delta": "lo"},
        {
            "type": "reasoning-end",
            "id": "reasoning-1",
            "providerMetadata": {"acme": {"signature": "sig-1"}},
        },
        {"type": "text-end", "id": "text-1"},
    ]
    out, _ = guard_all(chunks + [{"type": "finish-step"}])
    assert out[1:-1] == [*chunks, {"type": "finish-step"}]  # nothing repaired
    assert_valid_for(to_sse(out))


def test_a_block_reused_for_another_kind_ends_its_old_part_first() -> None:
    parts = IndexedParts(counter_ids())
    parts.delta("b", "text", "a")
    assert parts.delta("b", "reasoning", "r") == [
        {"type": "text-end", "id": "text-1"},
        {"type": "reasoning-start", "id": "reasoning-1"},
        {"type": "reasoning-delta", "id": "reasoning-1", "delta": "r"},
    ]
    assert parts.part_id("b") == "reasoning-1"
    assert parts.start("b", "text", {"acme": {"k": 1}}) == [
        {"type": "reasoning-end", "id": "reasoning-1"},
        {"type": "text-start", "id": "text-2", "providerMetadata": {"acme": {"k": 1}}},
    ]
    assert parts.end("missing") == []


def test_tool_arguments_before_the_name_are_held_then_sent_in_one_delta() -> None:
    calls = StreamedToolCalls(counter_ids(), {"providerExecuted": True})
    assert calls.delta(0, call_id="call_a", arguments='{"q":') == []
    assert calls.delta(0, arguments=' "x"') == []
    assert calls.delta(0, name="search", arguments="}") == [
        {
            "type": "tool-input-start",
            "toolCallId": "call_a",
            "toolName": "search",
            "providerExecuted": True,
        },
        {"type": "tool-input-delta", "toolCallId": "call_a", "inputTextDelta": '{"q": "x"}'},
    ]
    assert calls.delta(0, name="ignored-later-name") == []
    assert calls.complete(0) == [
        {
            "type": "tool-input-available",
            "toolCallId": "call_a",
            "toolName": "search",
            "providerExecuted": True,
            "input": {"q": "x"},
        }
    ]
    assert len(calls) == 0 and calls.complete(0) == []


def test_parallel_calls_complete_in_first_seen_order_with_errors_for_bad_json() -> None:
    calls = StreamedToolCalls(counter_ids(), {})
    chunks = [{"type": "start-step"}]
    chunks += calls.delta(1, name="b", arguments='{"broken": ')
    chunks += calls.delta(0, name="a")  # no arguments at all: {}
    chunks += calls.delta(2, name="c", arguments='{"face": "\\ud83d')
    chunks += calls.delta(2, arguments='\\ude00"}')  # an emoji split across two pieces
    done = calls.complete()
    assert [(c["type"], c["toolName"]) for c in done] == [
        ("tool-input-error", "b"),
        ("tool-input-available", "a"),
        ("tool-input-available", "c"),
    ]
    assert done[0]["input"] == '{"broken": '
    assert done[0]["errorText"].startswith("The tool arguments are not valid JSON")
    assert done[1]["input"] == {} and done[2]["input"] == {"face": "😀"}
    assert [c["toolCallId"] for c in done] == ["call-1", "call-2", "call-3"]
    out, _ = guard_all(chunks + done + [{"type": "finish-step"}], reason=None)
    assert "tool-input-error" in types(out)


def test_a_call_that_never_got_a_name_still_completes() -> None:
    calls = StreamedToolCalls(counter_ids(), {}, id_kind="tool")
    assert calls.delta("k", arguments="{}") == []
    (chunk,) = calls.complete()
    assert chunk["toolName"] == "unknown" and chunk["toolCallId"] == "tool-1"


def test_usage_follows_paths_and_keeps_only_integers_in_table_order() -> None:
    fields = {
        "inputTokens": ("prompt_tokens",),
        "outputTokens": ("completion_tokens",),
        "reasoningTokens": ("completion_tokens_details", "reasoning_tokens"),
        "cachedInputTokens": ("prompt_tokens_details", "cached_tokens"),
    }
    usage = {
        "completion_tokens": 7,
        "prompt_tokens": 3,
        "completion_tokens_details": {"reasoning_tokens": 2},
        "prompt_tokens_details": {"cached_tokens": None},
    }
    assert list(usage_metadata(usage, fields).items()) == [
        ("inputTokens", 3),
        ("outputTokens", 7),
        ("reasoningTokens", 2),
    ]
    assert usage_metadata({"prompt_tokens": 1.5, "completion_tokens": True}, fields) == {}
    assert usage_metadata("not a dict", fields) == {}


def test_provider_metadata_drops_missing_values_and_is_none_when_empty() -> None:
    assert provider_metadata("acme", a=1, b=None) == {"acme": {"a": 1}}
    assert provider_metadata("acme", b=None) is None
