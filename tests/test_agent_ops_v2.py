"""agent-ops-v2: one test per mapping row, plus the full turn through the real clients."""

from __future__ import annotations

import pytest

from chunkbridge.kit import UnknownEventPolicy
from tests.helpers import of_type, text_of, to_sse, translate, types

T = "turn_1"
CREATE = {"type": "message.create", "turnId": T}


def td(delta: str) -> dict:
    return {"type": "message.part.text-delta", "turnId": T, "delta": delta}


def tool(status: str, **kw) -> dict:
    return {
        "type": "message.part.tool-update",
        "turnId": T,
        "callId": "prt_1",
        "toolName": "bash",
        "status": status,
        **kw,
    }


def fin(reason: str = "end_turn", **kw) -> dict:
    return {"type": "message.finalize", "turnId": T, "reason": reason, **kw}


def test_create_starts_once_with_turn_metadata() -> None:
    out, _ = translate("agent-ops-v2", [CREATE, fin()])
    assert out[0] == {"type": "start", "messageMetadata": {"turnId": T}}
    assert types(out).count("start") == 1


def test_text_deltas_form_one_part() -> None:
    out, _ = translate("agent-ops-v2", [CREATE, td("a"), td("b"), fin()])
    assert types(out) == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert text_of(out) == "ab"


def test_tool_lifecycle_is_provider_executed_and_repeated_pending_ignored() -> None:
    out, _ = translate(
        "agent-ops-v2",
        [
            CREATE,
            td("x"),
            tool("pending", args={}),
            tool("pending", args={}),
            tool("running", args={"cmd": "ls"}),
            tool("completed", result="ok"),
            fin(),
        ],
    )
    tools = [c for c in out if c["type"].startswith("tool-")]
    assert types(tools) == ["tool-input-start", "tool-input-available", "tool-output-available"]
    assert all(c["providerExecuted"] is True for c in tools)
    assert tools[1]["input"] == {"cmd": "ls"} and tools[2]["output"] == "ok"
    assert types(out).index("text-end") < types(out).index("tool-input-start")


def test_tool_error_and_missing_states_are_filled_in() -> None:
    out, _ = translate("agent-ops-v2", [CREATE, tool("error", error="denied"), fin()])
    assert types(out)[2:5] == ["tool-input-start", "tool-input-available", "tool-output-error"]
    assert of_type(out, "tool-output-error")[0]["errorText"] == "denied"
    assert of_type(out, "tool-input-available")[0]["input"] == {}


def test_final_text_never_duplicates_streamed_text() -> None:
    out, _ = translate("agent-ops-v2", [CREATE, td("Hello"), fin(finalText="Hello")])
    assert text_of(out) == "Hello"
    out, _ = translate(
        "agent-ops-v2",
        [CREATE, td("Before"), tool("completed", result=1), td("After"), fin(finalText="After")],
    )
    assert text_of(out) == "BeforeAfter"


def test_final_text_used_when_nothing_was_streamed_after_the_last_tool() -> None:
    out, tr = translate("agent-ops-v2", [CREATE, fin(finalText="Only here")])
    assert text_of(out) == "Only here"
    out, tr = translate(
        "agent-ops-v2", [CREATE, td("A"), tool("completed", result=1), fin(finalText="B")]
    )
    assert text_of(out) == "AB" and tr.translator.stats["final-text-used"] == 1


def test_canceled_finishes_without_error() -> None:
    out, _ = translate("agent-ops-v2", [CREATE, td("x"), tool("running", args={}), fin("canceled")])
    assert "error" not in types(out)
    assert out[-1] == {"type": "finish", "finishReason": "other"}
    assert of_type(out, "tool-output-error")[0]["errorText"] == "interrupted"
    out7, _ = translate("agent-ops-v2", [CREATE, fin("canceled")], target=7)
    assert out7[-1] == {"type": "finish", "finishReason": "interrupted"}


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (fin("error", error="Model overloaded"), "Model overloaded"),
        ({"type": "error", "messageId": "m", "error": "Runner crashed"}, "Runner crashed"),
        ({"type": "error", "message": "legacy shape"}, "legacy shape"),
    ],
)
def test_errors_close_parts_settle_tools_then_error_then_finish(event: dict, message: str) -> None:
    out, _ = translate("agent-ops-v2", [CREATE, td("x"), tool("running", args={}), event, td("y")])
    tail = types(out)[types(out).index("tool-input-available") + 1 :]
    assert tail == ["tool-output-error", "error", "finish-step", "finish"]
    assert of_type(out, "error")[0]["errorText"] == message
    assert out[-1]["finishReason"] == "error"
    assert text_of(out) == "x"


