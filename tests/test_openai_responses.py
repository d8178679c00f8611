"""openai-responses: the request built from the UIMessage history, what the recordings do not show,
and the live path in front of a fake Responses API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from chunkbridge.translators.dialects.openai_responses import DIALECT
from chunkbridge.translators.dialects.openai_responses.request import (
    OpenAIResponsesSettings,
    request_body,
)
from tests.gateway_harness import (
    RecordedRun,
    http_upstream,
    post,
    running_gateway,
    sse_response,
    user_body,
)
from tests.helpers import (
    chat_reply,
    decode_sse,
    new_turn,
    of_type,
    provider_turn,
    text_of,
    text_part,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openai-responses"


HISTORY = [
    {"id": "s0", "role": "system", "parts": [text_part("Answer in French.")]},
    {
        "id": "u0",
        "role": "user",
        "parts": [
            text_part("Describe these."),
            {"type": "file", "mediaType": "image/png", "url": "https://example.com/cat.png"},
            {
                "type": "file",
                "mediaType": "application/pdf",
                "url": "data:application/pdf;base64,JVBERi0=",
                "filename": "a.pdf",
            },
        ],
    },
    {
        "id": "a0",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "reasoning",
                "text": "Look first.",
                "providerMetadata": {
                    "openai": {"itemId": "rs_1", "reasoningEncryptedContent": "gAAA"}
                },
            },
            {
                "type": "reasoning",
                "text": "no encrypted content: not sent",
                "providerMetadata": {
                    "openai": {"itemId": "rs_2", "reasoningEncryptedContent": None}
                },
            },
            text_part("Let me check."),
            {
                "type": "tool-lookup",
                "toolCallId": "call_1",
                "state": "output-available",
                "input": {"q": "cat"},
                "output": {"hits": 2},
            },
            {
                "type": "tool-web_search",
                "toolCallId": "ws_1",
                "state": "output-available",
                "providerExecuted": True,
                "input": {},
                "output": {"action": {"type": "search"}},
            },
            {
                "type": "dynamic-tool",
                "toolName": "fail",
                "toolCallId": "call_2",
                "state": "output-error",
                "input": {},
                "errorText": "boom",
            },
            {"type": "step-start"},
            text_part("A cat."),
        ],
    },
    {"id": "u1", "role": "user", "parts": [text_part("Thanks!")]},
]


def test_the_request_carries_the_whole_history_as_input_items() -> None:
    body = request_body(
        provider_turn(OpenAIResponsesSettings, HISTORY, system="Be brief.", max_output_tokens=300)
    )
    assert body["model"] == "gpt-5-mini" and body["stream"] is True
    assert body["instructions"] == "Be brief.\n\nAnswer in French."
    assert body["max_output_tokens"] == 300
    assert body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Describe these."},
                {
                    "type": "input_image",
                    "image_url": "https://example.com/cat.png",
                    "detail": "auto",
                },
                {
                    "type": "input_file",
                    "file_data": "data:application/pdf;base64,JVBERi0=",
                    "filename": "a.pdf",
                },
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "encrypted_content": "gAAA",
            "summary": [{"type": "summary_text", "text": "Look first."}],
        },
        {"role": "assistant", "content": "Let me check."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "lookup",
            "arguments": '{"q":"cat"}',
        },
        # a search OpenAI ran goes back whole: the API may not have kept the response
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search"},
        },
        {"type": "function_call", "call_id": "call_2", "name": "fail", "arguments": "{}"},
        # the step's answers after its calls, a failure marked as one
        {"type": "function_call_output", "call_id": "call_1", "output": '{"hits":2}'},
        {"type": "function_call_output", "call_id": "call_2", "output": '{"error":"boom"}'},
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": [{"type": "input_text", "text": "Thanks!"}]},
    ]


def test_tools_options_overrides_and_headers() -> None:
    settings = {
        "api_key": "sk-live",
        "organization": "org-1",
        "tools": {
            "get_weather": {"description": "Weather", "input_schema": {"type": "object"}},
            "web": {"type": "web_search"},
        },
        "options": {"store": False, "include": ["reasoning.encrypted_content"]},
        "body_overrides": ["model"],
    }
    messages = [{"id": "u", "role": "user", "parts": [text_part("hi")]}]
    turn = provider_turn(OpenAIResponsesSettings, messages, {"model": "gpt-x"}, **settings)
    body = request_body(turn)
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "parameters": {"type": "object"},
            "description": "Weather",
        },
        {"type": "web_search"},
    ]
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["model"] == "gpt-x"  # allowed override from the request body
    assert DIALECT.http is not None
    request = DIALECT.http.request(turn)
    assert request.path == "/v1/responses"
    assert request.headers == {"authorization": "Bearer sk-live", "openai-organization": "org-1"}


def test_summary_parts_open_and_close_in_order_and_progress_events_say_nothing() -> None:
    turn = new_turn("openai-responses")
    item = {"id": "rs", "type": "reasoning", "summary": [], "encrypted_content": "E"}
    frames = [
        {"type": "response.created", "response": {"id": "r", "model": "m"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs",
            "summary_index": 0,
            "delta": "a",
        },
        {"type": "response.reasoning_summary_part.added", "item_id": "rs", "summary_index": 1},
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs",
            "summary_index": 1,
            "delta": "b",
        },
        {"type": "response.file_search_call.searching", "item_id": "x", "output_index": 1},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": "r", "usage": {"input_tokens": 1}}},
    ]
    chunks = [c for f in frames for c in turn.feed(f)]
    ends = of_type(chunks, "reasoning-end")
    assert [e["providerMetadata"]["openai"] for e in ends] == [
        {"itemId": "rs"},
        {"itemId": "rs", "reasoningEncryptedContent": "E"},
    ]
    assert not of_type(chunks, "data-response.file_search_call.searching")
    assert chunks[-1]["messageMetadata"]["usage"] == {"inputTokens": 1}


# -- live ----------------------------------------------------------------------------------------


class FakeResponses:
    def __init__(self, failures: list[int], recording: str = "function-call-streamed") -> None:
        self.failures = list(failures)
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.frames = (FIXTURES / f"{recording}.jsonl").read_text().splitlines()

    async def responses(self, request: Request) -> Response:
        self.requests.append(orjson.loads(await request.body()))
        self.auth.append(request.headers.get("authorization"))
        if self.failures:
            status = self.failures.pop(0)
            error = {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}
            return JSONResponse(error, status, {"retry-after": "0"})
        return sse_response([f.encode() for f in self.frames], 0.001)


@pytest.mark.asyncio
async def test_serves_a_turn_retrying_rate_limits(real_clients) -> None:
    fake = FakeResponses(failures=[429, 500])
    settings = {"api_key": "sk-live", "model": "gpt-test"}
    async with (
        http_upstream("/v1/responses", fake.responses) as base,
        running_gateway(
            upstream=base,
            dialect="openai-responses",
            dialect_settings={"openai-responses": settings},
        ) as (gw, _),
    ):
        response = await post(gw, "s", user_body("Weather in Paris?"))
    assert response.status_code == 200, response.text
    assert len(fake.requests) == 3 and fake.auth[-1] == "Bearer sk-live"
    assert fake.requests[-1]["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}
    ]
    chunks = decode_sse(response.content)
    assert text_of(chunks) == ""
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "tool-calls", major
        (call,) = verdict.parts("tool-get_weather")
        assert call["input"] == {"location": "Paris, France", "unit": "celsius"}, major


@pytest.mark.asyncio
async def test_a_refused_request_ends_with_openais_message() -> None:
    fake = FakeResponses(failures=[400])
    async with (
        http_upstream("/v1/responses", fake.responses) as base,
        running_gateway(upstream=base, dialect="openai-responses") as (gw, _),
    ):
        response = await post(gw, "s")
    chunks = decode_sse(response.content)
    assert of_type(chunks, "error")[0]["errorText"] == "rate_limit_exceeded: Rate limit reached"


def test_calls_the_app_runs_with_free_text_input_end_at_input_available() -> None:
    turn = new_turn("openai-responses")
    item = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_9", "name": "patch"}
    frames = [
        {"type": "response.created", "response": {"id": "r", "model": "m"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "input": ""}},
        {"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1", "delta": "*** Begin"},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "input": "*** Begin"},
        },
        {"type": "response.completed", "response": {"id": "r"}},
    ]
    chunks = [c for f in frames for c in turn.feed(f)]
    (available,) = of_type(chunks, "tool-input-available")
    assert available["input"] == "*** Begin" and "providerExecuted" not in available
    assert chunks[-1]["finishReason"] == "tool-calls"
    assert not [c for c in chunks if c["type"].startswith("data-")]


class FakeMcpProvider:
    """Asks to approve a remote MCP call; once answered, makes the call and says something."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    async def responses(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests.append(body)
        answered = any(i.get("type") == "mcp_approval_response" for i in body["input"])
        name = "mcp-call-after-approval" if answered else "mcp-approval-request"
        frames = (FIXTURES / f"{name}.jsonl").read_text().splitlines()
        return sse_response([f.encode() for f in frames], 0.001)


