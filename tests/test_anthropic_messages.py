"""anthropic-messages: the request built from the UIMessage history, the translation of what the
recordings do not show, and the live path in front of a fake Anthropic API and mock-upstream."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from chunkbridge.kit import RequestRejected
from chunkbridge.translators.dialects.anthropic_messages import DIALECT
from chunkbridge.translators.dialects.anthropic_messages.request import (
    AnthropicSettings,
    request_body,
)
from tests.gateway_harness import (
    RecordedRun,
    http_upstream,
    post,
    running_gateway,
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
    translate,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "anthropic-messages"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


def user(*parts: dict[str, Any], id: str = "u1") -> dict[str, Any]:
    return {"id": id, "role": "user", "parts": list(parts)}


HISTORY = [
    {"id": "s0", "role": "system", "parts": [text_part("Answer in French.")]},
    user(
        text_part("What is in this picture and this PDF?"),
        {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{PNG}"},
        {"type": "file", "mediaType": "application/pdf", "url": "https://example.com/a.pdf"},
        {"type": "file", "mediaType": "text/plain", "url": "data:text/plain,hello%20notes"},
        id="u0",
    ),
    {
        "id": "a0",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "reasoning",
                "text": "Look at both.",
                "providerMetadata": {"anthropic": {"signature": "sig-1"}},
            },
            {
                "type": "reasoning",
                "text": "",
                "providerMetadata": {"anthropic": {"redactedData": "R"}},
            },
            {"type": "reasoning", "text": "unsigned thoughts are not sent"},
            text_part("Let me look it up."),
            {
                "type": "tool-lookup",
                "toolCallId": "toolu_1",
                "state": "output-available",
                "input": {"q": "cat"},
                "output": {"hits": 2},
            },
            {
                "type": "tool-fail",
                "toolCallId": "toolu_2",
                "state": "output-error",
                "input": {},
                "errorText": "boom",
            },
            {
                "type": "tool-pending",
                "toolCallId": "toolu_3",
                "state": "input-available",
                "input": {},
            },
            {"type": "step-start"},
            {
                "type": "tool-web_search",
                "toolCallId": "srvtoolu_1",
                "state": "output-available",
                "providerExecuted": True,
                "input": {"query": "cats"},
                "output": [
                    {
                        "url": "https://cats.example",
                        "title": "Cats",
                        "pageAge": None,
                        "encryptedContent": "E",
                        "type": "web_search_result",
                    }
                ],
            },
            {"type": "source-url", "sourceId": "x", "url": "https://cats.example"},
            text_part("A cat."),
        ],
    },
    user(text_part("Thanks! And now?"), id="u1"),
]


def test_the_request_carries_the_whole_history_in_anthropic_form() -> None:
    body = request_body(
        provider_turn(
            AnthropicSettings,
            HISTORY,
            {"temperature": 0.1},
            system="Be brief.",
            max_output_tokens=512,
        )
    )
    assert body["model"] == "claude-sonnet-4-5" and body["max_tokens"] == 512
    assert body["stream"] is True and body["system"] == "Be brief.\n\nAnswer in French."
    assert "temperature" not in body  # not allowed by body_overrides
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture and this PDF?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
                {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "hello notes"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Look at both.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "R"},
                {"type": "text", "text": "Let me look it up."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "cat"}},
                {"type": "tool_use", "id": "toolu_2", "name": "fail", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"hits":2}'},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "boom",
                    "is_error": True,
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {"query": "cats"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": [
                        {
                            "type": "web_search_result",
                            "url": "https://cats.example",
                            "title": "Cats",
                            "encrypted_content": "E",
                            "page_age": None,
                        }
                    ],
                },
                {"type": "text", "text": "A cat."},
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "Thanks! And now?"}]},
    ]


def test_tools_options_and_allowed_overrides() -> None:
    settings = {
        "tools": {
            "get_weather": {
                "description": "Weather by city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
            "web_search": {"type": "web_search_20250305", "max_uses": 3},
        },
        "options": {"thinking": {"type": "enabled", "budget_tokens": 2048}, "temperature": 1},
        "body_overrides": ["temperature", "stream"],
    }
    body = request_body(
        provider_turn(AnthropicSettings, [user(text_part("hi"))], {"temperature": 0.1}, **settings)
    )
    assert body["tools"] == [
        {
            "name": "get_weather",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            "description": "Weather by city",
        },
        {"name": "web_search", "type": "web_search_20250305", "max_uses": 3},
    ]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["temperature"] == 0.1  # from the request body: allowed
    assert body["stream"] is True  # never from the body


def test_headers_carry_the_key_the_version_and_betas() -> None:
    turn = provider_turn(
        AnthropicSettings, [user(text_part("hi"))], api_key="sk-ant-test", beta=["a-2025", "b-2025"]
    )
    assert DIALECT.http is not None
    request = DIALECT.http.request(turn)
    assert request.path == "/v1/messages"
    assert request.headers == {
        "anthropic-version": "2023-06-01",
        "x-api-key": "sk-ant-test",
        "anthropic-beta": "a-2025,b-2025",
    }


@pytest.mark.parametrize(
    ("part", "why"),
    [
        ({"type": "file", "mediaType": "audio/wav", "url": "data:audio/wav;base64,AAAA"}, "audio"),
        ({"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,!!"}, "base64"),
    ],
)
def test_files_anthropic_cannot_take_are_refused_before_streaming(part: dict, why: str) -> None:
    with pytest.raises(RequestRejected) as raised:
        request_body(provider_turn(AnthropicSettings, [user(text_part("x"), part)]))
    assert why in raised.value.client_message


def test_error_frame_keeps_anthropics_message() -> None:
    assert DIALECT.http is not None and DIALECT.http.error_frame is not None
    body = (
        b'{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}'
    )
    frame = orjson.loads(DIALECT.http.error_frame(400, body) or "")
    assert frame == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "prompt is too long"},
    }
    generic = orjson.loads(DIALECT.http.error_frame(418, b"<html>") or "")
    assert "418" in generic["error"]["message"]
    assert 529 in DIALECT.http.retry_statuses and 429 in DIALECT.http.retry_statuses


def test_a_signature_split_over_deltas_and_pings_mid_block() -> None:
    turn = new_turn("anthropic-messages")
    frames = [
        {"type": "message_start", "message": {"id": "m", "model": "c", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "t"},
        },
        {"type": "ping"},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "ab"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "cd"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
    ]
    chunks = [c for f in frames for c in turn.feed(f)]
    end = of_type(chunks, "reasoning-end")[0]
    assert end["providerMetadata"] == {"anthropic": {"signature": "abcd"}}
    assert chunks[-1]["finishReason"] == "tool-calls"
    assert chunks[-1]["messageMetadata"]["stopReason"] == "tool_use"
    assert turn.translator.stats["ping"] == 1


def test_a_tool_delta_for_a_text_block_is_malformed_not_a_crash() -> None:
    turn = new_turn("anthropic-messages")
    frames = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{"},
        },
        {"type": "content_block_delta", "index": "0", "delta": {"type": "text_delta", "text": "x"}},
    ]
    chunks = [c for f in frames for c in turn.feed(f)]
    assert [
        c["data"]["reason"].split(":")[0] for c in of_type(chunks, "data-upstream-malformed")
    ] == [
        "content_block_delta",
        "content_block_delta",
    ]


# -- live ----------------------------------------------------------------------------------------


class FakeAnthropic:
    """``POST /v1/messages``: fails with the given statuses first, then streams a recording."""

    def __init__(self, failures: list[int], recording: str = "thinking-then-text") -> None:
        self.failures = list(failures)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.frames = (FIXTURES / f"{recording}.jsonl").read_text().splitlines()

    async def messages(self, request: Request) -> Response:
        self.requests.append(orjson.loads(await request.body()))
        self.headers.append(dict(request.headers))
        if self.failures:
            status = self.failures.pop(0)
            error = {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            }
            return JSONResponse(error, status, {"retry-after": "0"})
        # "event:" lines before the data, as Anthropic sends them (only the data is read).
        body = b"".join(
            b"event: %s\ndata: %s\n\n" % (orjson.loads(f)["type"].encode(), f.encode())
            for f in self.frames
        )
        return Response(body, media_type="text/event-stream")


@pytest.mark.asyncio
async def test_serves_a_turn_with_history_retrying_overloaded(real_clients) -> None:
    fake = FakeAnthropic(failures=[529, 429])
    settings = {"api_key": "sk-ant-live", "model": "claude-test"}
    async with (
        http_upstream("/v1/messages", fake.messages) as base,
        running_gateway(
            upstream=base,
            dialect="anthropic-messages",
            dialect_settings={"anthropic-messages": settings},
        ) as (gw, _),
    ):
        body = user_body("second question")
        body["messages"] = [*HISTORY[1:3], *body["messages"]]
        response = await post(gw, "s", body)
    assert response.status_code == 200, response.text
    assert len(fake.requests) == 3
    assert fake.headers[-1]["x-api-key"] == "sk-ant-live"
    assert fake.headers[-1]["anthropic-version"] == "2023-06-01"
    sent = fake.requests[-1]
    assert sent["model"] == "claude-test" and sent["messages"][-1]["content"] == [
        {"type": "text", "text": "second question"}
    ]
    chunks = decode_sse(response.content)
    assert text_of(chunks) == "27 × 453 = **12,231**."
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", major
        reasoning = verdict.parts("reasoning")[0]
        assert reasoning["providerMetadata"]["anthropic"]["signature"].startswith("EqQB"), major


@pytest.mark.asyncio
async def test_a_refused_request_ends_with_anthropics_message() -> None:
    fake = FakeAnthropic(failures=[400])
    async with (
        http_upstream("/v1/messages", fake.messages) as base,
        running_gateway(upstream=base, dialect="anthropic-messages") as (gw, _),
    ):
        response = await post(gw, "s")
    chunks = decode_sse(response.content)
    assert of_type(chunks, "error")[0]["errorText"] == "overloaded_error: Overloaded"
    assert len(fake.requests) == 1


@pytest.mark.parametrize("pieces", [["{", '"command": "ls"}'], [" ", '{"command"', ': "ls"}'], []])
def test_code_execution_shows_as_the_declared_tool_with_its_type_however_the_input_splits(
    pieces: list[str],
) -> None:
    turn = new_turn("anthropic-messages")
    block = {"type": "server_tool_use", "id": "srv_1", "name": "bash_code_execution", "input": {}}
    frames: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "model": "c", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
            for piece in pieces
        ),
        {"type": "content_block_stop", "index": 0},
    ]
    chunks = [c for f in frames for c in turn.feed(f)]
    (call,) = of_type(chunks, "tool-input-available")
    assert call["toolName"] == "code_execution" and call["providerExecuted"] is True
    expected = {"type": "bash_code_execution", **({"command": "ls"} if pieces else {})}
    assert call["input"] == expected
    assert not of_type(chunks, "tool-input-error")


def test_code_execution_goes_back_under_the_apis_own_name() -> None:
    part = {
        "type": "tool-code_execution",
        "toolCallId": "srv_1",
        "state": "output-available",
        "providerExecuted": True,
        "input": {"type": "bash_code_execution", "command": "ls"},
        "output": {"type": "bash_code_execution_result", "stdout": "a\n"},
    }
    messages = [
        user({"type": "text", "text": "run ls"}),
        {"id": "a1", "role": "assistant", "parts": [{"type": "step-start"}, part]},
        user({"type": "text", "text": "thanks"}, id="u2"),
    ]
    body = request_body(provider_turn(AnthropicSettings, messages))
    use, result = body["messages"][1]["content"]
    assert use == {
        "type": "server_tool_use",
        "id": "srv_1",
        "name": "bash_code_execution",
        "input": {"command": "ls"},
    }
    assert result["type"] == "bash_code_execution_tool_result"


def test_a_tool_input_with_an_integer_beyond_64_bits_is_no_internal_error() -> None:
    """JSON allows any integer; orjson writes none beyond 64 bits (found by the property
    test): the call's input is kept, written by the standard library."""
    big = -9_223_372_036_854_775_809
    block = {"type": "tool_use", "id": "p1", "name": "f", "input": {"n": big}}
    out, turn = translate(
        "anthropic-messages",
        [{"type": "content_block_start", "index": 0, "content_block": block}],
        close=False,
    )
    assert turn.internal_error is None, turn.internal_error
    assert [c["type"] for c in out if c["type"].startswith("tool-")][0] == "tool-input-start"


