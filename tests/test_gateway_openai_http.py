"""openai-chat over HTTP: a fake provider (Starlette under uvicorn) on 127.0.0.1."""

from __future__ import annotations

import contextlib

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.gateway_harness import http_upstream, post, running_gateway, sse_response, user_body
from tests.helpers import decode_sse, of_type, text_of

pytestmark = pytest.mark.asyncio


CHUNK = {
    "id": "c",
    "object": "chat.completion.chunk",
    "model": "gpt-test",
    "choices": [
        {"index": 0, "delta": {"content": "Hello from the provider"}, "finish_reason": None}
    ],
}
STOP = {**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
USAGE = {
    **CHUNK,
    "choices": [],
    "usage": {"prompt_tokens": 4, "completion_tokens": 5, "total_tokens": 9},
}


class FakeProvider:
    def __init__(self, failures: list[int], final_status: int = 200) -> None:
        self.failures = list(failures)
        self.final_status = final_status
        self.requests: list[dict] = []
        self.auth: list[str | None] = []

    async def completions(self, request: Request) -> Response:
        self.requests.append(orjson.loads(await request.body()))
        self.auth.append(request.headers.get("authorization"))
        if self.failures:
            status = self.failures.pop(0)
            return JSONResponse({"error": {"message": "busy"}}, status, {"retry-after": "0"})
        if self.final_status != 200:
            return JSONResponse(
                {"error": {"message": "maximum context length exceeded"}}, self.final_status
            )

        payloads = [orjson.dumps(CHUNK), orjson.dumps(STOP), orjson.dumps(USAGE), b"[DONE]"]
        return sse_response(payloads, 0.01)


def provider(fake: FakeProvider) -> contextlib.AbstractAsyncContextManager[str]:
    return http_upstream("/v1/chat/completions", fake.completions)


def settings(base: str) -> dict:
    return {
        "upstream": base,
        "dialect": "openai-chat",
        "dialect_settings": {"openai-chat": {"api_key": "sk-test", "model": "gpt-test"}},
    }


async def test_streams_with_history_usage_and_retries(real_clients) -> None:
    fake = FakeProvider(failures=[429, 503])
    async with provider(fake) as base, running_gateway(**settings(base)) as (gw, _):
        body = user_body("second question")
        body["messages"] = [
            {"id": "u0", "role": "user", "parts": [{"type": "text", "text": "first"}]},
            {
                "id": "a0",
                "role": "assistant",
                "parts": [
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool-lookup",
                        "toolCallId": "call_1",
                        "state": "output-available",
                        "input": {"q": 1},
                        "output": {"ok": True},
                    },
                ],
            },
            *body["messages"],
        ]
        response = await post(gw, "s", body)
    assert response.status_code == 200
    assert len(fake.requests) == 3 and fake.auth[-1] == "Bearer sk-test"
    sent = fake.requests[-1]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["model"] == "gpt-test"
    assert sent["messages"] == [
        {"role": "user", "content": "first"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q":1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"ok":true}'},
        {"role": "user", "content": "second question"},
    ]
    chunks = decode_sse(response.content)
    assert text_of(chunks) == "Hello from the provider"
    assert chunks[-1]["messageMetadata"]["usage"] == {
        "promptTokens": 4,
        "completionTokens": 5,
        "totalTokens": 9,
    }
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", major


async def test_gives_up_after_max_retries_with_502() -> None:
    fake = FakeProvider(failures=[503, 503, 503, 503, 503])
    async with (
        provider(fake) as base,
        running_gateway(**settings(base), upstream_retries=2) as (gw, _),
    ):
        response = await post(gw, "s")
    assert response.status_code == 502 and len(fake.requests) == 3


async def test_client_error_from_provider_becomes_an_error_chunk() -> None:
    fake = FakeProvider(failures=[], final_status=400)
    async with provider(fake) as base, running_gateway(**settings(base)) as (gw, _):
        response = await post(gw, "s")
    assert response.status_code == 200 and len(fake.requests) == 1
    chunks = decode_sse(response.content)
    assert of_type(chunks, "error")[0]["errorText"] == "maximum context length exceeded"
    assert chunks[-1]["finishReason"] == "error"
