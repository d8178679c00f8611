"""chunkbridge's ``pydantic-ai`` dialect against pydantic-ai's own ``VercelAIAdapter`` (issue 44).

The same agent (``FunctionModel``, no network) and the same ``useChat`` body through both, in
one Starlette app: ``VercelAIAdapter.dispatch_request(request, agent=…, sdk_version=major)`` (the
adapter's documented path) on one route, ``UIStreamResponse(agent.run_stream_events(**
agent_input(chat)), dialect="pydantic-ai", target=major, request=chat)`` on the other. Every body
goes to the real ai 5, 6 and 7 clients (one batch, the worker's one oracle process); the final
``UIMessage`` each major builds of its own target's bodies must be the same on both sides, part
by part (steps, texts, reasoning, tool calls with their input, state, output and errors, data
parts, in order), but for the differences below, each asserted exactly so that a change on
either side shows (docs/vercel-ai-adapter.md says why, and where the adapter is wrong):

* message metadata: the adapter's ``{pydantic_ai: {timestamp}}``, chunkbridge's ``{model, usage}``;
* finish reason: the adapter passes the model's own (``FunctionModel`` reports none: no
  ``finishReason``); chunkbridge ``stop``, or ``tool-calls`` when the run waits for the app;
* reasoning: the part's id (a fresh UUID / ``reasoning-1``) and the ``providerMetadata`` namespace
  the signature rides in (``pydantic_ai`` snake_case / ``pydanticAi`` camelCase); chunkbridge
  reads both back, the adapter only its own;
* an approval at ai 5: the adapter drops it (the call stays ``input-available``); chunkbridge
  asks through its question form (an ``ask_user`` call ai 5 can answer);
* arguments that are not JSON: the adapter's input is ``{"INVALID_JSON": raw}`` (announced as
  available at ai 5); chunkbridge's is the raw text, in a ``tool-input-error``, as the AI SDK's;
* a call cut off by an error: ``Tool execution was interrupted by an error.`` / ``interrupted``;
* a provider-executed tool: both keep the call's fields (id, provider, details) in
  ``callProviderMetadata``, each in its own form, and give the call and its return back to the
  model in the next run's history; chunkbridge also keeps the return's own details (ai 6 and
  7), and reads the adapter's form too, while the adapter reads only its own and refuses a
  part with ``resultProviderMetadata`` (an ai 6/7 part field) outright;
* the stream: ids, ``start.messageId`` on a continuation, where a resumed run puts the decided
  call's output (before / inside its first step), an unbalanced ``finish-step`` (adapter) when
  the run fails before its first step, the response headers.

Where both must fail, they fail alike: ai 5 refuses ``tool-approval-request`` and
``tool-output-denied``, which both sides send only to a 6 or 7 target.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from pydantic_ai.ui.vercel_ai import VercelAIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chunkbridge import UIStreamResponse, parse_chat_request
from chunkbridge.translators.dialects.pydantic_ai import agent_input
from tests.conformance.harness import MAJORS, RealClients, Verdict
from tests.helpers import decode_sse
from tests.vercel_adapter_agents import (
    ADAPTER_STORED,
    ADAPTER_STREAMED,
    AGENTS,
    CASES,
    CHUNKBRIDGE_AT_5,
    CHUNKBRIDGE_AT_7,
    Case,
    then,
)

pytestmark = pytest.mark.conformance

ADAPTER, OURS = "adapter", "chunkbridge"
SIDES = (ADAPTER, OURS)
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
#: (case, client) → the chunk type that client refuses, in the bodies of both sides for every
#: target above 5 (the approval chunks are 6 and 7 only, spec §2.3).
REFUSED = {
    ("approval-required", 5): "tool-approval-request",
    ("approval-denied", 5): "tool-output-denied",
}


async def _adapter(request: Request) -> Response:
    agent = AGENTS[request.path_params["agent"]]
    major = request.path_params["major"]
    return await VercelAIAdapter.dispatch_request(request, agent=agent, sdk_version=major)


async def _chunkbridge(request: Request) -> Response:
    """The route a README reader writes: the chat's history in, the agent's events out."""
    agent = AGENTS[request.path_params["agent"]]
    chat = parse_chat_request(await request.body())
    run = agent_input(chat)
    events = agent.run_stream_events(
        message_history=run.message_history, deferred_tool_results=run.deferred_tool_results
    )
    target = request.path_params["major"]
    return UIStreamResponse(events, dialect="pydantic-ai", target=target, request=chat)


APP = Starlette(
    routes=[
        Route("/adapter/{agent}/{major:int}", _adapter, methods=["POST"]),
        Route("/chunkbridge/{agent}/{major:int}", _chunkbridge, methods=["POST"]),
    ]
)


@dataclass(frozen=True)
class Answer:
    """One side's answer to one case at one target, and what each client made of it."""

    body: bytes
    headers: httpx.Headers
    verdicts: dict[Any, Verdict]

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return decode_sse(self.body)


