"""The stream guard: ordering repairs, closing discipline, gating, one start, nothing after end."""

from __future__ import annotations

import pytest

from chunkbridge.translators.core.client_model import KnownToolCall
from chunkbridge.translators.core.closing import CLOSE_OUTCOMES, CloseReason, CloseRequest
from chunkbridge.translators.core.gating import Gate
from chunkbridge.translators.core.guard import StreamGuard
from chunkbridge.translators.core.validator import validate_sse
from tests.helpers import assert_valid_for, guard_all, to_sse, types

TD = {"type": "text-delta", "id": "t", "delta": "x"}


def test_plain_text_turn_is_framed_like_the_ai_sdk_server() -> None:
    out, guard = guard_all([{"type": "text-start", "id": "t"}, TD, {"type": "text-end", "id": "t"}])
    assert types(out) == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert out[-1] == {"type": "finish", "finishReason": "stop"}
    assert guard.repairs == {}


def test_delta_for_unknown_id_opens_the_part_and_close_ends_it() -> None:
    out, guard = guard_all([TD], reason=CloseReason.COMPLETED)
    assert types(out) == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert guard.repairs["opened-text"] == 1


def test_end_for_unknown_id_is_dropped_and_counted() -> None:
    out, guard = guard_all([{"type": "reasoning-end", "id": "nope"}])
    assert "reasoning-end" not in types(out)
    assert guard.repairs["dropped-reasoning-end-unknown-id"] == 1


def test_second_start_for_open_id_closes_the_first() -> None:
    out, guard = guard_all([TD, {"type": "text-start", "id": "t"}, TD])
    assert types(out)[2:7] == ["text-start", "text-delta", "text-end", "text-start", "text-delta"]
    assert guard.repairs["closed-reopened-text"] == 1


def test_parts_are_closed_before_finish_step_for_every_target() -> None:
    chunks = [
        {"type": "start-step"},
        TD,
        {"type": "reasoning-delta", "id": "r", "delta": "y"},
        {"type": "finish-step"},
        {"type": "start-step"},
        TD,
    ]
    for target in (5, 6, 7):
        out, _ = guard_all(chunks, target=target)
        first_finish = types(out).index("finish-step")
        assert types(out)[first_finish - 2 : first_finish] == ["reasoning-end", "text-end"]
        assert_valid_for(to_sse(out), target)


def test_steps_are_balanced() -> None:
    out, guard = guard_all(
        [{"type": "finish-step"}, {"type": "start-step"}, {"type": "start-step"}]
    )
    assert types(out) == [
        "start",
        "start-step",
        "finish-step",
        "start-step",
        "finish-step",
        "finish",
    ]
    assert guard.repairs["dropped-finish-step-outside-step"] == 1
    assert guard.repairs["closed-step-before-start-step"] == 1


def test_exactly_one_start_and_metadata_of_a_later_start_is_kept() -> None:
    out, guard = guard_all(
        [
            {"type": "start", "messageId": "m1"},
            {"type": "start", "messageMetadata": {"model": "x"}},
            {"type": "start"},
        ]
    )
    assert types(out).count("start") == 1
    assert out[0] == {"type": "start", "messageId": "m1"}
    assert {"type": "message-metadata", "messageMetadata": {"model": "x"}} in out
    assert guard.repairs["dropped-second-start"] == 1


def test_continuation_forces_the_message_id() -> None:
    out, _ = guard_all([{"type": "start", "messageId": "upstream-id"}, TD], message_id="a1")
    assert out[0] == {"type": "start", "messageId": "a1"}


def test_error_closes_parts_settles_tools_then_error_finish_step_finish() -> None:
    chunks = [
        TD,
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "s", "providerExecuted": True},
        {
            "type": "tool-input-available",
            "toolCallId": "c2",
            "toolName": "s",
            "input": {},
            "dynamic": True,
        },
        {"type": "error", "errorText": "backend exploded"},
        TD,
    ]
    out, guard = guard_all(chunks)
    tail = out[types(out).index("text-end") :]
    assert types(tail) == [
        "text-end",
        "tool-output-error",
        "tool-output-error",
        "error",
        "finish-step",
        "finish",
    ]
    assert tail[1] == {
        "type": "tool-output-error",
        "toolCallId": "c1",
        "errorText": "interrupted",
        "providerExecuted": True,
    }
    assert tail[2]["dynamic"] is True
    assert tail[3] == {"type": "error", "errorText": "backend exploded"}
    assert tail[5] == {"type": "finish", "finishReason": "error"}
    assert guard.repairs["dropped-after-finish"] == 1
    assert guard.finished and guard.close() == []


