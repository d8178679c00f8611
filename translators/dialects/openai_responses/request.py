"""The ``openai-responses`` upstream contract: settings, and what a turn sends upstream."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import Field

from chunkbridge.kit import (
    TOOL_ERROR,
    HttpRequest,
    ProviderToolSettings,
    RequestRejected,
    TurnInput,
    finish_body,
    is_answered,
    output_text,
    provider_error,
    result_pieces,
    steps_of,
    system_prompt,
)
from chunkbridge.protocol_specs import openai_responses as spec
from chunkbridge.translators.dialects.openai_responses.tool_history import (
    app_run_items,
    hosted_items,
)


class OpenAIResponsesSettings(ProviderToolSettings):
    """Settings of the ``openai-responses`` dialect (``[openai-responses]`` in TOML)."""

    model: str = Field("gpt-5-mini", description="the model to request")
    path: str = Field(spec.DEFAULT_PATH, description="path of the Responses endpoint")
    organization: str | None = Field(None, description="the OpenAI-Organization header")


def _tools(settings: OpenAIResponsesSettings) -> list[dict[str, Any]]:
    tools = []
    for name, definition in settings.tools.items():
        if "type" in definition:  # a built-in tool (web_search, file_search…), sent as configured
            built_in = dict(definition)
            if built_in["type"] in ("custom", "function"):
                built_in.setdefault("name", name)  # named by its key, as other tools are
            tools.append(built_in)
            continue
        tool: dict[str, Any] = {
            "type": "function",
            "name": name,
            "parameters": definition.get("input_schema") or {"type": "object"},
        }
        if definition.get("description"):
            tool["description"] = definition["description"]
        tools.append(tool)
    return tools


def request_body(turn: TurnInput) -> dict[str, Any]:
    settings: OpenAIResponsesSettings = turn.settings or OpenAIResponsesSettings()
    messages = turn.request.messages
    answers = {a.tool_call_id: a for a in turn.approval_answers}
    items = input_from_ui(messages, answers, settings.tools, settings)
    if not items:
        raise RequestRejected("The request has no message to send.")
    body: dict[str, Any] = {"model": settings.model, "stream": True}
    instructions = system_prompt(settings, messages)
    if instructions:
        body["instructions"] = instructions
    body["input"] = items
    if settings.max_output_tokens:
        body["max_output_tokens"] = settings.max_output_tokens
    return finish_body(body, _tools(settings), turn, settings)


def http_request(turn: TurnInput) -> HttpRequest:
    settings: OpenAIResponsesSettings = turn.settings or OpenAIResponsesSettings()
    headers = {}
    if settings.api_key is not None:
        headers["authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
    if settings.organization:
        headers["openai-organization"] = settings.organization
    return HttpRequest(path=settings.path, body=request_body(turn), headers=headers)


def error_frame(status: int, body: bytes) -> str:
    """An ``error`` event for a refused request (translated like one mid-stream)."""
    return orjson.dumps({"type": "error", "error": provider_error(status, body)}).decode()


def _user_content(parts: list[Any]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        if kind == "text" and part.text:
            content.append({"type": "input_text", "text": part.text})
        elif kind == "file" and part.mediaType.startswith("image/"):
            content.append({"type": "input_image", "image_url": part.url, "detail": "auto"})
        elif kind == "file":
            if part.url.startswith("data:"):
                content.append(
                    {
                        "type": "input_file",
                        "file_data": part.url,
                        "filename": part.filename or "file",
                    }
                )
            else:
                content.append({"type": "input_file", "file_url": part.url})
    return content


def _arguments(value: Any) -> str:
    """A call's input as ``arguments`` text: an input that is already JSON text (a server that
    streams its own tools' arguments as a string) goes back as it came."""
    if isinstance(value, str):
        try:
            orjson.loads(value)
        except orjson.JSONDecodeError:
            return orjson.dumps(value).decode()
        return value
    return orjson.dumps(value if value is not None else {}).decode()


def _answer(part: Any) -> str | list[dict[str, Any]]:
    """What the app answered: its output (an MCP result's content as content items), ``{"error":
    …}`` for a failure (so the model can tell an error from a result), the refusal's reason."""
    if part.state == "output-available":
        return _output(part.output)
    if part.state == "output-error":
        return orjson.dumps({"error": part.errorText or TOOL_ERROR}).decode()
    return "The user denied this tool call."


def _output(output: Any) -> str | list[dict[str, Any]]:
    """A ``function_call_output``'s output: an MCP result's text, image and file items (as the
    AI SDK sends them), anything else as text."""
    pieces = result_pieces(output)
    if pieces is None:
        return output_text(output)
    items: list[dict[str, Any]] = []
    for piece in pieces:
        if isinstance(piece, str):
            items.append({"type": "input_text", "text": piece})
            continue
        url = f"data:{piece.media_type};base64,{piece.base64}"
        if piece.kind == "image":
            items.append({"type": "input_image", "image_url": url})
        else:
            items.append({"type": "input_file", "filename": "data", "file_data": url})
    return items