Key = tuple[str, str, int]  # (case, side, target)


async def _post_all() -> dict[Key, tuple[bytes, httpx.Headers]]:
    out = {}
    transport = httpx.ASGITransport(app=APP)
    async with httpx.AsyncClient(transport=transport, base_url="http://app", timeout=30) as client:
        for name, case in CASES.items():
            for side in SIDES:
                for target in case.targets:
                    url = f"/{side}/{case.agent}/{target}"
                    response = await client.post(url, json=case.body)
                    assert response.status_code == 200, (name, side, response.text)
                    out[name, side, target] = response.content, response.headers
    return out


@pytest.fixture(scope="module")
def answers(real_clients: RealClients) -> dict[Key, Answer]:
    """Every case through both sides at each target, and every body through ai 5, 6 and 7
    (one batch)."""
    posted = asyncio.run(_post_all())
    keys = list(posted)
    bodies = [posted[k][0] for k in keys]
    continued = [CASES[k[0]].continued for k in keys]
    verdicts = real_clients.check_many(bodies, MAJORS, continued)
    return {k: Answer(*posted[k], v) for k, v in zip(keys, verdicts, strict=True)}


def _pairs(answers: dict[Key, Answer]) -> list[tuple[str, Case, int, Verdict, Verdict]]:
    """Each case at each target: what that target's client built of each side's body."""
    return [
        (name, case, t, answers[name, ADAPTER, t].verdicts[t], answers[name, OURS, t].verdicts[t])
        for name, case in CASES.items()
        for t in case.targets
    ]


# -- validity ----------------------------------------------------------------------------------


def test_every_body_is_taken_by_every_client_but_the_approval_chunks_by_ai_5(
    answers: dict[Key, Answer],
) -> None:
    for (name, side, target), answer in answers.items():
        case = CASES[name]
        for client, verdict in answer.verdicts.items():
            refused = REFUSED.get((name, client)) if target > 5 else None
            if refused is None:
                assert verdict.ok, (name, side, target, client, verdict.fatal)
                assert verdict.error_text == case.error, (name, side, target, client)
            else:
                assert not verdict.ok, (name, side, target, client)
                assert f'"type":"{refused}"' in (verdict.fatal or ""), verdict.fatal


# -- the final messages --------------------------------------------------------------------------


def _check_metadata(case: Case, theirs: dict[str, Any], ours: dict[str, Any]) -> None:
    """The adapter's one ``message-metadata`` chunk (the run result's timestamp) against
    chunkbridge's ``finish`` metadata (model and usage); an error ending carries neither."""
    if case.error is not None:
        assert "metadata" not in theirs and "metadata" not in ours
        return
    their_meta = theirs.pop("metadata")
    assert list(their_meta) == ["pydantic_ai"] and list(their_meta["pydantic_ai"]) == ["timestamp"]
    assert ISO_TIME.match(their_meta["pydantic_ai"]["timestamp"]), their_meta
    our_meta = ours.pop("metadata")
    assert our_meta["model"] == AGENTS[case.agent].model.model_name
    assert list(our_meta) == ["model", "usage"]
    assert set(our_meta["usage"]) == {"inputTokens", "outputTokens"}


