"""Three classes of translation gaps, checked in every dialect: surrogate pairs split across two
deltas, content-free events between two deltas, and terminal events the runtime may not follow
with the one the translator used to wait for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkbridge.translators.core.surrogates import REPLACEMENT, SurrogatePairs, join_surrogates
from tests.helpers import assert_valid_for, of_type, text_of, to_sse, translate, types

PIZZA = "\U0001f355"  # 🍕 = \ud83c\udf55 in UTF-16
HIGH, LOW = "\\ud83c", "\\udf55"  # as JSON escapes in a recorded frame


def frame(event: dict[str, Any], delta: str) -> str:
    """``event`` as a recorded frame, its ``"@"`` value replaced by ``delta`` as written in the
    JSON text (so escapes such as ``\\ud83c`` stay escapes, as a JavaScript backend sends them)."""
    return orjson.dumps(event).decode().replace('"@"', f'"{delta}"')


def agent_ops_text(delta: str) -> str:
    return frame({"type": "message.part.text-delta", "turnId": "t", "delta": "@"}, delta)


def harness_text(delta: str) -> str:
    return frame({"type": "agent:text:delta", "content": "@"}, delta)


def harness_thinking(delta: str) -> str:
    return frame({"type": "agent:thinking:delta", "content": "@"}, delta)


def openai_delta(field: str, value: str) -> str:
    event = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {field: "@"}}]}
    return frame(event, value)


#: dialect → (opening events, make a text frame from JSON string content, closing events)
TEXT = {
    "agent-ops-v2": (
        [{"type": "message.create", "turnId": "t"}],
        agent_ops_text,
        [{"type": "message.finalize", "turnId": "t", "reason": "end_turn"}],
    ),
    "open-harness": ([{"type": "flow:start"}], harness_text, [{"type": "flow:complete"}]),
    "openai-chat": (
        [],
        lambda d: openai_delta("content", d),
        [
            '{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},'
            '"finish_reason":"stop"}]}',
            "[DONE]",
        ],
    ),
}


# -- surrogate pairs split across deltas -----------------------------------------------------------


@pytest.mark.parametrize("dialect", sorted(TEXT))
def test_a_split_surrogate_pair_reaches_the_client_as_one_character(dialect: str) -> None:
    head, text, tail = TEXT[dialect]
    frames = [*head, text("Pizza " + HIGH), text(LOW + " now " + HIGH), text("!"), *tail]
    out, turn = translate(dialect, frames)
    assert text_of(out) == f"Pizza {PIZZA} now {REPLACEMENT}!"
    assert turn.internal_error is None and out[-1]["finishReason"] == "stop"
    assert_valid_for(to_sse(out))


@pytest.mark.parametrize("dialect", sorted(TEXT))
def test_a_half_never_completed_becomes_one_replacement_character(dialect: str) -> None:
    head, text, _ = TEXT[dialect]
    out, _ = translate(dialect, [*head, text("cut " + HIGH)])  # the upstream just closes
    assert text_of(out) == "cut " + REPLACEMENT
    assert types(out)[-4:] == ["text-end", "error", "finish-step", "finish"]


@pytest.mark.parametrize(
    ("dialect", "frame"),
    [
        ("open-harness", harness_thinking),
        ("openai-chat", lambda d: openai_delta("reasoning_content", d)),
    ],
)
def test_reasoning_pairs_are_joined_too(dialect: str, frame: Any) -> None:
    head, _, _ = TEXT[dialect]
    out, _ = translate(dialect, [*head, frame("a " + HIGH), frame(LOW + " b")])
    reasoning = "".join(c["delta"] for c in out if c["type"] == "reasoning-delta")
    assert reasoning == f"a {PIZZA} b"


def test_tool_argument_pairs_are_joined_in_deltas_and_in_the_input() -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "buy", "arguments": "@"}}
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]}
    chunk["choices"][0]["delta"]["tool_calls"] = [call]  # type: ignore[index]
    frames = [
        frame(chunk, '{\\"item\\":\\"' + HIGH),
        frame(chunk, LOW + '\\"}'),
        '{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},'
        '"finish_reason":"tool_calls"}]}',
        "[DONE]",
    ]
    out, _ = translate("openai-chat", frames)
    streamed = "".join(c["inputTextDelta"] for c in of_type(out, "tool-input-delta"))
    assert streamed == '{"item":"' + PIZZA + '"}'
    assert of_type(out, "tool-input-available")[0]["input"] == {"item": PIZZA}


def test_surrogate_pairs_stage_holds_per_part_and_flushes_at_the_end() -> None:
    pairs = SurrogatePairs()
    assert pairs.fix({"type": "text-delta", "id": "a", "delta": "x\ud83c"}) == [
        {"type": "text-delta", "id": "a", "delta": "x"}
    ]
    # another part in between does not take the held half
    assert pairs.fix({"type": "text-delta", "id": "b", "delta": "\udf55"}) == [
        {"type": "text-delta", "id": "b", "delta": "\udf55"}
    ]
    assert pairs.fix({"type": "data-x", "data": 1}) == [{"type": "data-x", "data": 1}]
    assert pairs.fix({"type": "text-delta", "id": "a", "delta": "\udf55y"}) == [
        {"type": "text-delta", "id": "a", "delta": PIZZA + "y"}
    ]
    assert pairs.fix({"type": "reasoning-delta", "id": "r", "delta": "\ud83c"}) == []
    assert pairs.fix({"type": "reasoning-end", "id": "r"}) == [
        {"type": "reasoning-delta", "id": "r", "delta": REPLACEMENT},
        {"type": "reasoning-end", "id": "r"},
    ]
    pairs.fix({"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "\ud83c"})
    assert pairs.flush() == [
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": REPLACEMENT}
    ]
    assert not pairs.held
    assert join_surrogates("\ud83c\udf55 \ud83c") == f"{PIZZA} {REPLACEMENT}"


# -- content-free events between two deltas ------------------------------------------------------

CONTENT_FREE = {
    "agent-ops-v2": [
        {"type": "agentStatus", "status": "streaming"},
        {"type": "status", "session": "busy"},
        {"type": "init", "messages": []},
        {"type": "message.updated", "message": {}},
        {"type": "git.status", "dirty": False},
        {"type": "message.create", "turnId": "t"},  # the same turn again
    ],
    "open-harness": [
        {"type": "flow:status", "status": "running"},
        {"type": "agent:start", "nodeId": "n"},
        {"type": "recording:linked"},
        {"type": "run:progress"},
        {"type": "telemetry:span"},
    ],
    "openai-chat": [
        {"object": "", "choices": [], "prompt_filter_results": []},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "x"}}]},
        {"object": "chat.completion.chunk", "choices": [], "usage": None},
        {"object": "chat.completion.chunk.heartbeat"},
        {"object": "chat.completion.chunk", "choices": [{"index": 1, "delta": {"content": "x"}}]},
    ],
}


def _agent_ops_tool(status: str) -> dict[str, Any]:
    return {
        "type": "message.part.tool-update",
        "turnId": "t",
        "callId": "c1",
        "toolName": "read",
        "status": status,
        "args": {},
    }


@pytest.mark.parametrize("dialect", sorted(CONTENT_FREE))
def test_content_free_events_never_split_a_text_part(dialect: str) -> None:
    head, text, tail = TEXT[dialect]
    for event in CONTENT_FREE[dialect]:
        frames = [*head, text("one "), orjson.dumps(event).decode(), text("part"), *tail]
        out, _ = translate(dialect, frames)
        assert types(out).count("text-start") == 1, (event, types(out))
        assert text_of(out) == "one part"


def test_a_repeated_or_late_tool_update_does_not_split_the_text_after_it() -> None:
    head, text, tail = TEXT["agent-ops-v2"]
    tool = [_agent_ops_tool("running"), {**_agent_ops_tool("completed"), "result": 1}]
    for repeat in (_agent_ops_tool("pending"), {**_agent_ops_tool("completed"), "result": 1}):
        frames = [*head, *tool, text("one "), repeat, text("part"), *tail]
        out, _ = translate("agent-ops-v2", frames)
        assert types(out).count("text-start") == 1 and text_of(out) == "one part"


TEXT_PARTS = st.lists(st.text(st.characters(codec="utf-8"), min_size=1, max_size=5), max_size=6)


@pytest.mark.parametrize("dialect", sorted(CONTENT_FREE))
def test_property_content_free_events_anywhere_change_no_text(dialect: str) -> None:
    head, _, tail = TEXT[dialect]
    make = {
        "agent-ops-v2": lambda d: {"type": "message.part.text-delta", "turnId": "t", "delta": d},
        "open-harness": lambda d: {"type": "agent:text:delta", "content": d},
        "openai-chat": lambda d: {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": d}}],
        },
    }[dialect]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(TEXT_PARTS, st.lists(st.sampled_from(CONTENT_FREE[dialect]), max_size=6), st.randoms())
    def check(deltas: list[str], noise: list[Any], rnd: Any) -> None:
        events: list[Any] = [make(d) for d in deltas]
        for item in noise:
            events.insert(rnd.randint(0, len(events)), item)
        out, _ = translate(dialect, [*head, *events, *tail])
        plain, _ = translate(dialect, [*head, *(make(d) for d in deltas), *tail])
        assert types(out).count("text-start") == types(plain).count("text-start")
        assert text_of(out) == text_of(plain) == "".join(deltas)

    check()


# -- terminal events the runtime may send instead of the one we waited for ----------------------


@pytest.mark.parametrize(
    ("status", "finish", "error"),
    [
        ("completed", "stop", None),
        ("Complete", "stop", None),
        ("done", "stop", None),
        ("failed", "error", "feed unreachable"),
        ("error", "error", "feed unreachable"),
        ("cancelled", "other", None),
        ("aborted", "other", None),
    ],
)
def test_open_harness_terminal_flow_status_ends_the_flow(
    status: str, finish: str, error: str | None
) -> None:
    events = [
        {"type": "flow:start", "flowName": "f"},
        {"type": "agent:text:delta", "content": "Hi"},
        {"type": "agent:complete"},
        {"type": "flow:status", "status": status, "error": {"message": "feed unreachable"}},
    ]
    out, turn = translate("open-harness", events, close=False)
    assert turn.done, "the flow ended without flow:complete"
    assert out[-1]["finishReason"] == finish
    errors = of_type(out, "error")
    assert [e["errorText"] for e in errors] == ([error] if error else [])
    flow = of_type(out, "data-flow-status")[-1]["data"]
    assert flow["status"] == status
    assert turn.upstream_ended() == []  # closing afterwards is not a truncation


def test_open_harness_progress_statuses_do_not_end_the_flow() -> None:
    for status in ("running", "paused", "waiting", "started"):
        events = [{"type": "flow:start"}, {"type": "flow:status", "status": status}]
        _, turn = translate("open-harness", events, close=False)
        assert not turn.done, status


def test_agent_ops_idle_after_the_turn_started_ends_it() -> None:
    head, text, _ = TEXT["agent-ops-v2"]
    idle = {"type": "agentStatus", "status": "idle"}
    out, turn = translate("agent-ops-v2", [idle, *head, text("done."), idle], close=False)
    assert turn.done and out[-1]["finishReason"] == "stop" and not of_type(out, "error")
    assert text_of(out) == "done."
    assert turn.translator.stats["ended-by-idle"] == 1
    # before any turn, idle is only a status
    _, turn = translate("agent-ops-v2", [idle, {"type": "agentStatus", "status": "thinking"}])
    assert turn.translator.stats["ended-by-idle"] == 0


# -- the recorded sessions of these classes, as the real clients see them ------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: recording → (the message's text as the client shows it, finishReason, error text)
RECORDED = {
    "agent-ops-v2/surrogate-pair-split": (
        f"Pizza time {PIZZA} and a drink \U0001f375. Cut off {REPLACEMENT}Ordered \U0001f44d",
        "stop",
        None,
    ),
    "agent-ops-v2/contentless-events-mid-text": ("The file starts with a heading.", "stop", None),
    "agent-ops-v2/idle-without-finalize": ("All done here.", "stop", None),
    "open-harness/surrogate-pair-split": (f"Sushi \U0001f363 is ready {REPLACEMENT}", "stop", None),
    "open-harness/contentless-events-mid-text": ("The answer is 42.", "stop", None),
    "open-harness/terminal-flow-status-without-complete": ("Three items today.", "stop", None),
    "open-harness/terminal-flow-status-failed": (
        "Fetching the feed",
        None,
        "feed unreachable (DNS)",
    ),
    "openai-chat/surrogate-pair-split": (
        f"Strawberries \U0001f353 it is. Unfinished {REPLACEMENT}",
        "tool-calls",
        None,
    ),
    "openai-chat/contentless-events-mid-text": ("Hello there", "stop", None),
}


@pytest.mark.conformance
def test_recorded_sessions_of_these_classes_read_right_in_the_real_clients(real_clients) -> None:
    names = sorted(RECORDED)
    bodies = [(FIXTURES / f"{name}.sse").read_bytes() for name in names]
    for name, verdicts in zip(names, real_clients.check_many(bodies), strict=True):
        text, finish, error = RECORDED[name]
        for major, verdict in verdicts.items():
            assert verdict.ok, (name, major, verdict.fatal)
            assert verdict.text() == text, (name, major)
            assert verdict.error_text == error, (name, major)
            if error is None:
                assert verdict.finish_reason == finish, (name, major)
