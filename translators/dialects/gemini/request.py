"""The ``gemini`` upstream contract: settings, and what a turn sends upstream."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import Field

from chunkbridge.kit import (
    HttpRequest,
    Media,
    ProviderToolSettings,
    RequestRejected,
    TurnInput,
    add_turn,
    apply_overrides,
    is_answered,
    parse_data_url,
    provider_error,
    result_pieces,
    steps_of,
    system_prompt,
)
from chunkbridge.protocol_specs import gemini as spec


class GeminiSettings(ProviderToolSettings):
    """Settings of the ``gemini`` dialect (``[gemini]`` in TOML)."""

    model: str = Field("gemini-2.5-flash", description="the model to request")
    path: str = Field(
        "",
        description="path of the streaming endpoint (default: /v1beta/models/<model>:"
        "streamGenerateContent?alt=sse)",
    )


#: JSON Schema keywords Gemini's ``parameters`` (an OpenAPI 3.0 subset) refuses.
_NOT_OPENAPI = frozenset({"$schema", "$id", "additionalProperties", "const", "examples"})


def openapi_schema(schema: Any) -> Any:
    """A tool's JSON Schema (an MCP server's, as written) in the subset ``parameters`` takes:
    ``const`` as a one-value ``enum``, ``type: [T, "null"]`` as ``nullable``, the keywords it
    refuses left out — as the AI SDK's Google provider adapts it."""
    if isinstance(schema, list):
        return [openapi_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NOT_OPENAPI:
            continue
        if key == "properties" and isinstance(value, dict):  # names, not keywords
            out[key] = {name: openapi_schema(field) for name, field in value.items()}
        else:
            out[key] = openapi_schema(value)
    if "const" in schema:
        out["enum"] = [schema["const"]]
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        out["type"] = kinds[0] if len(kinds) == 1 else kinds
        if "null" in kind:
            out["nullable"] = True
    return out


def _tools(settings: GeminiSettings) -> list[dict[str, Any]]:
    declarations, native = [], []
    for name, definition in settings.tools.items():
        if (
            "type" in definition
        ):  # a built-in tool: {"type": "google_search"} → {"google_search": {}}
            native.append(
                {definition["type"]: {k: v for k, v in definition.items() if k != "type"}}
            )
            continue
        declaration = {
            "name": name,
            "parameters": openapi_schema(definition.get("input_schema") or {"type": "object"}),
        }
        if definition.get("description"):
            declaration["description"] = definition["description"]
        declarations.append(declaration)
    tools = [{"functionDeclarations": declarations}] if declarations else []
    return tools + native


def request_body(turn: TurnInput) -> dict[str, Any]:
    settings: GeminiSettings = turn.settings or GeminiSettings()
    messages = turn.request.messages
    contents = contents_from_ui(messages)
    if not contents:
        raise RequestRejected("The request has no message to send.")
    body: dict[str, Any] = {"contents": contents}
    system = system_prompt(settings, messages)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    tools = _tools(settings)
    if tools:
        body["tools"] = tools
    if settings.max_output_tokens:
        body["generationConfig"] = {"maxOutputTokens": settings.max_output_tokens}
    for key, value in settings.options.items():
        if key == "generationConfig" and isinstance(value, dict):
            body["generationConfig"] = {**body.get("generationConfig", {}), **value}
        else:
            body[key] = value
    return apply_overrides(body, turn, settings.body_overrides)


def http_request(turn: TurnInput) -> HttpRequest:
    settings: GeminiSettings = turn.settings or GeminiSettings()
    headers = {}
    if settings.api_key is not None:
        headers["x-goog-api-key"] = settings.api_key.get_secret_value()
    path = settings.path or spec.stream_path(settings.model)
    return HttpRequest(path=path, body=request_body(turn), headers=headers)


def error_frame(status: int, body: bytes) -> str:
    """Google's error chunk for a refused request (translated like one mid-stream)."""
    return orjson.dumps({"error": provider_error(status, body)}).decode()


def _signature(metadata: Any) -> str | None:
    google = (metadata or {}).get("google") if isinstance(metadata, dict) else None
    value = google.get("thoughtSignature") if isinstance(google, dict) else None
    return value if isinstance(value, str) else None


def _user_parts(parts: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        if kind == "text" and part.text:
            out.append({"text": part.text})
        elif kind == "file":
            inline = parse_data_url(part.url)
            if inline is not None:
                out.append({"inlineData": {"mimeType": inline.media_type, "data": inline.base64}})
            else:
                out.append({"fileData": {"mimeType": part.mediaType, "fileUri": part.url}})
    return out


def _model_step(parts: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One model step: (model parts, function responses for the next user turn)."""
    content: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        if kind in ("text", "reasoning"):
            signature = _signature(part.providerMetadata)
            if not part.text and signature is None:
                continue
            item: dict[str, Any] = {"text": part.text}
            if kind == "reasoning":
                item["thought"] = True
            if signature is not None:
                item["thoughtSignature"] = signature
            content.append(item)
            continue
        if not hasattr(part, "toolCallId") or part.providerExecuted:
            continue
        if not is_answered(part):
            continue  # no answer yet
        name = part.tool_name
        call: dict[str, Any] = {
            "functionCall": {
                "name": name,
                "args": part.input if isinstance(part.input, dict) else {},
            }
        }
        signature = _signature(getattr(part, "callProviderMetadata", None))
        if signature is not None:
            call["thoughtSignature"] = signature
        content.append(call)
        responses.append({"functionResponse": _function_response(name, part)})
    return content, responses


def _function_response(name: str, part: Any) -> dict[str, Any]:
    """A call's answer: its output — an MCP result's text as the content and its media as the
    response's parts, as the AI SDK sends them — or its error."""
    if part.state != "output-available":
        error = part.errorText or "The user denied this call."
        return {"name": name, "response": {"name": name, "error": error}}
    pieces = result_pieces(part.output)
    if pieces is None:
        return {"name": name, "response": {"name": name, "content": part.output}}
    texts = [piece for piece in pieces if isinstance(piece, str)]
    media = [_inline(p) for p in pieces if isinstance(p, Media)]
    content = "\n".join(texts) or "Tool executed successfully."
    response: dict[str, Any] = {"name": name, "response": {"name": name, "content": content}}
    if media:
        response["parts"] = media
    return response


def _inline(media: Media) -> dict[str, Any]:
    return {"inlineData": {"mimeType": media.media_type, "data": media.base64}}


def contents_from_ui(messages: list[Any]) -> list[dict[str, Any]]:
    """``UIMessage`` history → Gemini ``contents`` (see the module docstring). Consecutive turns
    of one role are merged."""
    out: list[dict[str, Any]] = []

    for message in messages:
        if message.role == "system":
            continue
        if message.role == "user":
            add_turn(out, "user", "parts", _user_parts(message.parts))
            continue
        for step in steps_of(message):
            content, responses = _model_step(step)
            add_turn(out, "model", "parts", content)
            add_turn(out, "user", "parts", responses)
    return out