def _check_finish_reason(case: Case, theirs: Verdict, ours: Verdict) -> None:
    """``FunctionModel`` reports no finish reason: the adapter sends none; chunkbridge says why
    the run ended. After an ``error`` no ``finish`` reaches the client on either side."""
    assert theirs.finish_reason is None
    if case.error is not None:
        assert ours.finish_reason is None
    else:
        assert ours.finish_reason == ("tool-calls" if case.waits else "stop")


Parts = list[dict[str, Any]]
Difference = Callable[[int, Parts, Parts], None]


def _reasoning(target: int, theirs: Parts, ours: Parts) -> None:
    """The reasoning part's id and where its signature rides, for the next run's history."""
    (their_part,) = [p for p in theirs if p["type"] == "reasoning"]
    (our_part,) = [p for p in ours if p["type"] == "reasoning"]
    assert UUID.match(their_part.pop("id")) and our_part.pop("id") == "reasoning-1"
    signed = {"signature": "sig-1", "provider_name": "function"}
    assert their_part.pop("providerMetadata") == {"pydantic_ai": signed}
    signed = {"signature": "sig-1", "providerName": "function"}
    assert our_part.pop("providerMetadata") == {"pydanticAi": signed}


def _approval_at_5(target: int, theirs: Parts, ours: Parts) -> None:
    """At ai 5 the adapter sends no approval at all; chunkbridge asks (spec §2.3: no
    ``tool-approval-request`` in 5)."""
    if target != 5:
        return
    asked = ours.pop()
    assert asked["type"] == "tool-ask_user" and asked["state"] == "input-available"
    assert asked["input"]["approval"] == {
        "approvalId": "c4",
        "toolCallId": "c4",
        "toolName": "delete_file",
    }
    assert theirs[-1]["state"] == ours[-1]["state"] == "input-available"  # the call itself


def _invalid_arguments(target: int, theirs: Parts, ours: Parts) -> None:
    """``{"city": "Par`` is no JSON: the adapter makes pydantic-ai's placeholder object of it,
    chunkbridge keeps the text (a ``tool-input-error``: ai 5 and 6 store it as ``rawInput``,
    ai 7 as ``input``, spec §4.1)."""
    raw = '{"city": "Par'
    their_call, our_call = theirs[1], ours[1]
    assert their_call["state"] == our_call["state"] == "output-error"
    placeholder = {"INVALID_JSON": raw}
    if target == 5:  # announced with tool-input-available: an input like any other
        assert their_call.pop("input") == placeholder
    elif target == 6:
        assert their_call.pop("rawInput") == placeholder
    else:
        assert their_call.pop("input") == placeholder
    assert our_call.pop("input" if target == 7 else "rawInput") == raw


def _cut_off_call(target: int, theirs: Parts, ours: Parts) -> None:
    """The tool raised: both close its call before the ``error``, in their own words."""
    assert theirs[-1].pop("errorText") == "Tool execution was interrupted by an error."
    assert ours[-1].pop("errorText") == "interrupted"


