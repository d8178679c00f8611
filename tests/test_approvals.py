"""Questions and tool approvals round-tripped through the real AI SDK chat (issue: human in the
loop). The demo's agent-ops backend asks on cue ("ask me", "approve"); ``chat_loop.mjs`` runs the
real ``AbstractChat`` of ai 5, 6 and 7, answers the way an app does (``addToolOutput``,
``addToolApprovalResponse``) and lets the chat send the continuation. The gateway serves each
major as its ``target``. Also: approvals are untrusted input (forged, replayed, re-targeted,
tampered-with answers are refused before the upstream hears of them)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest

from chunkbridge.gateway.devtools.upstreams import DemoUpstream
from chunkbridge.protocol_specs.human_in_the_loop import approval_signature
from chunkbridge.translators.dialects.agent_ops_v2.demo import DEMO_GATED_ARGS, demo_turn
from tests.conformance.harness import run_script
from tests.gateway_harness import post, running_gateway, user_body
from tests.helpers import chat_reply, decode_sse

pytestmark = pytest.mark.conformance


@asynccontextmanager
async def demo_gateway(**settings: Any) -> AsyncIterator[tuple[str, DemoUpstream]]:
    upstream = DemoUpstream(demo_turn)
    await upstream.start()
    try:
        async with running_gateway(upstream=upstream.url_template, **settings) as (gw, _):
            yield gw, upstream
    finally:
        await upstream.aclose()


def frames_of(upstream: DemoUpstream, session: str, kind: str) -> list[dict[str, Any]]:
    return [f for f in upstream.received[session] if f.get("type") == kind]


def texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if p["type"] == "text"]


@pytest.mark.parametrize("major", [5, 6, 7])
async def test_a_question_answered_in_the_chat_continues_the_same_message(
    real_clients: Any, major: int
) -> None:
    async with demo_gateway(target=major) as (gw, upstream):
        api = f"{gw}/api/sessions/q{major}/chat"
        answers = [{"kind": "question", "output": "green"}]
        result = await real_clients.chat_loop(api, major, "ask me", answers)
    message = chat_reply(result)
    assert texts(message) == [
        "Before I answer, one question.",
        "You chose **green**: a fine choice.",
    ]
    (question,) = [p for p in message["parts"] if p["type"] == "tool-ask_user"]
    assert question["state"] == "output-available" and question["output"] == "green"
    assert question["input"]["options"] == ["red", "green", "blue"]
    assert frames_of(upstream, f"q{major}", "answer") == [
        {"type": "answer", "questionId": "q_0001", "answer": "green"}
    ]
    # the continuation named the same message, and the second request continued it
    assert [r.get("messageId") for r in result["requests"]] == [None, message["id"]]


@pytest.mark.parametrize("major", [5, 6, 7])
async def test_an_approved_tool_runs_and_its_output_lands_on_the_same_part(
    real_clients: Any, major: int
) -> None:
    async with demo_gateway(target=major) as (gw, upstream):
        api = f"{gw}/api/sessions/a{major}/chat"
        answers = [{"kind": "approval", "approved": True}]
        result = await real_clients.chat_loop(api, major, "please approve a cleanup", answers)
    message = chat_reply(result)
    (tool,) = [p for p in message["parts"] if p["type"] == "tool-delete_branch"]
    assert tool["state"] == "output-available", tool
    assert tool["input"] == DEMO_GATED_ARGS
    assert tool["output"] == {"deleted": DEMO_GATED_ARGS["branch"]}
    if major >= 6:
        assert tool["approval"]["id"] == "apr_0001" and tool["approval"]["approved"] is True
    else:  # the question form, answered "approve"
        (form,) = [p for p in message["parts"] if p["type"] == "tool-ask_user"]
        assert form["toolCallId"] == "apr_0001" and form["output"] == "approve"
        assert form["input"]["approval"]["toolCallId"] == tool["toolCallId"]
    assert texts(message)[-1] == "Done: the branch is deleted."
    assert frames_of(upstream, f"a{major}", "approval") == [
        {"type": "approval", "approvalId": "apr_0001", "callId": "prt_0001", "approved": True}
    ]
    assert not frames_of(upstream, f"a{major}", "abort")  # the agent was left waiting


@pytest.mark.parametrize("major", [5, 6, 7])
async def test_a_denied_tool_ends_output_denied_and_the_agent_goes_on(
    real_clients: Any, major: int
) -> None:
    async with demo_gateway(target=major) as (gw, upstream):
        api = f"{gw}/api/sessions/d{major}/chat"
        answers = [{"kind": "approval", "approved": False, "reason": "not today"}]
        result = await real_clients.chat_loop(api, major, "approve?", answers)
    message = chat_reply(result)
    (tool,) = [p for p in message["parts"] if p["type"] == "tool-delete_branch"]
    if major >= 6:
        assert tool["state"] == "output-denied", tool
        assert tool["approval"]["approved"] is False
    else:  # ai 5 has no denial state
        assert tool["state"] == "output-error" and "denied" in tool["errorText"], tool
    (frame,) = frames_of(upstream, f"d{major}", "approval")
    assert frame["approved"] is False
    if major >= 6:
        assert frame["reason"] == "not today"
        assert texts(message)[-1] == "Understood, I left the branch alone (not today)."
    else:
        assert texts(message)[-1] == "Understood, I left the branch alone."


async def test_sendautomaticallywhen_sends_the_approval_continuation(real_clients: Any) -> None:
    async with demo_gateway(target=7) as (gw, upstream):
        api = f"{gw}/api/sessions/auto/chat"
        answers = [{"kind": "approval", "approved": True}]
        result = await real_clients.chat_loop(api, 7, "approve", answers, auto=True)
    message = chat_reply(result)
    (tool,) = [p for p in message["parts"] if p["type"] == "tool-delete_branch"]
    assert tool["state"] == "output-available"
    assert len(frames_of(upstream, "auto", "approval")) == 1
    assert len(result["requests"]) == 2


# -- approvals are untrusted input -----------------------------------------------------------------


async def first_turn(gw: str, session: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The demo asks for an approval; the assistant message as the ai 7 client holds it."""
    response = await post(gw, session, user_body("approve"))
    chunks = decode_sse(response.content)
    request = next(c for c in chunks if c["type"] == "tool-approval-request")
    available = next(c for c in chunks if c["type"] == "tool-input-available")
    message = {
        "id": chunks[0]["messageId"],
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-delete_branch",
                "toolCallId": available["toolCallId"],
                "state": "approval-responded",
                "input": available["input"],
                "providerExecuted": True,
                "approval": {
                    "id": request["approvalId"],
                    "approved": True,
                    **({"signature": request["signature"]} if "signature" in request else {}),
                },
            },
        ],
    }
    return message, chunks