def _caller(meta: dict[str, Any]) -> dict[str, Any] | None:
    """``providerMetadata.openai.caller`` → the API's ``caller`` (a program's call)."""
    caller = meta.get("caller")
    if not isinstance(caller, dict):
        return None
    if caller.get("type") == "program":
        return {"type": "program", "caller_id": caller.get("callerId")}
    return caller


def _call_items(
    part: Any, meta: dict[str, Any], tools: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An answered call the app ran (``meta``: its ``callProviderMetadata.openai``) → (the call
    item, its output item)."""
    name = tools["names"].provider_names(part.tool_name)[0]
    items = app_run_items(part, name, tools["types"], meta.get("itemId"))
    if items is not None:
        return items
    if part.tool_name in tools["custom"]:
        value = part.input if isinstance(part.input, str) else output_text(part.input)
        call = {"type": "custom_tool_call", "call_id": part.toolCallId, "name": part.tool_name}
        call["input"] = value
        return call, {
            "type": "custom_tool_call_output",
            "call_id": part.toolCallId,
            "output": _answer(part),
        }
    call = {
        "type": "function_call",
        "call_id": part.toolCallId,
        "name": part.tool_name,
        "arguments": _arguments(part.input if part.input is not None else part.rawInput),
    }
    output = {"type": "function_call_output", "call_id": part.toolCallId, "output": _answer(part)}
    if isinstance(meta.get("namespace"), str):
        call["namespace"] = meta["namespace"]
    caller = _caller(meta)
    if caller is not None:
        call["caller"] = output["caller"] = caller
    return call, output


def _assistant_step(
    parts: list[Any], answers: Mapping[str, Any], tools: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """One model step: its items in order, then the outputs of the calls the app answered."""
    items: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        meta = (getattr(part, "providerMetadata", None) or {}).get("openai") or {}
        if kind == "text":
            if part.text:
                message = {"role": "assistant", "content": part.text}
                if isinstance(meta.get("phase"), str):
                    message["phase"] = meta["phase"]
                items.append(message)
            continue
        if kind == "reasoning":
            encrypted = meta.get("reasoningEncryptedContent")
            if isinstance(encrypted, str) and isinstance(meta.get("itemId"), str):
                summary = [{"type": "summary_text", "text": part.text}] if part.text else []
                items.append(
                    {
                        "type": "reasoning",
                        "id": meta["itemId"],
                        "encrypted_content": encrypted,
                        "summary": summary,
                    }
                )
            continue
        if kind == "custom":
            if part.kind == "openai.compaction" and isinstance(meta.get("itemId"), str):
                compaction = {"type": "compaction", "id": meta["itemId"]}
                compaction["encrypted_content"] = meta.get("encryptedContent")
                items.append(compaction)
            continue
        answer = answers.get(getattr(part, "toolCallId", ""))
        if answer is not None:  # the user's decision on an MCP approval request
            # as the AI SDK sends it: the stored request by reference, then the decision
            items.append({"type": "item_reference", "id": answer.approval_id})
            response = {
                "type": "mcp_approval_response",
                "approval_request_id": answer.approval_id,
                "approve": answer.approved,
            }
            if answer.reason:
                response["reason"] = answer.reason
            items.append(response)
            continue
        if not hasattr(part, "toolCallId"):
            continue
        call_meta = (getattr(part, "callProviderMetadata", None) or {}).get("openai") or {}
        if part.providerExecuted:
            name = tools["names"].provider_names(part.tool_name)[0]
            items += hosted_items(part, name, call_meta.get("itemId"))
            continue
        if not is_answered(part):
            continue  # no answer yet
        call, output = _call_items(part, call_meta, tools)
        items.append(call)
        outputs.append(output)
    return items + outputs


def _declared(
    tools: Mapping[str, Mapping[str, Any]], names: ProviderToolSettings
) -> dict[str, Any]:
    """The deployment's tools as the history needs them: the built-in types declared (their
    calls go back as their own items), the names of custom (free-text) tools, and the
    settings that name OpenAI's tools as the app does (``names``)."""
    return {
        "types": frozenset(str(d.get("type")) for d in tools.values() if "type" in d),
        "custom": frozenset(n for n, d in tools.items() if d.get("type") == "custom"),
        "names": names,
    }


def input_from_ui(
    messages: list[Any],
    answers: Mapping[str, Any] | None = None,
    tools: Mapping[str, Mapping[str, Any]] | None = None,
    settings: ProviderToolSettings | None = None,
) -> list[dict[str, Any]]:
    """``UIMessage`` history → Responses ``input`` items (see the module docstring).
    ``answers``: the approval answers of this request by tool call id
    (``TurnInput.approval_answers``); ``tools``: the deployment's declared tools by name;
    ``settings``: what names OpenAI's tools as the app does (``tool_names``)."""
    declared = _declared(tools or {}, settings or OpenAIResponsesSettings())
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue  # joined into the instructions
        if message.role == "user":
            content = _user_content(message.parts)
            if content:
                items.append({"role": "user", "content": content})
            continue
        for step in steps_of(message):
            items.extend(_assistant_step(step, answers or {}, declared))
    return items