def _search(message: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = message["parts"][1]
    return part


def _native_tool(target: int, theirs: Parts, ours: Parts) -> None:
    """Both keep the search call's fields for the next run, each in its own form (the very
    forms the history cases below send back); chunkbridge also the return's own details, where
    they differ from the call's (ai 6 and 7 keep an output's metadata)."""
    adapter_form = _search(ADAPTER_STREAMED)["callProviderMetadata"]
    assert theirs[1].pop("callProviderMetadata") == adapter_form
    our_form = _search(CHUNKBRIDGE_AT_5 if target == 5 else CHUNKBRIDGE_AT_7)
    assert ours[1].pop("callProviderMetadata") == our_form["callProviderMetadata"]
    if target > 5:
        assert ours[1].pop("resultProviderMetadata") == our_form["resultProviderMetadata"]


def _echoed(parts: Parts) -> list[str]:
    (text,) = [p for p in parts if p["type"] == "text"]
    return list(text["text"].splitlines())


def _signature_in_our_form(target: int, theirs: Parts, ours: Parts) -> None:
    """A signature in chunkbridge's namespace: only chunkbridge gives it back to the model."""
    line = "response thinking 'The user wants the weather.' signature="
    assert line + "None" in _echoed(theirs) and line + "sig-1" in _echoed(ours)
    theirs[-1]["text"] = ours[-1]["text"]


def _native_history_in_our_form(target: int, theirs: Parts, ours: Parts) -> None:
    """The search in chunkbridge's form: the adapter gives the call and return back without
    their fields (it reads only its own namespace), chunkbridge with them."""
    search = "web_search ws_1 {'query': 'paris'}"
    found = "web_search ws_1 success [{'url': 'https://paris.example', 'title': 'Paris'}]"
    call, returned = f"response builtin-tool-call {search}", f"response builtin-tool-return {found}"
    their_lines, our_lines = _echoed(theirs), _echoed(ours)
    bare = [f"{call} provider=None id=None details=None", f"{returned} provider=None details=None"]
    assert their_lines[1:3] == bare
    assert our_lines[1:3] == [
        f"{call} provider=function id=ws_1 details={{'status': 'completed'}}",
        f"{returned} provider=function details={{'status': 'completed'}}",
    ]
    assert their_lines[:1] + their_lines[3:] == our_lines[:1] + our_lines[3:]
    theirs[-1]["text"] = ours[-1]["text"]


DIFFERENCES: dict[str, Difference] = {
    "reasoning-and-tool": _reasoning,
    "approval-required": _approval_at_5,
    "invalid-tool-arguments": _invalid_arguments,
    "tool-exception": _cut_off_call,
    "native-tool": _native_tool,
    "history-signature-chunkbridge-form": _signature_in_our_form,
    "history-native-tool-chunkbridge-form": _native_history_in_our_form,
}


def test_the_final_messages_agree_but_for_the_listed_differences(
    answers: dict[Key, Answer],
) -> None:
    for name, case, target, theirs, ours in _pairs(answers):
        where = (name, target)
        _check_finish_reason(case, theirs, ours)
        if theirs.message is None or ours.message is None:  # failed before any chunk applied
            assert theirs.message is ours.message is None and case.error, where
            continue
        their_message, our_message = dict(theirs.message), dict(ours.message)
        _check_metadata(case, their_message, our_message)
        their_parts = [dict(p) for p in their_message.pop("parts")]
        our_parts = [dict(p) for p in our_message.pop("parts")]
        if name in DIFFERENCES:
            DIFFERENCES[name](target, their_parts, our_parts)
        assert their_message == our_message, where  # id and role
        assert their_parts == our_parts, where


def test_what_both_agree_on(answers: dict[Key, Answer]) -> None:
    """A few of the agreed messages spelled out, so that the agreement is not an agreement on
    nothing."""

    def parts(name: str, target: int = 7) -> Parts:
        message = answers[name, OURS, target].verdicts[target].message
        assert message is not None
        return list(message["parts"])

    kinds = [p["type"] for p in parts("reasoning-and-tool")]
    assert kinds == ["step-start", "reasoning", "tool-get_weather", "step-start", "text"]
    calls = [(p["toolCallId"], p["state"]) for p in parts("parallel-tools") if "toolCallId" in p]
    assert calls == [("c1", "output-available"), ("c2", "output-available")]
    retried = parts("tool-retry")[1]
    assert retried["errorText"] == "no entry 'a'; try 'b'"
    approved = parts("approval-approved")
    assert (
        approved[2]["state"] == "output-available"
        and approved[-1]["text"] == "Done: deleted /tmp/x."
    )
    assert parts("approval-denied")[2]["state"] == "output-denied"
    assert parts("approval-required", 6)[-1]["approval"] == {"id": "c4"}
    line = "response thinking 'The user wants the weather.' signature=sig-1"
    assert line in _echoed(parts("history-signature-adapter-form"))
    call = "response builtin-tool-call web_search ws_1 {'query': 'paris'} provider=function"
    returned = "response builtin-tool-return web_search ws_1 success"
    found = "[{'url': 'https://paris.example', 'title': 'Paris'}] provider=function"
    assert _echoed(parts("history-native-tool-adapter-form"))[1:3] == [
        f"{call} id=ws_1 details={{'status': 'completed'}}",
        f"{returned} {found} details={{'status': 'completed'}}",  # the call's: none of its own
    ]
    assert _echoed(parts("history-native-tool-adapter-stored-form"))[1:3] == [
        f"{call} id=ws_1 details={{'status': 'completed'}}",
        f"{returned} {found} details={{'sources': 1}}",
    ]
    seen = _echoed(parts("history-with-tools-and-files"))
    assert seen == [
        "request user-prompt [binary image/png 8B, url application/pdf "
        "https://files.example/a.pdf, 'weather in Paris?']",
        "response thinking 'The user wants the weather.' signature=None",
        "response tool-call get_weather c1 {'city': 'Paris'}",
        "request tool-return get_weather c1 success {'sky': 'sunny'}",
        "response tool-call lookup c8 {'key': 'a'}",
        "request tool-return lookup c8 failed \"no entry 'a'; try 'b'\"",
        "response text 'Sunny.'",
        "request user-prompt 'what did you see?'",
    ]


# -- the streams -----------------------------------------------------------------------------------


def test_the_streams_differ_in_ids_framing_and_headers(answers: dict[Key, Answer]) -> None:
    for (name, side, _), answer in answers.items():
        chunks = answer.chunks
        ids = [c["id"] for c in chunks if c["type"] in ("text-start", "reasoning-start")]
        start = chunks[0]
        continued = CASES[name].continued
        if side == ADAPTER:
            assert all(UUID.match(i) for i in ids), (name, ids)
            assert start == {"type": "start"}  # no messageId, even when continuing (§5.4)
            assert not answer.body.startswith(b":")
            assert answer.headers["content-type"] == "text/event-stream; charset=utf-8"
            assert "cache-control" not in answer.headers
            assert "x-accel-buffering" not in answer.headers
        else:
            assert all(re.match(r"^(text|reasoning)-\d+$", i) for i in ids), (name, ids)
            expected = {"type": "start"}
            if continued is not None:
                expected["messageId"] = continued["id"]
            assert start == expected
            assert answer.body.startswith(b": stream-open\n\n")
            assert answer.headers["content-type"] == "text/event-stream"
            assert answer.headers["cache-control"] == "no-cache"
            assert answer.headers["x-accel-buffering"] == "no"
        assert answer.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert answer.body.endswith(b"data: [DONE]\n\n")


def test_invalid_arguments_are_announced_as_available_by_the_adapter_at_5(
    answers: dict[Key, Answer],
) -> None:
    """The chunk that ends the call's input: at ai 5 the adapter sends ``tool-input-available``
    (the state of a call whose input is valid) with its placeholder; chunkbridge sends the
    ``tool-input-error`` the AI SDK's own server sends, with the raw text, at every target."""
    for target in MAJORS:
        for side in SIDES:
            chunks = answers["invalid-tool-arguments", side, target].chunks
            (ending,) = [
                c
                for c in chunks
                if c.get("toolCallId") == "c10"
                and c["type"] in ("tool-input-available", "tool-input-error")
            ]
            if side == OURS:
                assert ending["type"] == "tool-input-error"
                assert ending["input"] == '{"city": "Par'
            else:
                expected = "tool-input-available" if target == 5 else "tool-input-error"
                assert ending["type"] == expected
                assert ending["input"] == {"INVALID_JSON": '{"city": "Par'}


def test_a_resumed_run_answers_the_decided_call_before_the_models_step(
    answers: dict[Key, Answer],
) -> None:
    """After the approval, both first give the decided call its output, then the model's text,
    in one new step (the AI SDK's own resumed ``streamText`` sends the output before its first
    ``start-step``, as the adapter does; chunkbridge inside the step, without re-announcing the
    call the continued message holds). The final messages are the same (above)."""
    for name, output in (("approval-approved", "available"), ("approval-denied", "denied")):
        for target in (6, 7):
            theirs = [c["type"] for c in answers[name, ADAPTER, target].chunks][:5]
            ours = [c["type"] for c in answers[name, OURS, target].chunks][:4]
            their_opening = ["start", "tool-input-available", f"tool-output-{output}"]
            if output == "denied":
                their_opening.remove("tool-input-available")
            assert theirs[: len(their_opening) + 2] == [*their_opening, "start-step", "text-start"]
            assert ours == ["start", "start-step", f"tool-output-{output}", "text-start"]


def test_a_run_that_fails_before_its_first_step(answers: dict[Key, Answer]) -> None:
    """No step was opened: the adapter still closes one (its ``after_stream`` always sends
    ``finish-step``); the clients stop at the ``error`` either way (spec §3)."""
    for target in MAJORS:
        theirs = [c["type"] for c in answers["error-before-output", ADAPTER, target].chunks]
        ours = [c["type"] for c in answers["error-before-output", OURS, target].chunks]
        assert theirs == ["start", "error", "finish-step", "finish"]
        assert ours == ["start", "error", "finish"]
        for side in SIDES:
            assert (
                answers["error-before-output", side, target].chunks[-1]["finishReason"] == "error"
            )


def test_the_adapter_refuses_a_tool_part_with_result_provider_metadata(
    real_clients: RealClients,
) -> None:
    """An ai 6 or 7 chat keeps an output chunk's ``providerMetadata`` as the part's
    ``resultProviderMetadata`` (spec §4.1). The adapter's request model forbids that key: the
    chat holding chunkbridge's search as ai 7 kept it, continued through the adapter, is
    refused with a 422. chunkbridge gives the search back with the return's own details."""
    body = then("and?", CHUNKBRIDGE_AT_7, first="search paris").body

    async def post(side: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=APP)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            return await client.post(f"/{side}/echo/7", json=body)

    theirs, ours = asyncio.run(post(ADAPTER)), asyncio.run(post(OURS))
    assert theirs.status_code == 422
    refused = [e for e in theirs.json() if e["loc"][-1] == "resultProviderMetadata"]
    assert refused and {e["type"] for e in refused} == {"extra_forbidden"}
    assert ours.status_code == 200
    verdict = real_clients.check(ours.content, majors=(7,))[7]
    assert verdict.ok, verdict.fatal
    returned = "response builtin-tool-return web_search ws_1 success"
    (line,) = [line for line in verdict.text().splitlines() if line.startswith(returned)]
    assert line.endswith("provider=function details={'sources': 1}")


def test_the_stored_form_is_the_adapters_own() -> None:
    """``ADAPTER_STORED`` (a history case above) is what the adapter's ``dump_messages`` keeps of
    the scripted search, as ``ADAPTER_STREAMED`` is what its stream leaves (``_native_tool``)."""

    async def kept() -> list[Any]:
        async with AGENTS["scripted"].run_stream_events("search paris") as events:
            async for _ in events:
                pass
            return events.all_messages()

    stored = VercelAIAdapter.dump_messages(asyncio.run(kept()))
    parts = [p.model_dump(by_alias=True, exclude_none=True) for m in stored for p in m.parts]
    (search,) = [p for p in parts if p["type"] == "tool-web_search"]
    assert search["callProviderMetadata"] == _search(ADAPTER_STORED)["callProviderMetadata"]