def continuing(message: dict[str, Any]) -> dict[str, Any]:
    body = user_body("approve")
    body["messages"].append(message)
    body["messageId"] = message["id"]
    return body


async def test_only_approvals_issued_in_the_session_count_and_only_once() -> None:
    async with demo_gateway(target=7) as (gw, upstream):
        message, _ = await first_turn(gw, "s1")
        forged = copy.deepcopy(message)
        forged["parts"][1]["approval"]["id"] = "apr_made_up"
        response = await post(gw, "s1", continuing(forged))
        assert response.status_code == 400 and "not requested" in response.text
        elsewhere = await post(gw, "other", continuing(message))  # another session's approval
        assert elsewhere.status_code == 400
        retargeted = copy.deepcopy(message)
        retargeted["parts"][1]["toolCallId"] = "prt_other"
        response = await post(gw, "s1", continuing(retargeted))
        assert response.status_code == 400 and "another tool call" in response.text
        malformed = copy.deepcopy(message)
        del malformed["parts"][1]["approval"]["approved"]
        assert (await post(gw, "s1", continuing(malformed))).status_code == 400
        malformed["parts"][1]["approval"]["approved"] = "true"  # no coercion of a decision
        assert (await post(gw, "s1", continuing(malformed))).status_code == 400
        assert frames_of(upstream, "s1", "approval") == []  # nothing reached the agent
        accepted = await post(gw, "s1", continuing(message))
        assert accepted.status_code == 200
        replay = await post(gw, "s1", continuing(message))
        assert replay.status_code == 409
    assert len(frames_of(upstream, "s1", "approval")) == 1


async def test_with_a_secret_approvals_are_signed_and_a_changed_input_is_refused() -> None:
    secret = "s3cret-for-tests"
    async with demo_gateway(target=7, approval_secret=secret) as (gw, upstream):
        message, chunks = await first_turn(gw, "s1")
        request = next(c for c in chunks if c["type"] == "tool-approval-request")
        part = message["parts"][1]
        assert request["signature"] == approval_signature(
            secret, request["approvalId"], part["toolCallId"], "delete_branch", part["input"]
        )
        tampered = copy.deepcopy(message)
        tampered["parts"][1]["input"] = {"branch": "main"}
        response = await post(gw, "s1", continuing(tampered))
        assert response.status_code == 400 and "signature" in response.text
        unsigned = copy.deepcopy(message)
        del unsigned["parts"][1]["approval"]["signature"]
        assert (await post(gw, "s1", continuing(unsigned))).status_code == 400
        response = await post(gw, "s1", continuing(message))
        assert response.status_code == 200
        tool = [c for c in decode_sse(response.content) if c.get("toolCallId")]
        assert [c["type"] for c in tool] == ["tool-output-available"]  # not announced again
    assert len(frames_of(upstream, "s1", "approval")) == 1