@pytest.mark.conformance
@pytest.mark.parametrize("major", [5, 7])
async def test_an_mcp_approval_round_trips_through_the_real_chat(real_clients, major: int) -> None:
    """OpenAI asks before calling a remote MCP tool; the chat approves; the next request carries
    the AI SDK's answer items and the call's output lands on the approved part."""
    fake = FakeMcpProvider()
    async with (
        http_upstream("/v1/responses", fake.responses) as base,
        running_gateway(upstream=base, dialect="openai-responses", target=major) as (gw, _),
    ):
        api = f"{gw}/api/sessions/mcp{major}/chat"
        answer = {"kind": "approval", "approved": True}
        result = await real_clients.chat_loop(api, major, "What does useChat do?", [answer])
    parts = chat_reply(result)["parts"]
    (tool,) = [p for p in parts if p.get("toolName") == "mcp.ask_question"]
    assert tool["state"] == "output-available" and tool["toolCallId"] == "mcpr_68c2a0b3"
    assert tool["output"]["output"] == "useChat manages chat state and streams UI messages."
    assert [p["text"] for p in parts if p["type"] == "text"] == [
        "It manages the chat state and streams messages."
    ]
    answer_items = [i for i in fake.requests[1]["input"] if i.get("type")]
    assert answer_items == [
        {"type": "item_reference", "id": "mcpr_68c2a0b3"},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_68c2a0b3", "approve": True},
    ]


