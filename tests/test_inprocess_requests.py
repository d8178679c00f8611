"""The request side of an app's own stream: ``parse_chat_request`` is the gateway's intake (its
limits, its texts) and ``request_body`` the body the gateway sends upstream, which the real
SDKs take as keyword arguments and send to the provider unchanged."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import orjson
import pytest

from chunkbridge import ChatRequest, RequestError, parse_chat_request, request_body
from chunkbridge.gateway.errors import BadRequest, PayloadTooLarge
from chunkbridge.gateway.http.intake import parse_chat_body
from tests.gateway_harness import user_body
from tests.provider_server import Script, recording, running_provider

HISTORY = {
    "id": "chat1",
    "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "id": "a1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool-weather",
                    "toolCallId": "call_1",
                    "state": "output-available",
                    "input": {"city": "Paris"},
                    "output": {"celsius": 21},
                },
            ],
        },
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And tomorrow?"}]},
    ],
    "trigger": "submit-message",
    "temperature": 0.2,
}


def test_a_body_in_any_form_is_the_chat_request_the_gateway_reads() -> None:
    raw = orjson.dumps(HISTORY)
    expected = parse_chat_body(raw, 10_000)
    for body in (raw, raw.decode(), HISTORY):
        chat = parse_chat_request(body)
        assert isinstance(chat, ChatRequest) and chat == expected
    chat = parse_chat_request(raw)
    assert (chat.id, chat.trigger, chat.messageId) == ("chat1", "submit-message", None)
    assert [m.id for m in chat.messages] == ["u1", "a1", "u2"]
    assert chat.extra_body == {"temperature": 0.2}
    only_last = parse_chat_request({"id": "c", "message": HISTORY["messages"][0]})
    assert [m.id for m in only_last.messages] == ["u1"]  # the AI SDK's last-message body


def test_its_refusals_are_the_gateways_limits_and_texts() -> None:
    with pytest.raises(BadRequest) as caught:
        parse_chat_request(b"{not json")
    assert (caught.value.status_hint, caught.value.client_message) == (
        400,
        "The request body is not valid JSON.",
    )
    with pytest.raises(PayloadTooLarge) as too_large:
        parse_chat_request(orjson.dumps(user_body("x" * 2000)), max_body_bytes=1000)
    assert too_large.value.status_hint == 413
    many = {**user_body(), "messages": user_body()["messages"] * 3}
    with pytest.raises(RequestError, match="too many messages"):
        parse_chat_request(many, max_messages=2)
    with pytest.raises(RequestError, match=r"not a chat request \(messages"):
        parse_chat_request({"id": "c"})


def test_request_body_refuses_as_the_gateway_does() -> None:
    chat = parse_chat_request(
        {
            "id": "c",
            "messages": [
                {
                    "id": "u1",
                    "role": "user",
                    "parts": [{"type": "file", "mediaType": "image/png", "url": "data:image/png"}],
                }
            ],
        }
    )
    with pytest.raises(BadRequest, match="data URL"):
        request_body(chat, dialect="anthropic-messages")
    with pytest.raises(ValueError, match="invalid settings"):
        request_body(chat, dialect="openai-chat", settings={"nope": 1})


async def test_the_sdks_send_the_provider_the_body_the_gateway_would() -> None:
    """``create(**request_body(...))``: each SDK takes the body as its arguments and sends the
    provider that very JSON (the conversation with its tool call and result, the settings)."""
    chat = parse_chat_request(HISTORY)
    settings: dict[str, Any] = {"model": "m-1", "system": "Be brief.", "max_output_tokens": 50}
    async with running_provider(
        Script(recording("openai-chat", "plain-text")),
        Script(recording("openai-responses", "plain-text")),
        Script(recording("anthropic-messages", "plain-text"), named_events=True),
    ) as (base, provider):
        async with (
            openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0) as oa,
            anthropic.AsyncAnthropic(base_url=base, api_key="k", max_retries=0) as an,
        ):
            bodies = {
                d: request_body(chat, dialect=d, settings=settings)
                for d in ("openai-chat", "openai-responses", "anthropic-messages")
            }
            await (await oa.chat.completions.create(**bodies["openai-chat"])).close()
            await (await oa.responses.create(**bodies["openai-responses"])).close()
            await (await an.messages.create(**bodies["anthropic-messages"])).close()
    sent = [body for _, body in provider.requests]
    assert sent == list(bodies.values())
    assert sent[0]["messages"][0] == {"role": "system", "content": "Be brief."}
    assert any(m.get("tool_calls") for m in sent[0]["messages"])  # the history's tool call
    assert sent[2]["system"] == "Be brief." and sent[2]["max_tokens"] == 50