def test_clean_end_leaves_client_tool_calls_for_the_app() -> None:
    chunks = [{"type": "tool-input-available", "toolCallId": "c1", "toolName": "s", "input": {}}]
    out, _ = guard_all(chunks, finish_reason="tool-calls")
    assert "tool-output-error" not in types(out)
    assert out[-1] == {"type": "finish", "finishReason": "tool-calls"}


def test_clean_end_settles_tool_input_still_streaming() -> None:
    chunks = [
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "s"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{"},
    ]
    out, guard = guard_all(chunks)
    assert {
        "type": "tool-output-error",
        "toolCallId": "c1",
        "errorText": CLOSE_OUTCOMES[CloseReason.COMPLETED].tool_text,
    } in out
    assert guard.repairs["settled-pending-tool"] == 1


@pytest.mark.parametrize("reason", list(CloseReason))
@pytest.mark.parametrize("target", [5, 6, 7])
def test_every_close_reason_ends_validly(reason: CloseReason, target: int) -> None:
    out, guard = guard_all([TD], target=target, reason=reason)
    assert types(out).count("finish") == 1 and out[-1]["type"] == "finish"
    assert ("error" in types(out)) is CLOSE_OUTCOMES[reason].is_error
    assert_valid_for(to_sse(out), target)


def test_aborted_finish_reason_per_target() -> None:
    assert (
        guard_all([TD], target=7, reason=CloseReason.ABORTED)[0][-1]["finishReason"]
        == "interrupted"
    )
    assert guard_all([TD], target=6, reason=CloseReason.ABORTED)[0][-1]["finishReason"] == "other"


def test_close_without_any_chunk_still_starts_and_finishes() -> None:
    out, _ = guard_all([], reason=CloseReason.UPSTREAM_CLOSED)
    assert types(out) == ["start", "error", "finish"]


def test_tool_output_for_unknown_call_becomes_data_part() -> None:
    out, guard = guard_all([{"type": "tool-output-available", "toolCallId": "zz", "output": 1}])
    assert {
        "type": "data-orphan-tool-output-available",
        "data": {"toolCallId": "zz", "output": 1},
    } in out
    assert guard.repairs["orphan-tool-output-available-as-data"] == 1


def test_dynamic_flag_follows_the_tool_part_for_ai5() -> None:
    chunks = [
        {
            "type": "tool-input-available",
            "toolCallId": "c",
            "toolName": "s",
            "input": 1,
            "dynamic": True,
        },
        {"type": "tool-output-available", "toolCallId": "c", "output": 2},
    ]
    out, _ = guard_all(chunks)
    assert out[types(out).index("tool-output-available")]["dynamic"] is True
    assert_valid_for(to_sse(out), 5, 6, 7)


def test_gating_converts_what_the_target_lacks() -> None:
    chunks = [
        {"type": "tool-input-available", "toolCallId": "c", "toolName": "s", "input": 1},
        {"type": "tool-approval-request", "approvalId": "a", "toolCallId": "c"},
        {"type": "tool-output-denied", "toolCallId": "c"},
        {"type": "custom", "kind": "acme.x"},
        {"type": "reasoning-file", "url": "u", "mediaType": "image/png"},
        {"type": "abort", "reason": "user"},
        {"type": "text-start", "id": "t", "providerMetadata": None},
    ]
    out5, guard5 = guard_all(chunks, target=5, finish_reason="interrupted")
    # ai 5 has no approvals: the question form, a client-side ask_user call
    assert "tool-approval-request" not in types(out5)
    (question,) = [c for c in out5 if c.get("toolName") == "ask_user"]
    assert question["toolCallId"] == "a" and question["type"] == "tool-input-available"
    assert question["input"]["approval"] == {"approvalId": "a", "toolCallId": "c", "toolName": "s"}
    assert {
        "type": "tool-output-error",
        "toolCallId": "c",
        "errorText": "Tool execution was denied.",
    } in out5
    assert "data-custom" in types(out5) and "file" in types(out5)
    assert {"type": "abort"} in out5
    assert {"type": "text-start", "id": "t"} in out5
    assert out5[-1] == {"type": "finish", "finishReason": "other"}
    conv = guard5.gate.conversions
    assert conv["type:tool-approval-request->question"] == 1
    assert conv["field-removed:abort.reason"] == 1
    assert conv["null-removed:text-start.providerMetadata"] == 1
    assert conv["finish-reason:interrupted->other"] == 1
    assert_valid_for(to_sse(out5), 5, 6, 7)
    out7, guard7 = guard_all(chunks, target=7, finish_reason="interrupted")
    assert "tool-approval-request" in types(out7) and "tool-output-denied" in types(out7)
    assert out7[-1]["finishReason"] == "interrupted"
    assert_valid_for(to_sse(out7), 7)


def test_garbage_never_raises_and_is_counted() -> None:
    guard = StreamGuard()
    out = []
    for junk in [
        None,
        3,
        "text",
        [],
        {"type": 5},
        {"no": "type"},
        {"type": "text-delta"},
        {"type": "text-delta", "id": 7, "delta": "n"},
        {"type": "weird", "x": 1},
    ]:
        out += guard.feed(junk)
    out += guard.close()
    assert guard.gate.conversions["invalid-chunk"] == 6
    assert guard.gate.conversions["invalid-chunk:text-delta.id-missing"] == 1
    assert guard.gate.conversions["stringified:text-delta.id"] == 1
    assert {"type": "data-weird", "data": {"x": 1}} in out
    assert {"type": "text-delta", "id": "7", "delta": "n"} in out
    assert_valid_for(to_sse(out))


def test_repair_hooks_are_called() -> None:
    seen = []
    guard = StreamGuard(
        on_repair=lambda k, c: seen.append(k), on_conversion=lambda k, c: seen.append(k)
    )
    guard.feed(TD)
    guard.feed({"type": "abort", "reason": "x"})
    assert seen == ["opened-text", "field-removed:abort.reason"]


def test_non_object_metadata_is_wrapped_so_later_merges_cannot_throw() -> None:
    out, guard = guard_all(
        [
            {"type": "start", "messageMetadata": "ab"},
            {"type": "message-metadata", "messageMetadata": {"x": 1}},
        ],
        message_metadata=None,
    )
    assert out[0] == {"type": "start", "messageMetadata": {"value": "ab"}}
    assert guard.repairs["wrapped-metadata"] == 1
    assert_valid_for(to_sse(out))


# -- approvals and continuations -------------------------------------------------------------------

CALL = {"type": "tool-input-available", "toolCallId": "c", "toolName": "rm", "input": {"p": 1}}
ASK = {"type": "tool-approval-request", "approvalId": "a", "toolCallId": "c", "reason": "sure?"}


def drive(guard: StreamGuard, chunks: list[dict], reason: CloseReason) -> list[dict]:
    out: list[dict] = []
    for chunk in chunks:
        out += guard.feed(chunk)
    return out + guard.close(CloseRequest(reason))


@pytest.mark.parametrize("target", [5, 6, 7])
def test_an_approval_is_signed_reported_and_left_to_the_app(target: int) -> None:
    issued: list = []
    guard = StreamGuard(
        target=target,
        sign_approval=lambda aid, cid, name, inp: f"sig:{aid}:{cid}:{name}:{inp['p']}",
        on_approval=issued.append,
    )
    out = drive(guard, [CALL, ASK], CloseReason.COMPLETED)
    assert [(i.approval_id, i.tool_call_id, i.tool_name) for i in issued] == [("a", "c", "rm")]
    assert not [c for c in out if c["type"] == "tool-output-error"]  # not settled: the app's
    if target >= 6:
        (request,) = [c for c in out if c["type"] == "tool-approval-request"]
        assert request["signature"] == "sig:a:c:rm:1"
        assert ("reason" in request) is (target == 7)
    else:
        (form,) = [c for c in out if c.get("toolName") == "ask_user"]
        assert form["input"]["approval"]["signature"] == "sig:a:c:rm:1"
        assert form["input"]["question"] == "sure?"
    assert_valid_for(to_sse(out), target)
    # an error still settles the waiting call
    guard = StreamGuard(target=target)
    out = drive(guard, [CALL, ASK], CloseReason.UPSTREAM_ERROR)
    assert any(c["type"] == "tool-output-error" and c["toolCallId"] == "c" for c in out)


def test_an_approval_for_an_unknown_or_settled_call_never_reaches_the_client_as_one() -> None:
    guard = StreamGuard(target=7)
    out = drive(guard, [ASK], CloseReason.COMPLETED)
    assert "tool-approval-request" not in types(out) and guard.approvals_issued == []
    settled = {"type": "tool-output-available", "toolCallId": "c", "output": 1}
    guard = StreamGuard(target=7)
    out = drive(guard, [CALL, settled, ASK], CloseReason.COMPLETED)
    assert "tool-approval-request" not in types(out)
    assert guard.repairs["dropped-approval-for-settled-call"] == 1


@pytest.mark.parametrize("target", [5, 6, 7])
def test_a_continuation_attaches_outputs_to_known_parts_and_opens_with_the_denials(
    target: int,
) -> None:
    known = [
        KnownToolCall("c", "rm", False, "approval-responded", True, {"p": 1}),
        KnownToolCall("d", "mv", False, "approval-responded", True, {"p": 2}),
    ]
    guard = StreamGuard(target=target, message_id="m1", known_tools=known, denied_calls=["d"])
    upstream = [
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "c", "toolName": "rm"},
        {**CALL},
        {"type": "tool-output-available", "toolCallId": "c", "output": "ok"},
        {"type": "tool-output-error", "toolCallId": "d", "errorText": "late"},
        {"type": "text-delta", "id": "t", "delta": "done"},
    ]
    out = drive(guard, upstream, CloseReason.COMPLETED)
    assert out[0] == {"type": "start", "messageId": "m1"}  # the known tools survive the start
    denial = "tool-output-denied" if target >= 6 else "tool-output-error"
    assert types(out)[:4] == ["start", "start-step", denial, "tool-output-available"]
    assert [c.get("toolCallId") for c in out if c.get("toolCallId")] == ["d", "c"]
    assert guard.repairs["dropped-known-tool-input"] == 2
    assert guard.repairs["dropped-output-after-denial"] == 1