def test_built_in_tools_the_app_ran_go_back_in_their_own_items_failures_included() -> None:
    tools = {"shell": {"type": "shell"}, "apply_patch": {"type": "apply_patch"}}
    tools["grammar"] = {"type": "custom", "description": "SQL in free text"}
    patch = {"type": "delete_file", "path": "old.txt"}
    parts = [
        {"type": "step-start"},
        {
            "type": "tool-shell",
            "toolCallId": "call_sh",
            "state": "output-error",
            "input": {"action": {"commands": ["rm -rf /tmp/x"], "timeoutMs": 500}},
            "errorText": "permission denied",
            "callProviderMetadata": {"openai": {"itemId": "sh_1"}},
        },
        {
            "type": "tool-apply_patch",
            "toolCallId": "call_ap",
            "state": "output-denied",
            "input": {"callId": "call_ap", "operation": patch},
        },
        {
            "type": "tool-grammar",
            "toolCallId": "call_g",
            "state": "output-available",
            "input": "SELECT 1",
            "output": "1 row",
        },
    ]
    messages = [
        {"id": "u0", "role": "user", "parts": [text_part("clean up")]},
        {"id": "a0", "role": "assistant", "parts": parts},
        {"id": "u1", "role": "user", "parts": [text_part("and now?")]},
    ]
    body = request_body(provider_turn(OpenAIResponsesSettings, messages, tools=tools))
    assert body["tools"][2] == {
        "type": "custom",
        "description": "SQL in free text",
        "name": "grammar",
    }
    failed = {
        "stdout": "",
        "stderr": "permission denied",
        "outcome": {"type": "exit", "exit_code": 1},
    }
    assert body["input"][1:-1] == [
        {
            "type": "shell_call",
            "call_id": "call_sh",
            "id": "sh_1",
            "status": "completed",
            "action": {"commands": ["rm -rf /tmp/x"], "timeout_ms": 500},
        },
        {
            "type": "apply_patch_call",
            "call_id": "call_ap",
            "status": "completed",
            "operation": patch,
        },
        {"type": "custom_tool_call", "call_id": "call_g", "name": "grammar", "input": "SELECT 1"},
        {"type": "shell_call_output", "call_id": "call_sh", "output": [failed]},
        {
            "type": "apply_patch_call_output",
            "call_id": "call_ap",
            "status": "failed",
            "output": "The user denied this tool call.",
        },
        {"type": "custom_tool_call_output", "call_id": "call_g", "output": "1 row"},
    ]


def _item_frames(*items: dict[str, Any]) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "r"}}]
    for index, item in enumerate(items):
        for event in ("response.output_item.added", "response.output_item.done"):
            frames.append({"type": event, "output_index": index, "item": item})
    return [*frames, {"type": "response.completed", "response": {"id": "r"}}]