#: Inputs whose JSON a JavaScript client writes back otherwise than Python: integral floats,
#: exponents, -0, integers beyond 2**53, keys past the BMP (sorted by UTF-16), a lone surrogate.
SIGNED_INPUTS: list[Any] = [
    {"seconds": 1.0},
    {"t": 0.1, "big": 1e21, "bigger": 1.5e300, "small": 1e-7, "tiny": 0.000001234, "neg": -0.0},
    {"n": 9007199254740993, "m": -(2**60), "f": 1e16},
    {"é": "ü", "\U0001d11e": 1, "\uffc2": 2, "a": [1.5, None, True, "x\u2028y\x7f\x1f"]},
    {"lone": "\ud800 and \udfff"},
    {"nested": {"z": [{"y": 2.50, "x": 10.0}]}},
    [],
    "text",
    3,
    None,
]


@pytest.mark.parametrize("secret", ["s3cret-for-tests"])
def test_approval_signatures_agree_with_the_ai_sdks_own(secret: str, real_clients: Any) -> None:
    """The AI SDK 7 server's own ``signToolApproval`` signs each input as a JavaScript client
    holds it (parsed from JSON); the gateway's signature of the input as the model sent it must
    be the same, or a client's approval of a call with a ``1.0`` in it is refused."""
    cases = [
        {"secret": secret, "approvalId": f"approval-{i}", "toolCallId": f"c{i}", "toolName": "t"}
        | {"input": value}
        for i, value in enumerate(SIGNED_INPUTS)
    ]
    theirs = run_script("sign_approval.mjs", cases, 30)
    ours = [
        approval_signature(secret, c["approvalId"], c["toolCallId"], c["toolName"], c["input"])
        for c in cases
    ]
    assert ours == theirs


async def test_the_approval_frame_is_templatable() -> None:
    template = {"kind": "decision", "id": "{approval_id}", "ok": "{approved}", "why": "{reason}"}
    async with demo_gateway(target=6, approval_frame=template) as (gw, upstream):
        message, _ = await first_turn(gw, "s1")
        message["parts"][1]["approval"].update(approved=False, reason="no")
        response = await post(gw, "s1", continuing(message))
        assert response.status_code == 200
        chunks = decode_sse(response.content)
        assert {"type": "tool-output-denied", "toolCallId": "prt_0001"} in chunks
    decisions = [f for f in upstream.received["s1"] if f.get("kind") == "decision"]
    assert decisions == [{"kind": "decision", "id": "apr_0001", "ok": False, "why": "no"}]
    assert orjson.dumps(decisions)  # plain JSON


async def test_an_answer_the_upstream_never_got_can_be_sent_again() -> None:
    upstream = DemoUpstream(demo_turn)
    await upstream.start()
    async with running_gateway(upstream=upstream.url_template, target=7) as (gw, app):
        message, _ = await first_turn(gw, "s1")
        await upstream.aclose()  # the agent's side goes away before the answer
        response = await post(gw, "s1", continuing(message))
        assert response.status_code == 502
        ledger = app.state.gateway.stores.approvals
        approval_id = message["parts"][1]["approval"]["id"]
        assert await ledger.lookup("s1", [approval_id]) == ["prt_0001"]  # still answerable


async def test_approvals_are_counted_and_logged(capsys: pytest.CaptureFixture[str]) -> None:
    async with demo_gateway(target=7) as (gw, _):
        message, _ = await first_turn(gw, "s1")
        forged = copy.deepcopy(message)
        forged["parts"][1]["approval"]["id"] = "apr_made_up"
        assert (await post(gw, "s1", continuing(forged))).status_code == 400
        assert (await post(gw, "s1", continuing(message))).status_code == 200
        async with httpx.AsyncClient(trust_env=False) as client:
            metrics = (await client.get(f"{gw}/metrics")).text
    for line in (
        'chunkbridge_approvals_total{event="requested"} 1.0',
        'chunkbridge_approvals_total{event="refused"} 1.0',
        'chunkbridge_approvals_total{event="approved"} 1.0',
    ):
        assert line in metrics, line
    logged = capsys.readouterr().out
    assert "approvals_requested=1" in logged and "request.rejected" in logged
