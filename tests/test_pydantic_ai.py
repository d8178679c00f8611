"""pydantic-ai: a real agent (``FunctionModel`` scripted per scenario, no network) streamed
in-process through the ``pydantic-ai`` dialect; its recordings are what the live agent emits now,
the live objects and their recordings give the same bytes, the real ai 5/6/7 chats take the
answers and send the conversation back through :func:`agent_input` — with the calls the model
provider ran, and with a chat that pydantic-ai's own ``VercelAIAdapter`` stored."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.ui.vercel_ai import VercelAIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chunkbridge import UIStreamResponse, parse_chat_request, ui_stream
from chunkbridge.gateway.devtools.library_recording import library_sse
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.translators.dialects.pydantic_ai import agent_input
from tests.gateway_harness import uvicorn_server
from tests.helpers import chat_reply, decode_sse, new_turn, of_type, to_sse, translate
from tests.library_runs import check_live_run
from tests.pydantic_ai_agents import AGENT, DEFERRING, MODEL, SCENARIOS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pydantic-ai"
DIALECT = "pydantic-ai"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_the_live_agent_is_its_recording_and_its_golden(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    update = bool(request.config.getoption("--update-goldens"))
    recording = FIXTURES / f"{name}.jsonl"
    await check_live_run(DIALECT, SCENARIOS[name].run, recording, tmp_path, update)


def test_what_the_goldens_show() -> None:
    def chunks(name: str) -> list[dict[str, Any]]:
        return decode_sse((FIXTURES / f"{name}.sse").read_bytes())

    step = [c["type"] for c in chunks("reasoning-and-tool") if c["type"].endswith("-step")]
    assert step == ["start-step", "finish-step", "start-step", "finish-step"]  # two responses
    (reasoning_end,) = of_type(chunks("reasoning-and-tool"), "reasoning-end")
    assert reasoning_end["providerMetadata"] == {
        "pydanticAi": {"signature": "sig-1", "providerName": "function"}
    }
    (retry,) = of_type(chunks("tool-retry"), "tool-output-error")
    assert retry == {
        "type": "tool-output-error",
        "toolCallId": "c8",
        "errorText": "no entry 'a'; try 'b'",
    }
    assert of_type(chunks("model-error-mid-text"), "error") == [
        {"type": "error", "errorText": "the model is down"}
    ]
    assert of_type(chunks("tool-exception"), "error")[0]["errorText"] == "the tool blew up"
    assert chunks("deferred-call")[-1]["finishReason"] == "tool-calls"
    assert [c["data"] for c in of_type(chunks("custom-events"), "data-crunch_progress")] == [
        {"done": 1, "total": 2},
        {"done": 2, "total": 2},
    ]
    (searched,) = of_type(chunks("native-tool"), "tool-input-available")
    assert searched["providerExecuted"] is True
    assert searched["providerMetadata"] == {
        "pydanticAi": {
            "id": "ws_1",
            "providerName": "function",
            "providerDetails": {"status": "completed"},
        }
    }
    (found,) = of_type(chunks("native-tool"), "tool-output-available")
    assert "providerMetadata" not in found  # the golden is for ai 5: no metadata on an output
    finish = chunks("plain-text")[-1]
    assert finish["messageMetadata"] == {
        "model": "scripted",
        "usage": {"inputTokens": 50, "outputTokens": 4},
    }


def test_unknown_and_malformed_events_follow_the_policy() -> None:
    turn = new_turn(DIALECT)
    out = turn.feed({"event_kind": "part_start", "index": 0, "part": {"part_kind": "text"}})
    out += turn.feed({"event_kind": "part_start", "index": 1, "part": {"part_kind": "speech"}})
    out += turn.feed({"event_kind": "brand_new", "x": 1})
    out += turn.feed({"no": "kind"})
    out += turn.feed(
        {
            "event_kind": "part_start",
            "index": 2,
            "part": {"part_kind": "tool-call", "tool_call_id": 5},
        }
    )
    out += turn.feed({"chunkbridge": "end"})
    kinds = [c["type"] for c in out]
    assert "data-part-speech" in kinds and "data-brand_new" in kinds
    malformed = of_type(out, "data-upstream-malformed")
    assert [m["data"]["reason"] for m in malformed] == [
        "not an event of this library",
        "part_start: 'tool_call_id' must be a string",
    ]
    assert kinds[-1] == "finish" and turn.finish_reason == "stop"


@pytest.mark.conformance
def test_a_native_return_carries_only_what_differs_from_its_call(real_clients: Any) -> None:
    """What a native call and its return share rides on the call's ``tool-input-available``
    (every major keeps it); the return's output chunk says only where it differs (ai 6 and 7
    keep that), ``null`` where the return lacks what its call has. Each major's client takes
    its answer and keeps the call's metadata on the part."""

    def search(call_id: str, **returned: Any) -> list[dict[str, Any]]:
        call = {
            "part_kind": "builtin-tool-call",
            "tool_name": "code_execution",
            "tool_call_id": call_id,
            "args": {"code": "1+1"},
            "provider_name": "anthropic",
            "provider_details": {"tool": "bash"},
        }
        answer = {
            "part_kind": "builtin-tool-return",
            "tool_name": "code_execution",
            "tool_call_id": call_id,
            "content": "2",
            "outcome": "success",
            **returned,
        }
        return [
            {"event_kind": "part_start", "index": 0, "part": call},
            {"event_kind": "part_end", "index": 0, "part": call},
            {"event_kind": "part_start", "index": 1, "part": answer},
        ]

    same = {"provider_name": "anthropic", "provider_details": {"tool": "bash"}}
    events = [
        *search("x1", **same),
        *search("x2", provider_name="anthropic"),
        *search("x3", **{**same, "provider_name": "other", "tool_kind": "tool-search"}),
    ]
    call_meta = {"pydanticAi": {"providerName": "anthropic", "providerDetails": {"tool": "bash"}}}
    results = [
        None,
        {"pydanticAi": {"providerDetails": None}},
        {"pydanticAi": {"providerName": "other", "toolKind": "tool-search"}},
    ]
    bodies = []
    for target in (5, 6, 7):
        chunks, _ = translate(DIALECT, events, target=target)
        calls = of_type(chunks, "tool-input-available")
        assert [c["providerMetadata"] for c in calls] == [call_meta] * 3
        outputs = of_type(chunks, "tool-output-available")
        assert all(o["providerExecuted"] is True for o in outputs)
        kept = [o.get("providerMetadata") for o in outputs]
        assert kept == ([None] * 3 if target == 5 else results)  # ai 5 declares none there
        bodies.append(to_sse(chunks))
    for target, body in zip((5, 6, 7), bodies, strict=True):
        verdict = real_clients.check(body, majors=(target,))[target]
        assert verdict.ok, verdict.fatal
        parts = verdict.parts("tool-code_execution")
        assert [p["callProviderMetadata"] for p in parts] == [call_meta] * 3
        kept = [p.get("resultProviderMetadata") for p in parts]
        assert kept == ([None] * 3 if target == 5 else results)