def test_complete_ends_the_turn_when_finalize_is_missing() -> None:
    out, tr = translate("agent-ops-v2", [CREATE, td("x"), {"type": "complete"}], close=False)
    assert out[-1] == {"type": "finish", "finishReason": "stop"} and tr.done


def test_truncated_stream_ends_with_error() -> None:
    out, _ = translate("agent-ops-v2", [CREATE, td("x")])
    assert types(out)[-4:] == ["text-end", "error", "finish-step", "finish"]


def test_agent_status_question_status_hydration_and_domain_events() -> None:
    out, tr = translate(
        "agent-ops-v2",
        [
            CREATE,
            {"type": "agentStatus", "status": "thinking", "messageId": "m"},
            {"type": "status", "status": "busy"},
            {"type": "init", "messages": []},
            {"type": "message.updated", "message": {}},
            {"type": "git.state", "branch": "main"},
            {"type": "question", "questionId": "q1", "question": "Deploy?"},
            fin(),  # the agent waits for the answer: the turn already ended at the question
        ],
    )
    assert {"type": "data-agent-status", "data": {"status": "thinking"}, "transient": True} in out
    assert {
        "type": "tool-input-available",
        "toolCallId": "q1",
        "toolName": "ask_user",
        "input": {"questionId": "q1", "question": "Deploy?"},
    } in out
    assert out[-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert {"type": "data-session-status", "data": {"status": "busy"}, "transient": True} in out
    assert {"type": "data-git.state", "data": {"branch": "main"}, "transient": True} in out
    assert tr.translator.stats["hydration"] == 2
    assert text_of(out) == ""


def test_unknown_event_policies() -> None:
    events = [CREATE, {"type": "toast", "text": "hi"}, fin()]
    dropped, tr = translate("agent-ops-v2", events, unknown_events=UnknownEventPolicy.DROP)
    assert "data-toast" not in types(dropped) and tr.translator.stats["dropped-unknown-event"] == 1
    failed, _ = translate("agent-ops-v2", events, unknown_events=UnknownEventPolicy.ERROR)
    assert of_type(failed, "error")[0]["errorText"] == "Unsupported upstream event: toast"


def test_malformed_frames_never_raise() -> None:
    out, tr = translate(
        "agent-ops-v2",
        [
            CREATE,
            "not json",
            "[1]",
            '{"type": 3}',
            {"type": "message.part.text-delta", "delta": 5},
            {"type": "message.part.tool-update", "status": "running"},
            td("ok"),
            fin(),
        ],
    )
    assert tr.translator.stats["malformed-event"] == 5
    assert len(of_type(out, "data-upstream-malformed")) == 5
    assert text_of(out) == "ok" and out[-1]["finishReason"] == "stop"


def test_full_turn_in_real_clients(real_clients) -> None:
    out, _ = translate(
        "agent-ops-v2",
        [
            CREATE,
            td("Let me look. "),
            tool("pending", args={}),
            tool("running", args={"cmd": "ls"}),
            tool("completed", result={"files": 2}),
            td("Two files."),
            fin(),
        ],
    )
    for major, verdict in real_clients.check(to_sse(out)).items():
        assert verdict.ok, (major, verdict.fatal)
        assert verdict.text() == "Let me look. Two files."
        (tool_part,) = verdict.parts("tool-bash")
        assert tool_part["state"] == "output-available"
        assert tool_part["input"] == {"cmd": "ls"} and tool_part["output"] == {"files": 2}
        assert tool_part["providerExecuted"] is True
        assert verdict.finish_reason == "stop"