def _tool_search_frames(name: str, tool_input: dict[str, Any]) -> list[dict[str, Any]]:
    block = {"type": "server_tool_use", "id": "srv_1", "name": name, "input": tool_input}
    return [
        {"type": "message_start", "message": {"id": "m", "model": "c", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_stop", "index": 0},
    ]


@pytest.mark.parametrize(
    ("names", "shown"),
    [({}, "tool_search_tool_regex"), ({"tool_search_tool_regex": "toolSearch"}, "toolSearch")],
)
def test_a_server_tool_is_named_as_anthropic_streams_it_unless_the_app_names_it(
    names: dict[str, str], shown: str
) -> None:
    settings = AnthropicSettings(tool_names=names)
    frames = _tool_search_frames("tool_search_tool_regex", {"pattern": "weather"})
    chunks, _ = translate("anthropic-messages", frames, close=False, settings=settings)
    (call,) = of_type(chunks, "tool-input-available")
    assert call["toolName"] == shown and call["providerExecuted"] is True


@pytest.mark.parametrize(
    ("tool_input", "api_name"),
    [
        ({"pattern": "weather"}, "tool_search_tool_regex"),
        ({"query": "weather"}, "tool_search_tool_bm25"),
    ],
)
def test_the_apps_name_for_a_server_tool_goes_back_as_anthropics(
    tool_input: dict[str, Any], api_name: str
) -> None:
    """Both tool searches under the app's one name: the input tells which one it was."""
    names = {"tool_search_tool_regex": "toolSearch", "tool_search_tool_bm25": "toolSearch"}
    part = {
        "type": "tool-toolSearch",
        "toolCallId": "srv_1",
        "state": "output-available",
        "providerExecuted": True,
        "input": tool_input,
        "output": [{"type": "tool_reference", "toolName": "get_weather"}],
    }
    messages = [
        user(text_part("weather?")),
        {"id": "a1", "role": "assistant", "parts": [{"type": "step-start"}, part]},
        user(text_part("thanks"), id="u2"),
    ]
    body = request_body(provider_turn(AnthropicSettings, messages, tool_names=names))
    use, result = body["messages"][1]["content"]
    assert use == {"type": "server_tool_use", "id": "srv_1", "name": api_name, "input": tool_input}
    assert result["type"] == "tool_search_tool_result"
    assert result["content"]["tool_references"] == [
        {"type": "tool_reference", "tool_name": "get_weather"}
    ]


def test_code_executions_own_code_is_a_programmatic_call_both_ways() -> None:
    """The kind the AI SDK's input schema for code execution names: its own code (which may
    call the app's tools) is ``programmatic-tool-call``, and goes back as Anthropic sent it."""
    frames = _tool_search_frames("code_execution", {"code": "print(1)"})
    chunks, _ = translate("anthropic-messages", frames, close=False)
    (call,) = of_type(chunks, "tool-input-available")
    assert call["toolName"] == "code_execution"
    assert call["input"] == {"type": "programmatic-tool-call", "code": "print(1)"}
    part = {
        "type": "tool-code_execution",
        "toolCallId": "srv_1",
        "state": "input-available",
        "providerExecuted": True,
        "input": call["input"],
    }
    messages = [
        user(text_part("roll")),
        {"id": "a1", "role": "assistant", "parts": [{"type": "step-start"}, part]},
    ]
    body = request_body(provider_turn(AnthropicSettings, messages))
    (use,) = body["messages"][1]["content"]
    assert use == {
        "type": "server_tool_use",
        "id": "srv_1",
        "name": "code_execution",
        "input": {"code": "print(1)"},
    }


@pytest.mark.conformance
@pytest.mark.parametrize("major", [5, 7])
async def test_a_deferred_tool_search_lands_on_its_part_through_the_real_chat(
    real_clients, major: int
) -> None:
    """Anthropic's deferred tool search (a real run, recorded by the AI SDK project): the first
    response calls the search and the app's readNoteTree; the search's result comes in the
    response to the chat's automatic continuation, and lands on the search's part — named as
    the app names it — while the continuation sends the search back still waiting."""
    run = FIXTURES.parent / "recorded" / "anthropic-messages"
    fake = RecordedRun(
        *(run / f"anthropic--anthropic-tool-search-deferred-regex.step{n}.jsonl" for n in (1, 2, 3))
    )
    settings = {"tool_names": {"tool_search_tool_regex": "toolSearch"}}
    async with (
        http_upstream("/v1/messages", fake.respond) as base,
        running_gateway(
            upstream=base,
            dialect="anthropic-messages",
            target=major,
            dialect_settings={"anthropic-messages": settings},
        ) as (gw, _),
    ):
        answers = [{"kind": "tool", "output": {"notes": []}}, {"kind": "tool", "output": "ok"}]
        api = f"{gw}/api/sessions/search{major}/chat"
        result = await real_clients.chat_loop(api, major, "Edit my notes", answers, auto=True)
    parts = chat_reply(result)["parts"]
    (search,) = [p for p in parts if p["type"] == "tool-toolSearch"]
    assert search["state"] == "output-available" and search["providerExecuted"] is True
    assert {"type": "tool_reference", "toolName": "executeEditorOperation"} in search["output"]
    calls = [p for p in parts if p["type"] in ("tool-readNoteTree", "tool-executeEditorOperation")]
    assert [p["state"] for p in calls] == ["output-available", "output-available"]
    assert len(fake.requests) == 3
    sent = fake.requests[1]["messages"]
    waiting = [b for b in sent[-2]["content"] if b["type"] == "server_tool_use"]
    assert [(b["name"], b["id"]) for b in waiting] == [
        ("tool_search_tool_regex", search["toolCallId"])
    ]
    assert not [b for b in sent[-2]["content"] if b["type"] == "tool_search_tool_result"]
    assert [b["type"] for b in sent[-1]["content"]] == ["tool_result"]
    result_blocks = [b for m in fake.requests[2]["messages"] for b in m["content"]]
    assert any(b["type"] == "tool_search_tool_result" for b in result_blocks)