PROGRAM = {"id": "cm_1", "type": "program", "call_id": "call_p", "code": "1", "fingerprint": "f"}
SHELL = {"id": "sh_1", "type": "shell_call", "call_id": "call_s", "action": {"commands": ["ls"]}}


@pytest.mark.parametrize(
    ("names", "program", "shell"),
    [({}, "program", "shell"), ({"program": "runner", "shell": "bash"}, "runner", "bash")],
)
def test_openais_tools_are_named_as_the_stream_names_them_unless_the_app_names_them(
    names: dict[str, str], program: str, shell: str
) -> None:
    settings = OpenAIResponsesSettings(tool_names=names)
    turn = new_turn("openai-responses", settings=settings)
    output = {"id": "cmo_1", "type": "program_output", "call_id": "call_p", "result": "2"}
    chunks = [c for f in _item_frames(PROGRAM, output, SHELL) for c in turn.feed(f)]
    calls = {c["toolCallId"]: c for c in of_type(chunks, "tool-input-available")}
    assert calls["call_p"]["toolName"] == program and calls["call_p"]["providerExecuted"]
    assert calls["call_s"]["toolName"] == shell and "providerExecuted" not in calls["call_s"]
    (result,) = of_type(chunks, "tool-output-available")
    assert result["toolCallId"] == "call_p" and result["output"]["result"] == "2"


def test_the_apps_names_for_openais_tools_go_back_as_openais_items() -> None:
    names = {"program": "runner", "shell": "bash"}
    parts = [
        {"type": "step-start"},
        {
            "type": "tool-runner",
            "toolCallId": "call_p",
            "state": "output-available",
            "providerExecuted": True,
            "input": {"code": "1", "fingerprint": "f"},
            "output": {"result": "2", "status": "completed"},
            "callProviderMetadata": {"openai": {"itemId": "cm_1"}},
        },
        {
            "type": "tool-bash",
            "toolCallId": "call_s",
            "state": "output-available",
            "input": {"action": {"commands": ["ls"]}},
            "output": {"output": [{"stdout": "a", "stderr": "", "outcome": {"type": "timeout"}}]},
            "callProviderMetadata": {"openai": {"itemId": "sh_1"}},
        },
    ]
    messages = [
        {"id": "u0", "role": "user", "parts": [text_part("count")]},
        {"id": "a0", "role": "assistant", "parts": parts},
        {"id": "u1", "role": "user", "parts": [text_part("and now?")]},
    ]
    tools = {"program": {"type": "programmatic_tool_calling"}, "shell": {"type": "shell"}}
    turn = provider_turn(OpenAIResponsesSettings, messages, tools=tools, tool_names=names)
    kinds = [item.get("type") for item in request_body(turn)["input"][1:-1]]
    assert kinds == ["program", "program_output", "shell_call", "shell_call_output"]


@pytest.mark.conformance
@pytest.mark.parametrize("major", [5, 7])
async def test_a_programs_output_lands_on_its_part_through_the_real_chat(
    real_clients, major: int
) -> None:
    """OpenAI's programmatic tool calling (a real run, recorded by the AI SDK project): the
    program calls the app's getInventory, then getDemand, one response each; its output comes
    in the response to the chat's second automatic continuation and lands on the program's
    part, which each continuation sent back still waiting."""
    run = FIXTURES.parent / "recorded" / "openai-responses"
    fake = RecordedRun(*(run / f"openai--programmatic-tool-calling.{n}.jsonl" for n in (1, 2, 3)))
    async with (
        http_upstream("/v1/responses", fake.respond) as base,
        running_gateway(upstream=base, dialect="openai-responses", target=major) as (gw, _),
    ):
        answers = [{"kind": "tool", "output": {"availableUnits": 42}}] * 2
        api = f"{gw}/api/sessions/program{major}/chat"
        result = await real_clients.chat_loop(api, major, "Enough stock?", answers, auto=True)
    parts = chat_reply(result)["parts"]
    (program,) = [p for p in parts if p["type"] == "tool-program"]
    assert program["state"] == "output-available" and program["providerExecuted"] is True
    assert program["output"]["status"] == "completed"
    assert [p["state"] for p in parts if p["type"] in ("tool-getInventory", "tool-getDemand")] == [
        "output-available",
        "output-available",
    ]
    assert len(fake.requests) == 3
    for sent in fake.requests[1:]:
        kinds = [i.get("type") for i in sent["input"]]
        assert kinds.count("program") == 1 and "program_output" not in kinds
