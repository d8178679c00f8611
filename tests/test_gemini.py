"""gemini: the request built from the UIMessage history, what the recordings do not show, and the
live path in front of a fake Gemini API."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from chunkbridge.translators.dialects.gemini import DIALECT
from chunkbridge.translators.dialects.gemini.request import GeminiSettings, request_body
from tests.gateway_harness import http_upstream, post, running_gateway, sse_response, user_body
from tests.helpers import decode_sse, new_turn, of_type, provider_turn, text_of, text_part, types

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gemini"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


SIG = {"google": {"thoughtSignature": "sig-1"}}
HISTORY = [
    {"id": "s0", "role": "system", "parts": [text_part("Answer in French.")]},
    {
        "id": "u0",
        "role": "user",
        "parts": [
            text_part("What is this?"),
            {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{PNG}"},
            {"type": "file", "mediaType": "application/pdf", "url": "https://example.com/a.pdf"},
        ],
    },
    {
        "id": "a0",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "Think.", "providerMetadata": SIG},
            text_part("Let me look."),
            {
                "type": "tool-lookup",
                "toolCallId": "call-1",
                "state": "output-available",
                "input": {"q": "cat"},
                "output": {"hits": 2},
                "callProviderMetadata": SIG,
            },
            {
                "type": "tool-fail",
                "toolCallId": "call-2",
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


def test_the_request_carries_the_history_with_thought_signatures() -> None:
    body = request_body(
        provider_turn(GeminiSettings, HISTORY, system="Be brief.", max_output_tokens=256)
    )
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief.\n\nAnswer in French."}]}
    assert body["generationConfig"] == {"maxOutputTokens": 256}
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "What is this?"},
                {"inlineData": {"mimeType": "image/png", "data": PNG}},
                {
                    "fileData": {
                        "mimeType": "application/pdf",
                        "fileUri": "https://example.com/a.pdf",
                    }
                },
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "Think.", "thought": True, "thoughtSignature": "sig-1"},
                {"text": "Let me look."},
                {
                    "functionCall": {"name": "lookup", "args": {"q": "cat"}},
                    "thoughtSignature": "sig-1",
                },
                {"functionCall": {"name": "fail", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "lookup",
                        "response": {"name": "lookup", "content": {"hits": 2}},
                    }
                },
                {
                    "functionResponse": {
                        "name": "fail",
                        "response": {"name": "fail", "error": "boom"},
                    }
                },
            ],
        },
        {"role": "model", "parts": [{"text": "A cat."}]},
        {"role": "user", "parts": [{"text": "Thanks!"}]},
    ]


def test_path_key_tools_and_generation_options() -> None:
    settings = {
        "api_key": "AIza-test",
        "model": "gemini-2.5-pro",
        "tools": {
            "get_weather": {"description": "Weather", "input_schema": {"type": "object"}},
            "search": {"type": "google_search"},
        },
        "options": {
            "generationConfig": {"temperature": 0.2, "thinkingConfig": {"includeThoughts": True}}
        },
        "max_output_tokens": 100,
    }
    messages = [{"id": "u", "role": "user", "parts": [text_part("hi")]}]
    turn = provider_turn(GeminiSettings, messages, **settings)
    assert DIALECT.http is not None
    request = DIALECT.http.request(turn)
    assert request.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert request.headers == {"x-goog-api-key": "AIza-test"}
    assert request.body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "get_weather", "parameters": {"type": "object"}, "description": "Weather"}
            ]
        },
        {"google_search": {}},
    ]
    assert request.body["generationConfig"] == {
        "maxOutputTokens": 100,
        "temperature": 0.2,
        "thinkingConfig": {"includeThoughts": True},
    }


def test_streamed_arguments_build_nested_values_and_ignore_bad_paths() -> None:
    turn = new_turn("gemini")

    def call(**fields: Any) -> dict[str, Any]:
        return {"candidates": [{"content": {"parts": [{"functionCall": fields}]}}]}

    chunks = [
        *turn.feed(call(name="f", willContinue=True)),
        *turn.feed(
            call(
                partialArgs=[
                    {"jsonPath": "$.a.b[0].c", "stringValue": "x", "willContinue": True},
                    {"jsonPath": "$.a.b[0].c", "stringValue": "y"},
                    {"jsonPath": "$.tags[]"},
                    {"jsonPath": "$.a.b[5]", "numberValue": 1},  # a gap: ignored
                    {"jsonPath": "$.n", "nullValue": None},
                ],
                willContinue=True,
            )
        ),
        *turn.feed(call()),
    ]
    assert types(chunks) == ["start", "start-step", "tool-input-start", "tool-input-available"]
    (available,) = of_type(chunks, "tool-input-available")
    assert available["input"] == {"a": {"b": [{"c": "xy"}]}, "tags": [], "n": None}
    malformed = turn.feed(call(partialArgs=[{"jsonPath": "$.x", "stringValue": "late"}]))
    assert of_type(list(malformed), "data-upstream-malformed")


def test_finish_waits_for_usage_and_the_body_end_closes_it() -> None:
    turn = new_turn("gemini")
    chunks = turn.feed(
        {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": "STOP"}]}
    )
    assert not of_type(chunks, "finish")
    chunks = turn.feed({"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}})
    (finish,) = of_type(chunks, "finish")
    assert finish["finishReason"] == "stop"
    assert finish["messageMetadata"]["usage"] == {"inputTokens": 3, "outputTokens": 1}


class FakeGemini:
    def __init__(self, failures: list[int], recording: str = "function-call") -> None:
        self.failures = list(failures)
        self.requests: list[dict[str, Any]] = []
        self.keys: list[str | None] = []
        self.queries: list[str] = []
        self.frames = (FIXTURES / f"{recording}.jsonl").read_text().splitlines()

    async def stream(self, request: Request) -> Response:
        self.requests.append(orjson.loads(await request.body()))
        self.keys.append(request.headers.get("x-goog-api-key"))
        self.queries.append(request.url.query)
        if self.failures:
            status = self.failures.pop(0)
            error = [
                {
                    "error": {
                        "code": status,
                        "message": "Resource exhausted",
                        "status": "RESOURCE_EXHAUSTED",
                    }
                }
            ]
            return JSONResponse(error, status, {"retry-after": "0"})
        return sse_response([f.encode() for f in self.frames], 0.001)


PATH = "/v1beta/models/gemini-test:streamGenerateContent"


@pytest.mark.asyncio
async def test_serves_a_turn_retrying_resource_exhausted(real_clients) -> None:
    fake = FakeGemini(failures=[429, 503])
    settings = {"api_key": "AIza-live", "model": "gemini-test"}
    async with (
        http_upstream(PATH, fake.stream) as base,
        running_gateway(upstream=base, dialect="gemini", dialect_settings={"gemini": settings}) as (
            gw,
            _,
        ),
    ):
        response = await post(gw, "s", user_body("Weather in Paris?"))
    assert response.status_code == 200, response.text
    assert (
        len(fake.requests) == 3 and fake.keys[-1] == "AIza-live" and fake.queries[-1] == "alt=sse"
    )
    assert fake.requests[-1]["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]}
    ]
    assert text_of(decode_sse(response.content)) == "Let me check the weather."
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "tool-calls", major
        (call,) = verdict.parts("tool-get_weather")
        assert call["input"] == {"location": "Paris, France", "unit": "celsius"}, major


@pytest.mark.asyncio
async def test_a_refused_request_ends_with_googles_message() -> None:
    fake = FakeGemini(failures=[400])
    settings = {"model": "gemini-test"}
    async with (
        http_upstream(PATH, fake.stream) as base,
        running_gateway(upstream=base, dialect="gemini", dialect_settings={"gemini": settings}) as (
            gw,
            _,
        ),
    ):
        response = await post(gw, "s")
    chunks = decode_sse(response.content)
    assert of_type(chunks, "error")[0]["errorText"] == "RESOURCE_EXHAUSTED: Resource exhausted"


def test_a_tool_schema_becomes_the_openapi_subset_gemini_takes() -> None:
    from chunkbridge.translators.dialects.gemini.request import openapi_schema

    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "const": {"const": "x"},  # a property may be named like a keyword
            "note": {"type": ["string", "null"], "title": "Note"},
        },
        "required": ["const"],
    }
    assert openapi_schema(schema) == {
        "type": "object",
        "properties": {
            "const": {"enum": ["x"]},
            "note": {"type": "string", "nullable": True, "title": "Note"},
        },
        "required": ["const"],
    }


@pytest.mark.parametrize(
    ("names", "shown"), [({}, "code_execution"), ({"code_execution": "python"}, "python")]
)
def test_code_execution_is_named_as_google_names_it_unless_the_app_names_it(
    names: dict[str, str], shown: str
) -> None:
    turn = new_turn("gemini", settings=GeminiSettings(tool_names=names))
    frames = (FIXTURES / "code-execution.jsonl").read_text().splitlines()
    chunks = [c for frame in frames for c in turn.feed_frame(frame)]
    (call,) = of_type(chunks, "tool-input-available")
    assert call["toolName"] == shown and call["providerExecuted"] is True
    (result,) = of_type(chunks, "tool-output-available")
    assert result["toolCallId"] == call["toolCallId"]