def test_a_run_that_raised_before_any_event_ends_with_its_error() -> None:
    turn = new_turn(DIALECT)
    out = turn.feed({"chunkbridge": "error", "error": "ModelHTTPError", "message": ""})
    assert [c["type"] for c in out] == ["start", "error", "finish"]
    assert out[1]["errorText"] == "ModelHTTPError"


# -- the request side: the chat's history as the agent's ---------------------------------------


def _fields(part: Any) -> dict[str, Any]:
    """Every field of a part but its time."""
    fields = dataclasses.fields(part)
    return {f.name: getattr(part, f.name) for f in fields if f.name != "timestamp"}


def _shape(messages: list[ModelMessage]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """What a model sees of a history: each message's kind and its parts' contents (a native
    call or return: every field, which pydantic-ai sends back to the provider that ran it)."""
    out = []
    for message in messages:
        parts = []
        for part in message.parts:
            kind = part.part_kind
            if kind in ("builtin-tool-call", "builtin-tool-return"):
                parts.append((kind, _fields(part)))
            elif kind in ("tool-call",):
                parts.append((kind, part.tool_name, part.args_as_dict(), part.tool_call_id))
            elif kind == "tool-return":
                # The UI has one error state: a retried call comes back as a failed one (both
                # reach the model as an error).
                outcome = "failed" if part.outcome == "retried" else part.outcome
                parts.append((kind, part.tool_name, part.content, part.tool_call_id, outcome))
            elif kind == "thinking":
                parts.append((kind, part.content, part.signature, part.id, part.provider_name))
            else:
                parts.append((kind, part.content))
        out.append((message.kind, parts))
    return out


@pytest.mark.conformance
@pytest.mark.parametrize(
    "name", ["reasoning-and-tool", "parallel-tools", "tool-retry", "native-tool"]
)
async def test_the_ui_history_is_the_agents_own_history(real_clients: Any, name: str) -> None:
    """The message the real ai 7 chat built of the answer (for target 7), sent back, becomes
    the history the agent itself kept of that run."""
    scenario = SCENARIOS[name]
    async with scenario.run() as events:
        async for _ in events:
            pass
        kept = events.all_messages()
    body = await library_sse(DIALECT, scenario.run(), target=7)
    message = real_clients.check(body, majors=(7,))[7].message
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": scenario.prompt}]}
    request = ChatRequest.model_validate({"id": "c", "messages": [user, {**message, "id": "a1"}]})
    assert _shape(agent_input(request).message_history) == _shape(kept)


def _user(text: str, message_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


async def _next_run_sees(chat: ChatRequest) -> list[ModelMessage]:
    """What the model is given when the agent runs on the chat's history (``agent_input``)."""
    received: list[list[ModelMessage]] = []
    scripted = MODEL.stream_function
    assert scripted is not None

    async def listening(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        received.append(list(messages))
        async for item in scripted(messages, info):
            yield item

    agent = Agent(FunctionModel(stream_function=listening, model_name="scripted"))
    async with agent.run_stream_events(message_history=agent_input(chat).message_history) as run:
        async for _ in run:
            pass
    assert len(received) == 1
    return received[0]


async def _kept(*prompts: str) -> list[ModelMessage]:
    """The history the scripted agent itself keeps of one run per prompt."""
    kept: list[ModelMessage] = []
    for prompt in prompts:
        async with AGENT.run_stream_events(prompt, message_history=kept) as events:
            async for _ in events:
                pass
            kept = events.all_messages()
    return kept


def _natives(messages: list[ModelMessage]) -> list[Any]:
    return [p for m in messages for p in m.parts if p.part_kind.startswith("builtin-tool-")]


@pytest.mark.conformance
@pytest.mark.parametrize("major", [5, 6, 7])
async def test_the_next_run_gets_the_providers_own_call_and_return(
    real_clients: Any, major: int
) -> None:
    """The model provider ran a web search in the first run. The message the real chat of
    ``major`` built of the answer, sent back with a new question, gives the next run's model
    the search's call and return as the agent kept them — the call's item id, the provider's
    name and details — for pydantic-ai to send them back to that provider. ai 5 keeps no
    metadata of an output (spec §4.1): there the return has its call's fields, and so its
    call's details rather than its own."""
    scenario = SCENARIOS["native-tool"]
    kept = await _kept(scenario.prompt)
    body = await library_sse(DIALECT, scenario.run(), target=major)
    verdict = real_clients.check(body, majors=(major,))[major]
    assert verdict.ok, verdict.fatal
    (tool,) = verdict.parts("tool-web_search")
    assert tool["providerExecuted"] is True and tool["state"] == "output-available"
    assert tool["callProviderMetadata"] == {
        "pydanticAi": {
            "id": "ws_1",
            "providerName": "function",
            "providerDetails": {"status": "completed"},
        }
    }
    assert tool.get("resultProviderMetadata") == (
        None if major == 5 else {"pydanticAi": {"providerDetails": {"sources": 1}}}
    )
    assert verdict.message is not None
    answer = {**verdict.message, "id": "a1"}
    messages = [_user(scenario.prompt, "u1"), answer, _user("and?", "u2")]
    seen = await _next_run_sees(ChatRequest.model_validate({"id": "c", "messages": messages}))
    request, response, question = seen
    assert _shape([request]) == _shape(kept[:1])
    assert [p.content for p in question.parts] == ["and?"]
    assert [p.part_kind for p in response.parts] == [p.part_kind for p in kept[1].parts]
    call, returned, text = response.parts
    kept_call, kept_return, kept_text = kept[1].parts
    assert _fields(call) == _fields(kept_call)
    lost = {"provider_details": {"status": "completed"}} if major == 5 else {}
    assert _fields(returned) == {**_fields(kept_return), **lost}
    assert text.content == kept_text.content == "Found it."


async def test_a_chat_the_adapter_stored_goes_on_with_its_signatures_and_native_calls() -> None:
    """A chat an app stored through pydantic-ai's ``VercelAIAdapter`` (``dump_messages``: its
    ``providerMetadata.pydantic_ai`` form, snake_case, a native call's and return's fields
    under ``call_meta``/``return_meta``), continued through chunkbridge: the model gets the
    thinking with its signature and the provider's search with its fields, as the agent kept
    them."""
    kept = await _kept("weather in Paris?", "search paris")
    stored = [
        m.model_dump(mode="json", by_alias=True, exclude_none=True)
        for m in VercelAIAdapter.dump_messages(kept)
    ]
    reasoning = next(p for m in stored for p in m["parts"] if p["type"] == "reasoning")
    assert reasoning["providerMetadata"] == {
        "pydantic_ai": {"signature": "sig-1", "provider_name": "function"}
    }
    chat = ChatRequest.model_validate({"id": "c", "messages": [*stored, _user("and?", "u3")]})
    seen = await _next_run_sees(chat)
    assert _shape(seen[:-1]) == _shape(kept)
    (thinking,) = [p for m in seen for p in m.parts if p.part_kind == "thinking"]
    assert (thinking.signature, thinking.provider_name) == ("sig-1", "function")
    assert [_fields(p) for p in _natives(seen)] == [_fields(p) for p in _natives(kept)]


def test_the_fields_the_client_sent_back_are_checked_before_the_model_gets_them() -> None:
    """``providerMetadata`` comes from the client: a field of the wrong type, a typed-part kind
    pydantic-ai does not define, an adapter's ``call_meta`` that is no object are left out,
    never a crash and never sent to the provider."""

    def search(call_id: str, call_meta: Any, **more: Any) -> dict[str, Any]:
        return {
            "type": "tool-web_search",
            "toolCallId": call_id,
            "state": "output-available",
            "input": {"query": "paris"},
            "output": ["a"],
            "providerExecuted": True,
            "callProviderMetadata": call_meta,
            **more,
        }

    bad = {"id": 5, "providerName": ["x"], "providerDetails": "x", "toolKind": "no-such-kind"}
    theirs = {"call_meta": "x", "return_meta": {"provider_name": 1}, "provider_name": "openai"}
    parts = [
        {"type": "reasoning", "text": "hm", "providerMetadata": {"pydantic_ai": {"signature": 1}}},
        search("ws_1", {"pydanticAi": bad}, resultProviderMetadata={"pydanticAi": "x"}),
        search("ws_2", {"pydantic_ai": theirs}),
        search("ws_3", "not metadata"),
    ]
    messages = [_user("search", "u1"), {"id": "a1", "role": "assistant", "parts": parts}]
    chat = ChatRequest.model_validate({"id": "c", "messages": messages})
    (_, response) = agent_input(chat).message_history
    thinking, *natives = response.parts
    assert (thinking.signature, thinking.id, thinking.provider_name) == (None, None, None)
    seen = [
        (p.part_kind, p.tool_call_id, getattr(p, "id", None), p.provider_name)
        + (p.provider_details, p.tool_kind)
        for p in natives
    ]
    assert seen == [
        ("builtin-tool-call", "ws_1", None, None, None, None),
        ("builtin-tool-return", "ws_1", None, None, None, None),
        ("builtin-tool-call", "ws_2", None, "openai", None, None),
        ("builtin-tool-return", "ws_2", None, None, None, None),
        ("builtin-tool-call", "ws_3", None, None, None, None),
        ("builtin-tool-return", "ws_3", None, None, None, None),
    ]
    assert [p.content for p in natives[1::2]] == [["a"]] * 3


@pytest.mark.conformance
@pytest.mark.parametrize("approved", [True, False])
async def test_a_resumed_run_opens_no_empty_step(real_clients: Any, approved: bool) -> None:
    """The run resumed with the app's decision first answers the call the history holds (its
    output updates a part of the earlier step), then calls the model: one step, as the AI SDK's
    own resumed ``streamText`` shows it — not a step with only that output, which the chat shows
    as an empty step (two ``step-start`` parts in a row)."""
    decision = {"id": "c4", "approved": approved, **({} if approved else {"reason": "not now"})}
    assistant = {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "text", "text": "Deleting needs your approval.", "state": "done"},
            {
                "type": "tool-delete_file",
                "toolCallId": "c4",
                "state": "approval-responded",
                "input": {"path": "/tmp/x"},
                "approval": decision,
            },
        ],
    }
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "delete /tmp/x"}]}
    chat = ChatRequest.model_validate(
        {"id": "c", "messages": [user, assistant], "trigger": "submit-message"}
    )
    run = agent_input(chat)
    events = DEFERRING.run_stream_events(
        message_history=run.message_history, deferred_tool_results=run.deferred_tool_results
    )
    stream = ui_stream(events, dialect=DIALECT, target=7, request=chat)
    body = b"".join([piece async for piece in stream])
    output = "tool-output-available" if approved else "tool-output-denied"
    opening = ["start", "start-step", output, "text-start"]
    assert [c["type"] for c in decode_sse(body)][:4] == opening
    verdict = real_clients.check(body, majors=(7,), message=assistant)[7]
    assert verdict.ok, verdict.fatal
    kinds = [p["type"] for p in verdict.message["parts"]]
    assert kinds == ["step-start", "text", "tool-delete_file", "step-start", "text"]


