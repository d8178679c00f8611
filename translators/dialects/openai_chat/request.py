"""The ``openai-chat`` upstream contract: settings, and what a turn sends upstream."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import Field, SecretStr

from chunkbridge.kit import (
    HttpRequest,
    ProviderSettings,
    TurnInput,
    finish_body,
    output_text,
    result_pieces,
    steps_of,
)


class OpenAIChatSettings(ProviderSettings):
    """Settings of the ``openai-chat`` dialect (``[openai-chat]`` in the TOML file)."""

    model: str = Field("gpt-4.1-mini", description="the model to request")
    api_key: SecretStr | None = Field(
        None,
        description="API key, sent as 'Authorization: Bearer' (HTTP upstreams); prefer the "
        "environment variable to the flag",
    )
    path: str = Field(
        "/v1/chat/completions", description="path of the endpoint, under the upstream URL"
    )


def _tools(settings: OpenAIChatSettings) -> list[dict[str, Any]]:
    tools = []
    for name, definition in settings.tools.items():
        if "type" in definition:  # a tool in the provider's own shape, sent as configured
            tools.append(definition)
            continue
        function = {
            "name": name,
            "parameters": definition.get("input_schema") or {"type": "object"},
        }
        if definition.get("description"):
            function["description"] = definition["description"]
        tools.append({"type": "function", "function": function})
    return tools


def request_body(turn: TurnInput) -> dict[str, Any]:
    settings: OpenAIChatSettings = turn.settings or OpenAIChatSettings()
    messages = messages_from_ui(turn.request.messages)
    if settings.system:
        messages.insert(0, {"role": "system", "content": settings.system})
    body: dict[str, Any] = {
        "model": settings.model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": messages,
    }
    if settings.max_output_tokens is not None:
        body["max_completion_tokens"] = settings.max_output_tokens
    return finish_body(body, _tools(settings), turn, settings)


def http_request(turn: TurnInput) -> HttpRequest:
    settings: OpenAIChatSettings = turn.settings or OpenAIChatSettings()
    headers = {}
    if settings.api_key is not None:
        headers["authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
    return HttpRequest(path=settings.path, body=request_body(turn), headers=headers)


def error_frame(status: int, body: bytes) -> str:
    """The provider's error object (its message is what the user should read), or a generic
    one when the body is not an OpenAI error."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict) and "error" in parsed:
        return orjson.dumps({"error": parsed["error"]}).decode()
    message = f"The model provider refused the request ({status})."
    return orjson.dumps({"error": {"message": message}}).decode()


def _content(parts: list[Any]) -> str | list[dict[str, Any]]:
    """A user message's text and files as OpenAI content (a string when it is only text)."""
    items: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        if kind == "text":
            items.append({"type": "text", "text": part.text})
        elif kind == "file" and part.mediaType.startswith("image/"):
            items.append({"type": "image_url", "image_url": {"url": part.url}})
        elif kind == "file":
            items.append(
                {
                    "type": "file",
                    "file": {"file_data": part.url, "filename": part.filename or "file"},
                }
            )
    if all(item["type"] == "text" for item in items):
        return "\n\n".join(item["text"] for item in items)
    return items


def messages_from_ui(messages: list[Any]) -> list[dict[str, Any]]:
    """UIMessage history (``chunkbridge.protocol_specs.chat_request.UIMessage``) → chat-completions
    messages.

    Text and files of user and system messages; an assistant message, one model step at a time
    (``step-start`` parts cut them: a step the gateway's tools answered is followed by the
    next), becomes the step's text plus one ``tool_calls`` entry per tool part with input,
    followed by ``tool`` messages for the parts that have an output (or an error, or a
    denial). Reasoning, sources and data parts are not sent back.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role != "assistant":
            out.append({"role": message.role, "content": _content(message.parts)})
            continue
        for step in steps_of(message):
            out += _assistant_step(step)
    return out


def _assistant_step(parts: list[Any]) -> list[dict[str, Any]]:
    text = "".join(p.text for p in parts if getattr(p, "type", None) == "text")
    calls, results = [], []
    for part in parts:
        if not hasattr(part, "toolCallId") or part.state == "input-streaming":
            continue
        calls.append(
            {
                "id": part.toolCallId,
                "type": "function",
                "function": {
                    "name": part.tool_name,
                    "arguments": orjson.dumps(part.input or {}).decode(),
                },
            }
        )
        if part.state == "output-available":
            results.append(
                {
                    "role": "tool",
                    "tool_call_id": part.toolCallId,
                    "content": _output(part.output),
                }
            )
        elif part.state in ("output-error", "output-denied"):
            results.append(
                {
                    "role": "tool",
                    "tool_call_id": part.toolCallId,
                    "content": part.errorText or "The tool call was not run.",
                }
            )
    if not text and not calls:
        return []
    entry: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        entry["tool_calls"] = calls
    return [entry, *results]


def _output(output: Any) -> str:
    """A tool message's content, which is text only: an MCP result's content as the AI SDK
    writes it there (the JSON of its text and file parts), anything else as text."""
    pieces = result_pieces(output)
    if pieces is None:
        return output_text(output)
    parts = [
        {"type": "text", "text": p}
        if isinstance(p, str)
        else {"type": "file", "mediaType": p.media_type, "data": {"type": "data", "data": p.base64}}
        for p in pieces
    ]
    return orjson.dumps(parts).decode()
