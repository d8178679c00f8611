"""The ``anthropic-messages`` upstream contract: settings, and what a turn sends upstream."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import Field

from chunkbridge.kit import (
    HttpRequest,
    ProviderToolSettings,
    RequestRejected,
    TurnInput,
    add_turn,
    finish_body,
    is_answered,
    media_note,
    output_text,
    parse_data_url,
    provider_error,
    result_pieces,
    steps_of,
    system_prompt,
)
from chunkbridge.protocol_specs import anthropic_messages as spec
from chunkbridge.translators.dialects.anthropic_messages import tools


class AnthropicSettings(ProviderToolSettings):
    """Settings of the ``anthropic-messages`` dialect (``[anthropic-messages]`` in TOML)."""

    model: str = Field("claude-sonnet-4-5", description="the model to request")
    path: str = Field(spec.DEFAULT_PATH, description="path of the Messages endpoint")
    max_output_tokens: int | None = Field(
        4096, description="max_tokens of each answer (the API requires one)"
    )
    api_version: str = Field(spec.API_VERSION, description="the anthropic-version header")
    beta: list[str] = Field([], description="anthropic-beta feature names to enable")


def _tools(settings: AnthropicSettings) -> list[dict[str, Any]]:
    tools = []
    for name, definition in settings.tools.items():
        if "type" in definition:  # a server tool (web_search_20250305…), sent as configured
            tools.append({"name": name, **definition})
            continue
        tool = {"name": name, "input_schema": definition.get("input_schema") or {"type": "object"}}
        if definition.get("description"):
            tool["description"] = definition["description"]
        tools.append(tool)
    return tools


def request_body(turn: TurnInput) -> dict[str, Any]:
    settings: AnthropicSettings = turn.settings or AnthropicSettings()
    messages = turn.request.messages
    converted = messages_from_ui(messages, settings)
    if not converted:
        raise RequestRejected("The request has no message to send.")
    body: dict[str, Any] = {
        "model": settings.model,
        "max_tokens": settings.max_output_tokens or 4096,
        "stream": True,
    }
    system = system_prompt(settings, messages)
    if system:
        body["system"] = system
    body["messages"] = converted
    return finish_body(body, _tools(settings), turn, settings)


def http_request(turn: TurnInput) -> HttpRequest:
    settings: AnthropicSettings = turn.settings or AnthropicSettings()
    headers = {"anthropic-version": settings.api_version}
    if settings.api_key is not None:
        headers["x-api-key"] = settings.api_key.get_secret_value()
    if settings.beta:
        headers["anthropic-beta"] = ",".join(settings.beta)
    return HttpRequest(path=settings.path, body=request_body(turn), headers=headers)


def error_frame(status: int, body: bytes) -> str:
    """Anthropic's ``error`` event for a refused request (translated like one mid-stream)."""
    error = provider_error(status, body)
    error.setdefault("type", "api_error")
    return orjson.dumps({"type": "error", "error": error}).decode()


def _file_block(media_type: str, url: str) -> dict[str, Any]:
    """A user file as a content block: a data URL inline, another URL by reference."""
    inline = parse_data_url(url)
    if media_type.startswith("image/"):
        if inline is not None:
            source = {"type": "base64", "media_type": inline.media_type, "data": inline.base64}
        else:
            source = {"type": "url", "url": url}
        return {"type": "image", "source": source}
    if media_type == "application/pdf":
        if inline is not None:
            source = {"type": "base64", "media_type": "application/pdf", "data": inline.base64}
        else:
            source = {"type": "url", "url": url}
        return {"type": "document", "source": source}
    if media_type == "text/plain" and inline is not None:
        source = {"type": "text", "media_type": "text/plain", "data": inline.text()}
        return {"type": "document", "source": source}
    raise RequestRejected(f"Files of type {media_type} cannot be sent to Anthropic.")


def _text_block(part: Any) -> dict[str, Any] | None:
    """A text part → a ``text`` block with its citations, or the ``compaction`` block it came
    from (a summary the API wrote of the conversation so far, which it wants back in place)."""
    meta = (part.providerMetadata or {}).get("anthropic") or {}
    if not part.text:
        return None
    if meta.get("type") == "compaction":
        block = {"type": "compaction", "content": part.text}
        if isinstance(meta.get("signature"), str):
            block["signature"] = meta["signature"]
        return block
    block = {"type": "text", "text": part.text}
    if meta.get("citations") is not None:
        block["citations"] = meta["citations"]
    return block


def _fallback_block(part: Any) -> dict[str, Any] | None:
    """The custom part of a server-side model fallback → the ``fallback`` block it came from."""
    meta = ((getattr(part, "providerMetadata", None) or {}).get("anthropic")) or {}
    if part.kind != "anthropic.fallback" or not isinstance(meta.get("from"), dict):
        return None
    return {"type": "fallback", "from": meta["from"], "to": meta.get("to")}


def _tool_input(part: Any) -> dict[str, Any]:
    """A call's input as the API takes it: an object; input that was not JSON (a failed call's
    ``rawInput``) wrapped as ``{rawInvalidInput}``, so the model sees what it wrote."""
    value = part.input
    if value is None and part.state == "output-error":
        value = part.rawInput
    if isinstance(value, dict):
        return value
    return {} if value is None else {"rawInvalidInput": value}