async def _chat(request: Request) -> Response:
    """A host app's route, the way docs/dialects/agent-libraries.md tells it: the chat's history
    in, the agent's events out as the chat's answer (continuing the message a continuation
    continues)."""
    chat = parse_chat_request(await request.body())
    run = agent_input(chat)
    events = DEFERRING.run_stream_events(
        message_history=run.message_history, deferred_tool_results=run.deferred_tool_results
    )
    major = int(request.path_params["major"])
    return UIStreamResponse(events, dialect=DIALECT, target=major, request=chat)


@contextlib.asynccontextmanager
async def chat_app() -> AsyncIterator[str]:
    app = Starlette(routes=[Route("/chat/{major:int}", _chat, methods=["POST"])])
    async with uvicorn_server(app) as base:
        yield base


@pytest.mark.conformance
@pytest.mark.parametrize(("major", "approved"), [(5, True), (6, False), (7, True)])
async def test_an_approval_round_trips_through_the_real_chat(
    real_clients: Any, major: int, approved: bool
) -> None:
    """The run stops for an approval; the chat approves or denies it (ai 5: the question
    form); the next request's ``deferred_tool_results`` carry the decision and the agent goes on
    in the same message."""
    async with chat_app() as base:
        answer = {"kind": "approval", "approved": approved, "reason": "not now"}
        result = await real_clients.chat_loop(
            f"{base}/chat/{major}", major, "delete /tmp/x", [answer]
        )
    parts = chat_reply(result)["parts"]
    (tool,) = [p for p in parts if p["type"] == "tool-delete_file"]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts[0] == "Deleting needs your approval."
    if approved:
        assert tool["state"] == "output-available" and tool["output"] == "deleted /tmp/x"
        assert texts[-1] == "Done: deleted /tmp/x."
    else:
        assert tool["state"] == "output-denied", tool
        assert texts[-1] == "Done: not now."  # the model heard the denial and went on
    second = result["requests"][1]
    assert second["messageId"] == result["messages"][1]["id"]
