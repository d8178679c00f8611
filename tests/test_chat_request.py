"""The useChat request body: every part kind, tolerance, and the continuation rule (spec §5.4)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from chunkbridge.protocol_specs.chat_request import (
    TOOL_STATES,
    ChatRequest,
    DynamicToolPart,
    ToolPart,
    UnknownPart,
)

USER = {
    "id": "u1",
    "role": "user",
    "parts": [
        {
            "type": "file",
            "mediaType": "image/png",
            "url": "data:image/png;base64,AA",
            "filename": "a.png",
        },
        {"type": "text", "text": "What is in this picture?"},
    ],
}


def assistant(msg_id: str = "a1", *parts: dict) -> dict:
    return {"id": msg_id, "role": "assistant", "parts": list(parts)}


EVERY_PART = [
    {"type": "step-start"},
    {"type": "text", "text": "t", "state": "done", "providerMetadata": {"p": {"k": 1}}},
    {"type": "reasoning", "text": "r", "state": "streaming"},
    {"type": "file", "mediaType": "text/plain", "url": "data:,x"},
    {"type": "reasoning-file", "mediaType": "image/png", "url": "data:,x"},
    {"type": "source-url", "sourceId": "s", "url": "https://e.com", "title": "E"},
    {"type": "source-document", "sourceId": "d", "mediaType": "application/pdf", "title": "D"},
    *[
        {"type": "tool-get-weather", "toolCallId": f"c{i}", "state": s, "input": {"city": "x"}}
        for i, s in enumerate(TOOL_STATES)
    ],
    {
        "type": "tool-ask",
        "toolCallId": "ap",
        "state": "approval-responded",
        "approval": {"id": "a", "approved": True, "reason": "ok"},
    },
    {
        "type": "dynamic-tool",
        "toolName": "mcp.search",
        "toolCallId": "d1",
        "state": "output-error",
        "errorText": "boom",
        "input": {},
    },
    {"type": "data-weather", "id": "w", "data": {"t": 3}},
    {"type": "custom", "kind": "acme.x"},
    {"type": "steering-message", "id": "s", "parts": [{"type": "text", "text": "hi"}]},
    {"type": "future-part", "whatever": [1, 2]},
]


def test_every_part_kind_of_5_6_7_parses_and_unknown_ones_are_kept() -> None:
    req = ChatRequest.model_validate(
        {
            "id": "chat",
            "messages": [USER, assistant("a1", *EVERY_PART)],
            "trigger": "submit-message",
            "customerTier": "gold",
        }
    )
    parts = req.messages[1].parts
    assert len(parts) == len(EVERY_PART)
    tools = [p for p in parts if isinstance(p, ToolPart)]
    assert {p.state for p in tools} == set(TOOL_STATES)
    assert isinstance(parts[-1], UnknownPart) and parts[-1].model_extra == {"whatever": [1, 2]}
    dynamic = [p for p in parts if isinstance(p, DynamicToolPart)]
    assert dynamic[0].tool_name == "mcp.search"
    assert tools[0].tool_name == "get-weather"
    assert req.extra_body == {"customerTier": "gold"}


def test_latest_user_message_has_text_and_files() -> None:
    req = ChatRequest.model_validate(
        {"id": "c", "messages": [USER, assistant(), USER | {"id": "u2"}]}
    )
    prompt = req.latest_user_message()
    assert prompt is not None and prompt.message_id == "u2"
    assert prompt.text == "What is in this picture?"
    assert [f.filename for f in prompt.files] == ["a.png"]
    assert ChatRequest.model_validate({"messages": [assistant()]}).latest_user_message() is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"messages": [USER]}, None),
        ({"messages": [USER, assistant("a1")]}, "a1"),
        ({"messages": [USER, assistant("a1")], "trigger": "regenerate-message"}, None),
        ({"messages": [USER, assistant("a1"), USER | {"id": "u2"}], "messageId": "a1"}, "a1"),
        ({"messages": [USER, assistant("a1")], "messageId": "u1"}, None),
        ({"messages": []}, None),
    ],
)
def test_continuation_rule(body: dict, expected: str | None) -> None:
    req = ChatRequest.model_validate(body)
    assert req.response_message_id() == expected
    assert req.is_continuation is (expected is not None)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"messages": "hi"},
        {"messages": [{"role": "robot", "parts": []}]},
        {"messages": [{"role": "user"}]},
        {"messages": [USER], "trigger": "resume"},
    ],
)
def test_shapes_the_gateway_cannot_use_are_rejected(body: dict) -> None:
    with pytest.raises(ValidationError):
        ChatRequest.model_validate(body)


def test_json_schema_is_exportable() -> None:
    schema = ChatRequest.model_json_schema()
    assert "messages" in schema["properties"]