def _tool_uses_last(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``tool_use`` blocks after the other blocks of their stretch between thinking blocks: the
    API wants a client tool call to end its turn, after the server tools it ran alongside."""
    out: list[dict[str, Any]] = []
    stretch: list[dict[str, Any]] = []
    for block in [*content, None]:
        if block is None or block["type"] in ("thinking", "redacted_thinking"):
            out += [b for b in stretch if b["type"] != "tool_use"]
            out += [b for b in stretch if b["type"] == "tool_use"]
            stretch = []
            if block is not None:
                out.append(block)
        else:
            stretch.append(block)
    return out


def _drop_orphan_callers(messages: list[dict[str, Any]]) -> None:
    """A call made by a program whose code execution call is not in the history (an earlier
    response the client no longer sends) loses its ``caller``: the API rejects a caller that
    names a tool it cannot find. The last assistant turn keeps them (its program runs on)."""
    runs = {
        block["id"]
        for message in messages
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "server_tool_use" and block["name"] == "code_execution"
    }
    users = [i for i, message in enumerate(messages) if message["role"] == "user"]
    for message in messages[: users[-1] if users else 0]:
        for block in message["content"]:
            caller = block.get("caller") if message["role"] == "assistant" else None
            if caller and caller["type"] != "direct" and caller.get("tool_id") not in runs:
                del block["caller"]


def _mcp_blocks(part: Any, server: Any) -> list[dict[str, Any]]:
    """An MCP call Anthropic made (``mcp_tool_use``) and its ``mcp_tool_result``."""
    call = {
        "type": "mcp_tool_use",
        "id": part.toolCallId,
        "name": part.tool_name,
        "input": part.input if isinstance(part.input, dict) else {},
        "server_name": server,
    }
    if part.state == "output-available":
        content = part.output
        is_error = False
    elif part.state == "output-error":
        content, is_error = (
            [{"type": "text", "text": part.errorText or "The MCP tool failed."}],
            True,
        )
    else:
        return [call]
    result = {"type": "mcp_tool_result", "tool_use_id": part.toolCallId, "is_error": is_error}
    result["content"] = content if isinstance(content, (str, list)) else output_text(content)
    return [call, result]


def _result_content(output: Any) -> str | list[dict[str, Any]]:
    """A tool's output as a ``tool_result``'s content: an MCP result's text and image blocks
    (other media as a note), anything else as text."""
    pieces = result_pieces(output)
    if pieces is None:
        return output_text(output)
    blocks: list[dict[str, Any]] = []
    for piece in pieces:
        if isinstance(piece, str):
            if piece:  # (the API refuses an empty text block)
                blocks.append({"type": "text", "text": piece})
        elif piece.kind == "image":
            source = {"type": "base64", "media_type": piece.media_type, "data": piece.base64}
            blocks.append({"type": "image", "source": source})
        else:
            blocks.append({"type": "text", "text": media_note(piece, "a tool result here")})
    return blocks or output_text(output)


def _assistant_step(
    parts: list[Any], settings: ProviderToolSettings
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One model step: (assistant content, tool results for the next user turn)."""
    content: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        if kind in ("text", "custom"):
            block = _text_block(part) if kind == "text" else _fallback_block(part)
            if block is not None:
                content.append(block)
            continue
        if kind == "reasoning":
            meta = (part.providerMetadata or {}).get("anthropic") or {}
            if isinstance(meta.get("signature"), str):
                content.append(
                    {"type": "thinking", "thinking": part.text, "signature": meta["signature"]}
                )
            elif isinstance(meta.get("redactedData"), str):
                content.append({"type": "redacted_thinking", "data": meta["redactedData"]})
            continue
        if not hasattr(part, "toolCallId"):
            continue  # sources, files, data parts: the model does not need them back
        state = part.state
        if part.providerExecuted:
            if state in ("input-streaming", "output-denied"):
                continue
            call_meta = getattr(part, "callProviderMetadata", None) or {}
            anthropic = call_meta.get("anthropic") if isinstance(call_meta, dict) else None
            if isinstance(anthropic, dict) and anthropic.get("type") == "mcp-tool-use":
                content += _mcp_blocks(part, anthropic.get("serverName"))
            else:
                names = settings.provider_names(part.tool_name)
                content += tools.server_tool_blocks(part, names)
            continue
        if not is_answered(part):
            continue  # no answer yet: the API rejects a tool_use without its tool_result
        call = {"type": "tool_use", "id": part.toolCallId, "name": part.tool_name}
        call["input"] = _tool_input(part)
        caller = tools.api_caller(getattr(part, "callProviderMetadata", None))
        if caller is not None:
            call["caller"] = caller
        content.append(call)
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.toolCallId}
        if state == "output-available":
            result["content"] = _result_content(part.output)
        else:
            result["content"] = part.errorText or "The user denied this tool call."
            result["is_error"] = True
        results.append(result)
    return _tool_uses_last(content), results


def messages_from_ui(
    messages: list[Any], settings: ProviderToolSettings | None = None
) -> list[dict[str, Any]]:
    """``UIMessage`` history → Anthropic ``messages`` (see the module docstring); ``settings``
    name the server tools the history's parts call by the app's names (``tool_names``).

    Consecutive turns of one role are merged: the API wants user and assistant to alternate.
    Raises :class:`RequestRejected` for a file the API cannot take.
    """
    settings = settings or AnthropicSettings()
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue  # joined into the system prompt
        if message.role == "user":
            content = []
            for part in message.parts:
                kind = getattr(part, "type", None)
                if kind == "text" and part.text:
                    content.append({"type": "text", "text": part.text})
                elif kind == "file":
                    content.append(_file_block(part.mediaType, part.url))
            add_turn(out, "user", "content", content)
            continue
        for step in steps_of(message):
            content, results = _assistant_step(step, settings)
            add_turn(out, "assistant", "content", content)
            add_turn(out, "user", "content", results)
    _drop_orphan_callers(out)
    return out
