"""open-harness: the brief's events and what the real runtime sends."""

from __future__ import annotations

from tests.helpers import of_type, text_of, to_sse, translate, types

FS = {"type": "flow:start", "flowName": "triage"}
FC = {"type": "flow:complete", "flowName": "triage"}


def test_brief_delta_field_and_runtime_content_field() -> None:
    out, _ = translate(
        "open-harness",
        [
            {"type": "agent:text:delta", "delta": "a"},
            {"type": "agent:text:delta", "content": "b"},
            {"type": "agent:complete"},
        ],
        close=False,
    )
    assert text_of(out) == "ab"
    assert out[-1] == {"type": "finish", "finishReason": "stop"}


def test_complete_text_events_are_never_appended_twice() -> None:
    out, tr = translate(
        "open-harness",
        [
            FS,
            {"type": "agent:thinking:delta", "content": "hmm"},
            {"type": "agent:thinking", "content": "hmm"},
            {"type": "agent:text:delta", "content": "Hi"},
            {"type": "agent:text", "content": "Hi"},
            {"type": "agent:text", "content": "Standalone"},
            FC,
        ],
    )
    assert text_of(out) == "HiStandalone"
    assert [c["delta"] for c in of_type(out, "reasoning-delta")] == ["hmm"]
    assert tr.translator.stats["complete-text-used"] == 1


def test_thinking_ends_before_text() -> None:
    out, _ = translate(
        "open-harness",
        [
            FS,
            {"type": "agent:thinking:delta", "content": "r"},
            {"type": "agent:text:delta", "content": "t"},
            FC,
        ],
    )
    assert types(out).index("reasoning-end") < types(out).index("text-start")


def test_tool_as_one_event_and_as_split_events_without_id() -> None:
    out, _ = translate(
        "open-harness",
        [
            FS,
            {
                "type": "agent:tool",
                "toolName": "a",
                "toolCallId": "x",
                "toolInput": 1,
                "toolOutput": 2,
            },
            {"type": "agent:tool", "toolName": "b", "toolInput": {"q": 1}},
            {"type": "agent:tool", "toolName": "b", "toolInput": {"q": 2}},
            {"type": "agent:tool", "toolName": "b", "toolOutput": "first"},
            {"type": "agent:tool", "toolName": "b", "error": "second failed"},
            FC,
        ],
    )
    available = of_type(out, "tool-input-available")
    assert [(c["toolCallId"], c["input"]) for c in available] == [
        ("x", 1),
        ("tool-1", {"q": 1}),
        ("tool-2", {"q": 2}),
    ]
    outputs = [c for c in out if c["type"].startswith("tool-output")]
    assert [(c["type"], c["toolCallId"]) for c in outputs] == [
        ("tool-output-available", "x"),
        ("tool-output-available", "tool-1"),
        ("tool-output-error", "tool-2"),
    ]
    assert outputs[2]["errorText"] == "second failed"
    assert all(c["providerExecuted"] for c in available + outputs)


def test_flow_and_node_framing() -> None:
    out, tr = translate(
        "open-harness",
        [
            {"type": "recording:linked", "id": "r"},
            FS,
            {"type": "node:start", "nodeId": "n1"},
            {"type": "agent:start", "nodeId": "n1"},
            {"type": "agent:text:delta", "content": "x"},
            {"type": "agent:complete"},
            {"type": "node:complete", "nodeId": "n1", "output": {"k": 1}},
            {"type": "flow:status", "status": "waiting"},
            FC,
        ],
        close=False,
    )
    statuses = [c["data"]["status"] for c in of_type(out, "data-flow-status")]
    assert statuses == ["running", "waiting", "complete"]
    assert all(c["id"] == "flow-status" for c in of_type(out, "data-flow-status"))
    assert {"type": "data-node-output", "data": {"nodeId": "n1", "output": {"k": 1}}} in out
    assert types(out).count("start-step") == types(out).count("finish-step")
    assert tr.translator.stats["bookkeeping"] == 2 and tr.done
    assert "finish" not in types(out)[: types(out).index("data-node-output")]


def test_errors_end_the_turn_with_the_runtime_message() -> None:
    for event in (
        {"type": "agent:error", "error": "Rate limit"},
        {"type": "node:error", "nodeId": "n", "error": {"message": "Rate limit"}},
        {"type": "flow:error", "error": "Rate limit"},
    ):
        out, _ = translate(
            "open-harness", [FS, {"type": "agent:text:delta", "content": "x"}, event]
        )
        assert of_type(out, "error") == [{"type": "error", "errorText": "Rate limit"}]
        assert out[-1]["finishReason"] == "error"


def test_flow_framed_run_does_not_end_at_agent_complete() -> None:
    out, tr = translate("open-harness", [FS, {"type": "agent:complete"}], close=False)
    assert not tr.done and "finish" not in types(out)


def test_real_clients_see_text_reasoning_tools_and_data(real_clients) -> None:
    out, _ = translate(
        "open-harness",
        [
            FS,
            {"type": "agent:thinking:delta", "content": "plan"},
            {"type": "agent:text:delta", "content": "Searching. "},
            {"type": "agent:tool", "toolName": "search", "toolInput": {"q": "x"}},
            {"type": "agent:tool", "toolName": "search", "toolOutput": ["r1"]},
            {"type": "agent:text:delta", "content": "Found r1."},
            FC,
        ],
    )
    for major, verdict in real_clients.check(to_sse(out)).items():
        assert verdict.ok, (major, verdict.fatal)
        assert verdict.text() == "Searching. Found r1."
        assert verdict.parts("reasoning")[0]["text"] == "plan"
        (tool,) = verdict.parts("tool-search")
        assert (tool["state"], tool["input"], tool["output"]) == (
            "output-available",
            {"q": "x"},
            ["r1"],
        )
        assert verdict.parts("data-flow-status")[0]["data"]["status"] == "complete"
