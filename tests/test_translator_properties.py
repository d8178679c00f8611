"""Property: any sequence of a dialect's events (valid, shuffled, truncated, garbage mixed in)
becomes a stream that validates for targets 5, 6 and 7; a sample goes through the real clients."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkbridge.translators.core.closing import CloseReason
from tests.helpers import assert_valid_for, end, to_sse, translate, types

TEXT = st.text(max_size=6)
JUNK = st.one_of(st.none(), st.integers(), TEXT, st.lists(st.integers(), max_size=2))
VALUE = st.one_of(JUNK, st.dictionaries(st.sampled_from(["a", "b"]), st.integers(), max_size=2))
GARBAGE = st.sampled_from(["not json", "[]", "{}", '{"type": 1}', "null", "[DONE]", ""])


def ev(type_: str, **fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"type": st.just(type_)}, optional=fields)


CALL = st.sampled_from(["p1", "p2"])
AGENT_OPS = [
    ev("message.create", turnId=st.sampled_from(["t1", "t2"])),
    ev("message.part.text-delta", delta=st.one_of(TEXT, JUNK)),
    ev("chunk", content=TEXT),
    ev(
        "message.part.tool-update",
        callId=CALL,
        toolName=st.sampled_from(["bash", "read"]),
        status=st.sampled_from(["pending", "running", "completed", "error", "weird"]),
        args=VALUE,
        result=VALUE,
        error=st.one_of(TEXT, VALUE),
    ),
    ev(
        "message.finalize",
        reason=st.sampled_from(["end_turn", "error", "canceled", "x"]),
        finalText=st.one_of(TEXT, JUNK),
        error=VALUE,
    ),
    ev("complete"),
    ev("agentStatus", status=st.sampled_from(["idle", "thinking"]), detail=VALUE),
    ev("error", error=st.one_of(TEXT, VALUE), message=TEXT),
    ev("question", id=TEXT),
    ev("status", status=TEXT),
    ev("init"),
    ev("git.diff", files=VALUE),
]
HARNESS = [
    ev("agent:text:delta", content=st.one_of(TEXT, JUNK), delta=TEXT),
    ev("agent:thinking:delta", content=TEXT),
    ev("agent:text", content=TEXT),
    ev("agent:thinking", content=TEXT),
    ev(
        "agent:tool",
        toolName=st.sampled_from(["s", "t"]),
        toolCallId=CALL,
        toolInput=VALUE,
        toolOutput=VALUE,
        error=VALUE,
    ),
    ev("agent:start"),
    ev("agent:complete"),
    ev("agent:error", error=VALUE),
    ev("node:start", nodeId=TEXT),
    ev("node:complete", nodeId=TEXT, output=VALUE),
    ev("node:error", error=TEXT),
    ev("flow:start", flowName=TEXT),
    ev("flow:status", status=TEXT),
    ev("flow:complete"),
    ev("flow:error", error=TEXT),
    ev("recording:linked"),
    ev("mystery:event"),
]
DELTA = st.fixed_dictionaries(
    {},
    optional={
        "content": st.one_of(TEXT, JUNK),
        "reasoning_content": TEXT,
        "refusal": TEXT,
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {"index": st.integers(0, 2)},
                optional={
                    "id": CALL,
                    "function": st.fixed_dictionaries(
                        {},
                        optional={
                            "name": st.sampled_from(["f", "g"]),
                            "arguments": st.sampled_from(["{", "}", '"a":1']),
                        },
                    ),
                },
            ),
            max_size=2,
        ),
    },
)
OPENAI = [
    st.fixed_dictionaries(
        {
            "object": st.just("chat.completion.chunk"),
            "choices": st.lists(
                st.fixed_dictionaries(
                    {"index": st.sampled_from([0, 0, 1]), "delta": DELTA},
                    optional={
                        "finish_reason": st.sampled_from(
                            ["stop", "tool_calls", "length", None, "x"]
                        )
                    },
                ),
                max_size=2,
            ),
        },
        optional={"usage": st.just({"total_tokens": 3}), "model": TEXT},
    ),
    st.fixed_dictionaries({"error": st.one_of(VALUE, st.just({"message": "boom"}))}),
    st.just({"object": "chat.completion.chunk", "choices": "bad"}),
]
INDEX = st.one_of(st.integers(0, 2), JUNK)
BLOCK = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "thinking", "redacted_thinking"])},
        optional={"text": TEXT, "data": TEXT},
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["tool_use", "server_tool_use", "mcp_tool_use"]), "id": CALL},
        optional={"name": st.sampled_from(["f", "web_search"]), "input": VALUE},
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["web_search_tool_result", "code_execution_tool_result"])},
        optional={"tool_use_id": CALL, "content": st.one_of(VALUE, st.just([{"url": "u"}]))},
    ),
    st.just({"type": "future_block"}),
    JUNK,
)
ANTHROPIC_DELTA = st.one_of(
    st.fixed_dictionaries({"type": st.just("text_delta"), "text": st.one_of(TEXT, JUNK)}),
    st.fixed_dictionaries({"type": st.just("thinking_delta"), "thinking": TEXT}),
    st.fixed_dictionaries({"type": st.just("signature_delta"), "signature": TEXT}),
    st.fixed_dictionaries(
        {"type": st.just("input_json_delta"), "partial_json": st.sampled_from(["{", "}", '"a":1'])}
    ),
    st.fixed_dictionaries(
        {"type": st.just("citations_delta")},
        optional={"citation": st.one_of(VALUE, st.just({"type": "char_location"}))},
    ),
    JUNK,
)
ANTHROPIC = [
    ev("message_start", message=st.one_of(st.just({"model": "m", "usage": {}}), JUNK)),
    ev("content_block_start", index=INDEX, content_block=BLOCK),
    ev("content_block_delta", index=INDEX, delta=ANTHROPIC_DELTA),
    ev("content_block_stop", index=INDEX),
    ev(
        "message_delta",
        delta=st.fixed_dictionaries(
            {}, optional={"stop_reason": st.sampled_from(["end_turn", "tool_use", "x", None])}
        ),
        usage=VALUE,
    ),
    ev("message_stop"),
    ev("ping"),
    ev("error", error=st.one_of(VALUE, st.just({"type": "overloaded_error", "message": "m"}))),
]
ITEM_ID = st.sampled_from(["i1", "i2"])
ITEM = st.fixed_dictionaries(
    {
        "id": ITEM_ID,
        "type": st.sampled_from(
            ["message", "reasoning", "function_call", "web_search_call", "custom_tool_call", "x"]
        ),
    },
    optional={
        "call_id": CALL,
        "name": st.sampled_from(["f", "g"]),
        "arguments": TEXT,
        "status": st.sampled_from(["completed", "failed"]),
        "action": VALUE,
        "input": TEXT,
    },
)
RESPONSES = [
    ev("response.created", response=st.one_of(st.just({"id": "r", "model": "m"}), JUNK)),
    ev("response.output_item.added", output_index=INDEX, item=st.one_of(ITEM, JUNK)),
    ev("response.output_item.done", output_index=INDEX, item=st.one_of(ITEM, JUNK)),
    ev("response.output_text.delta", item_id=ITEM_ID, delta=st.one_of(TEXT, JUNK)),
    ev("response.reasoning_summary_text.delta", item_id=ITEM_ID, summary_index=INDEX, delta=TEXT),
    ev("response.reasoning_summary_part.added", item_id=ITEM_ID, summary_index=INDEX),
    ev(
        "response.function_call_arguments.delta", item_id=ITEM_ID, delta=st.sampled_from(["{", "}"])
    ),
    ev(
        "response.output_text.annotation.added",
        item_id=ITEM_ID,
        annotation=st.one_of(VALUE, st.just({"type": "url_citation", "url": "u"})),
    ),
    ev("response.completed", response=st.one_of(st.just({"usage": {"input_tokens": 1}}), JUNK)),
    ev(
        "response.incomplete",
        response=st.just({"incomplete_details": {"reason": "max_output_tokens"}}),
    ),
    ev("response.failed", response=VALUE),
    ev("error", error=VALUE),
    ev("response.web_search_call.searching"),
]
GEMINI_PART = st.one_of(
    st.fixed_dictionaries(
        {"text": st.one_of(TEXT, JUNK)},
        optional={"thought": st.booleans(), "thoughtSignature": TEXT},
    ),
    st.fixed_dictionaries({"functionCall": st.one_of(VALUE, st.just({"name": "f", "args": {}}))}),
    st.fixed_dictionaries({"executableCode": VALUE}),
    st.fixed_dictionaries({"codeExecutionResult": VALUE}),
    st.fixed_dictionaries(
        {"inlineData": st.one_of(VALUE, st.just({"mimeType": "image/png", "data": "AA=="}))}
    ),
    JUNK,
)
GEMINI = [
    st.fixed_dictionaries(
        {
            "candidates": st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "content": st.fixed_dictionaries(
                            {}, optional={"parts": st.lists(GEMINI_PART, max_size=2)}
                        ),
                        "finishReason": st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY", "X"]),
                        "groundingMetadata": st.just(
                            {"groundingChunks": [{"web": {"uri": "https://a"}}]}
                        ),
                    },
                ),
                max_size=1,
            )
        },
        optional={
            "usageMetadata": st.one_of(VALUE, st.just({"promptTokenCount": 1})),
            "modelVersion": TEXT,
        },
    ),
    st.fixed_dictionaries({"promptFeedback": st.one_of(VALUE, st.just({"blockReason": "SAFETY"}))}),
    st.fixed_dictionaries(
        {"error": st.one_of(VALUE, st.just({"status": "UNAVAILABLE", "message": "m"}))}
    ),
    st.just({"candidates": "bad"}),
]
MID = st.sampled_from(["m1", "m2"])
TOOL_MESSAGE = {"id": st.one_of(MID, JUNK), "toolCallId": st.one_of(CALL, JUNK)}
PATCH = st.one_of(
    st.just([{"op": "add", "path": "/a", "value": 1}]),
    st.just([{"op": "remove", "path": "/missing"}]),
    st.lists(VALUE, max_size=2),
    JUNK,
)
AG_UI = [
    ev("RUN_STARTED", threadId=TEXT, runId=TEXT),
    ev(
        "RUN_FINISHED",
        outcome=st.one_of(
            st.just({"type": "success"}),
            st.just({"type": "interrupt", "interrupts": [{"id": "i1", "reason": "r"}]}),
            st.just({"type": "cancelled"}),
            JUNK,
        ),
    ),
    ev("RUN_ERROR", message=st.one_of(TEXT, JUNK), code=TEXT),
    ev("TEXT_MESSAGE_START", messageId=MID),
    ev("TEXT_MESSAGE_CONTENT", messageId=st.one_of(MID, JUNK), delta=st.one_of(TEXT, JUNK)),
    ev("TEXT_MESSAGE_END", messageId=MID),
    ev("TEXT_MESSAGE_CHUNK", messageId=MID, delta=TEXT),
    ev("REASONING_MESSAGE_CONTENT", messageId=MID, delta=TEXT),
    ev("REASONING_MESSAGE_END", messageId=MID),
    ev("THINKING_TEXT_MESSAGE_CONTENT", delta=TEXT),
    ev("THINKING_END"),
    ev("REASONING_ENCRYPTED_VALUE", entityId=MID, encryptedValue=TEXT, subtype=TEXT),
    ev(
        "TOOL_CALL_START",
        toolCallId=CALL,
        toolCallName=st.sampled_from(["f", "g"]),
        parentMessageId=st.one_of(MID, JUNK),
    ),
    ev("TOOL_CALL_ARGS", toolCallId=CALL, delta=st.sampled_from(["{", "}", '"a":1'])),
    ev("TOOL_CALL_END", toolCallId=CALL),
    ev("TOOL_CALL_CHUNK", toolCallId=CALL, toolCallName=st.sampled_from(["f"]), delta=TEXT),
    ev(
        "TOOL_CALL_RESULT",
        toolCallId=CALL,
        content=st.one_of(TEXT, JUNK),
        error=TEXT,
        messageId=st.one_of(MID, JUNK),
    ),
    ev("STATE_SNAPSHOT", snapshot=VALUE),
    ev("STATE_DELTA", delta=PATCH),
    ev("ACTIVITY_SNAPSHOT", messageId=MID, activityType=TEXT, content=VALUE),
    ev("ACTIVITY_DELTA", messageId=MID, activityType=TEXT, patch=PATCH),
    ev("STEP_STARTED", stepName=st.one_of(TEXT, JUNK)),
    ev("SUBAGENT_STARTED", subagentRunId=CALL, name=TEXT),
    ev("TEXT_MESSAGE_CONTENT", messageId=MID, delta=TEXT, subagentRunId=CALL),
    ev("CUSTOM", name=TEXT, value=VALUE),
    ev("MESSAGES_SNAPSHOT", messages=VALUE),
    ev(
        "MESSAGES_SNAPSHOT",
        messages=st.lists(
            st.one_of(
                JUNK, st.fixed_dictionaries({"role": st.just("tool")}, optional=TOOL_MESSAGE)
            ),
            max_size=3,
        ),
    ),
    ev("SOMETHING_NEW", x=VALUE),
]
PI_MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["assistant", "user", "toolResult"])},
        optional={
            "stopReason": st.sampled_from(["stop", "toolUse", "error", "aborted", "x"]),
            "errorMessage": TEXT,
            "usage": st.one_of(st.just({"input": 1, "output": 2}), JUNK),
            "content": st.one_of(st.just([{"type": "text", "text": "t"}]), JUNK),
        },
    ),
    JUNK,
)
PI_UPDATE = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "text_start",
                "text_delta",
                "text_end",
                "thinking_delta",
                "thinking_end",
                "toolcall_start",
                "toolcall_delta",
                "toolcall_end",
                "done",
                "error",
                "image_start",
            ]
        )
    },
    optional={
        "contentIndex": st.one_of(st.integers(0, 2), JUNK),
        "delta": st.one_of(st.sampled_from(["{", "}", "x"]), JUNK),
        "id": CALL,
        "toolName": st.sampled_from(["read", "bash"]),
        "toolCall": st.one_of(st.just({"id": "p1", "name": "read", "arguments": {}}), JUNK),
    },
)
PI = [
    ev("agent_start"),
    ev("agent_end", willRetry=st.booleans()),
    ev("turn_start"),
    ev("turn_end"),
    ev("message_start", message=PI_MESSAGE),
    ev("message_update", assistantMessageEvent=st.one_of(PI_UPDATE, JUNK)),
    ev("message_end", message=PI_MESSAGE),
    ev("tool_execution_start", toolCallId=CALL, toolName=st.sampled_from(["read"]), args=VALUE),
    ev("tool_execution_update", toolCallId=CALL, toolName=TEXT, partialResult=VALUE),
    ev("tool_execution_end", toolCallId=CALL, toolName=TEXT, result=VALUE, isError=st.booleans()),
    ev("response", success=st.booleans(), error=TEXT),
    ev("queue_update", steering=VALUE),
]
DIALECT_EVENTS = {
    "ag-ui": AG_UI,
    "agent-ops-v2": AGENT_OPS,
    "open-harness": HARNESS,
    "openai-chat": OPENAI,
    "anthropic-messages": ANTHROPIC,
    "openai-responses": RESPONSES,
    "gemini": GEMINI,
    "pi-agent": PI,
}
CLOSE = st.sampled_from(list(CloseReason))


def events_for(dialect: str) -> st.SearchStrategy[list[Any]]:
    return st.lists(st.one_of(*DIALECT_EVENTS[dialect], GARBAGE), max_size=30)


def run(dialect: str, events: list[Any], target: int, reason: CloseReason) -> list[dict]:
    out, turn = translate(dialect, events, target=target, close=False)
    out += end(turn, reason)
    assert turn.internal_error is None, repr(turn.internal_error)
    return out


@pytest.mark.parametrize("dialect", sorted(DIALECT_EVENTS))
def test_any_event_sequence_validates_for_5_6_7(dialect: str) -> None:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(events_for(dialect), st.sampled_from([5, 6, 7]), CLOSE)
    def check(events: list[Any], target: int, reason: CloseReason) -> None:
        out = run(dialect, events, target, reason)
        assert_valid_for(to_sse(out), *range(target, 8))
        assert types(out).count("start") == 1 and out[-1]["type"] == "finish"

    check()


@pytest.mark.parametrize("dialect", sorted(DIALECT_EVENTS))
def test_sampled_sequences_accepted_by_real_clients(dialect: str, real_clients) -> None:
    bodies: list[bytes] = []

    @settings(
        max_examples=20, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(events_for(dialect), CLOSE)
    def collect(events: list[Any], reason: CloseReason) -> None:
        bodies.append(to_sse(run(dialect, events, 5, reason)))

    collect()
    for body, verdicts in zip(bodies, real_clients.check_many(bodies), strict=True):
        for major, verdict in verdicts.items():
            assert verdict.ok, (dialect, major, verdict.fatal, body.decode()[:2000])