# -- reset-step: only for a client that says it knows it ------------------------------------------

#: A step that streams some text and the start of a call, then is withdrawn and made again.
WITHDRAWN_STEP = [
    {"type": "start-step"},
    {"type": "text-start", "id": "t1"},
    {"type": "text-delta", "id": "t1", "delta": "a draft"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "search"},
    {"type": "reset-step"},
    {"type": "text-start", "id": "t2"},
    {"type": "text-delta", "id": "t2", "delta": "the answer"},
    {"type": "text-end", "id": "t2"},
]


@pytest.mark.parametrize("target", [5, 6, 7])
def test_reset_step_is_never_sent_to_a_client_without_it(target: int) -> None:
    """Without ``reset_step`` (ai 5, 6, or an ai 7 that may be older than 7.0.70) the withdrawn
    parts stay: the open text ends where the step was withdrawn, the app hears of it in a
    transient data part, and the call cut off is settled at the end like any other."""
    out, guard = guard_all(WITHDRAWN_STEP, target=target)
    assert "reset-step" not in types(out)
    at = out.index({"type": "data-reset-step", "data": {}, "transient": True})
    assert out[at - 1] == {"type": "text-end", "id": "t1"}
    assert guard.gate.conversions == {"type:reset-step->data-reset-step": 1}
    settled = [c["toolCallId"] for c in out if c["type"] == "tool-output-error"]
    assert settled == ["c1"]
    assert guard.reset_step is False
    assert_valid_for(to_sse(out), *range(target, 8))


def test_reset_step_reaches_a_client_that_knows_it() -> None:
    """With ``reset_step`` the chunk goes out as it is: the client drops the step's parts and
    forgets their ids, so nothing of the withdrawn step is closed or settled afterwards."""
    out, guard = guard_all(WITHDRAWN_STEP, target=7, reset_step=True)
    assert types(out) == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "tool-input-start",
        "reset-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert guard.gate.conversions == {} and guard.repairs == {}
    assert guard.reset_step is True and guard.gate.reset_step is True
    body = to_sse(out)
    assert_valid_for(body, 7, reset_step=True)
    report = validate_sse(body, 7)  # an ai 7 not known to have it rejects it
    assert not report.ok and "reset_step" in str(report.errors[0])


def test_reset_step_is_an_ai_7_capability() -> None:
    with pytest.raises(ValueError, match="reset_step"):
        Gate(6, reset_step=True)
    with pytest.raises(ValueError, match="reset_step"):
        StreamGuard(target=5, reset_step=True)
