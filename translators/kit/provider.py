"""What the model-provider dialects share: settings, history helpers and a refused request's
error.

A provider dialect builds each request from the ``UIMessage`` history the client sends (the
provider keeps no conversation), so every one of them needs the same pieces: the deployment's
model, key, system prompt, tools and generation options; which of them the client may override
per request; the history cut into model steps; files given as data URLs or http URLs. On the
way back, a refusal carries the provider's own message.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

import orjson
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from chunkbridge.kit.events import json_text
from chunkbridge.kit.turn_input import RequestRejected, TurnInput, is_answered
from chunkbridge.protocol_specs import meta_tools
from chunkbridge.protocol_specs.chat_request import DynamicToolPart, UIMessage
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL, is_approval_question
from chunkbridge.protocol_specs.mcp_results import is_call_tool_result

__all__ = [
    "DataUrl",
    "add_turn",
    "ProviderSettings",
    "ProviderToolSettings",
    "apply_overrides",
    "content_pieces",
    "finish_body",
    "model_calls",
    "output_text",
    "parse_data_url",
    "provider_error",
    "steps_of",
    "system_prompt",
    "tool_name_of",
]


class ProviderSettings(BaseModel):
    """Settings every provider dialect has (each sets its own defaults for model and path)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field("", description="the model to request")
    api_key: SecretStr | None = Field(
        None, description="API key for the provider; prefer the environment variable to the flag"
    )
    path: str = Field("", description="path of the streaming endpoint, under the upstream URL")
    system: str = Field("", description="system prompt sent before the conversation")
    max_output_tokens: int | None = Field(
        None, description="upper bound on the tokens of one answer"
    )
    options: dict[str, Any] = Field(
        {},
        description="further fields of the provider's request body, in the provider's own "
        'format (e.g. {"temperature": 0.2})',
    )
    tools: dict[str, dict[str, Any]] = Field(
        {},
        description="tools by name: {description, input_schema (JSON Schema)} for tools the app "
        "runs, or a provider-native tool definition (it has a 'type'), sent as is",
    )
    body_overrides: list[str] = Field(
        [],
        description="top-level fields of the provider request that the client's request body "
        "may set (e.g. model temperature); none by default",
    )


class ProviderToolSettings(ProviderSettings):
    """The settings of a provider dialect whose provider runs tools of its own (server tools,
    hosted tools, code execution), which its stream names. A gateway cannot know the key an
    app gave such a tool (the AI SDK shows it under the app's key): by default a tool part is
    named as the provider streams the tool, and ``tool_names`` renames it — the stream shows
    the app's name, and the history's parts of that name go back under the provider's."""

    tool_names: dict[str, str] = Field(
        {},
        description="the provider's own tools under the names the app gives them: "
        '{"provider_name": "app_name"} (e.g. {"tool_search_tool_regex": "toolSearch"}); '
        "the tool parts are tool-<app_name>; default: the provider's names",
    )

    def provider_names(self, name: str) -> list[str]:
        """The provider's names of the tool a history part calls ``name``: those renamed to
        it, else ``name`` itself."""
        return [theirs for theirs, ours in self.tool_names.items() if ours == name] or [name]


def apply_overrides(body: dict[str, Any], turn: TurnInput, allowed: list[str]) -> dict[str, Any]:
    """``body`` with the fields the client's request sets, for the ``allowed`` names only."""
    if not allowed:
        return body
    extra = turn.request.extra_body
    for name in allowed:
        if name in extra and name not in ("stream", "messages", "contents", "input"):
            body[name] = extra[name]
    return body


def finish_body(
    body: dict[str, Any], tools: list[Any], turn: TurnInput, settings: ProviderSettings
) -> dict[str, Any]:
    """``body`` with the ``tools`` (when there are any), the configured ``options`` over it, and
    the fields the client's request may set (``body_overrides``) over those."""
    if tools:
        body["tools"] = tools
    body.update(settings.options)
    return apply_overrides(body, turn, settings.body_overrides)


def system_prompt(settings: ProviderSettings, messages: list[UIMessage]) -> str:
    """The configured system prompt followed by the text of ``system`` messages in the history."""
    texts = [settings.system] if settings.system else []
    texts += [m.text() for m in messages if m.role == "system" and m.text()]
    return "\n\n".join(texts)


def steps_of(message: UIMessage) -> Iterator[list[Any]]:
    """An assistant message's parts cut at ``step-start``: one list per model call, since a
    provider sees each call's output and the tool results that followed it as their own turns.
    The calls the gateway split out of a ``tools_call`` batch are the model's one batch call
    again (:func:`model_calls`). An approval's question form (ai 5) is the gateway's, never the
    model's: left out (the decision reaches the provider through
    ``TurnInput.approval_answers``)."""
    step: list[Any] = []
    for part in message.parts:
        if getattr(part, "tool_name", None) == QUESTION_TOOL and is_approval_question(
            getattr(part, "input", None)
        ):
            continue
        if getattr(part, "type", None) == "step-start":
            if step:
                yield model_calls(step)
            step = []
        else:
            step.append(part)
    if step:
        yield model_calls(step)


def model_calls(step: list[Any]) -> list[Any]:
    """``step`` with the tool parts of each ``tools_call`` batch (their provider metadata names
    it: ``meta_tools.split_metadata``) replaced, where the first of them was, by the batch call
    the model made — answered by one result once each of its calls is."""
    batches: dict[str, list[tuple[int, Any]]] = {}
    out: list[Any] = []
    for part in step:
        batch = meta_tools.batch_of(getattr(part, "callProviderMetadata", None))
        if batch is None:
            out.append(part)
            continue
        if batch[0] not in batches:
            batches[batch[0]] = []
            out.append(batch[0])  # the batch's place
        batches[batch[0]].append((batch[1], part))
    if not batches:
        return step
    return [_batch_part(p, batches[p]) if isinstance(p, str) else p for p in out]


def _batch_part(call_id: str, members: list[tuple[int, Any]]) -> DynamicToolPart:
    parts = [part for _, part in sorted(members, key=lambda member: member[0])]
    calls = [(part.tool_name, {} if part.input is None else part.input) for part in parts]
    batch, meta = meta_tools.batch_call(calls, parts[0].callProviderMetadata)
    fields: dict[str, Any] = {
        "type": "dynamic-tool",
        "toolName": meta_tools.CALL,
        "toolCallId": call_id,
        "state": "input-available",
        "input": batch,
    }
    if all(is_answered(part) for part in parts):
        results = [_call_result(part) for part in parts]
        fields.update(state="output-available", output=meta_tools.batch_result(results))
    if meta is not None:
        fields["callProviderMetadata"] = meta
    return DynamicToolPart.model_validate(fields)


def _call_result(part: Any) -> tuple[str, list[dict[str, Any]]]:
    """One answered call of a batch as the batch's result holds it: its tool and content."""
    if part.state == "output-available":
        output = part.output
        if is_call_tool_result(output):
            return part.tool_name, list(output["content"])
        return part.tool_name, [{"type": "text", "text": output_text(output)}]
    if part.state == "output-error":
        error = f"Error: {part.errorText or 'the tool call failed.'}"
    else:
        reason = part.approval.reason if part.approval is not None else None
        error = "The user denied this tool call." + (f" {reason}" if reason else "")
    return part.tool_name, [{"type": "text", "text": error}]


def tool_name_of(part: Any) -> str | None:
    """The tool name of a tool part (``tool-<name>`` or ``dynamic-tool``), else ``None``."""
    if not hasattr(part, "toolCallId"):
        return None
    name: str = part.tool_name
    return name


@dataclass(frozen=True, slots=True)
class DataUrl:
    """A ``data:`` URL taken apart (:func:`parse_data_url`): its media type and payload."""

    media_type: str
    #: The payload, base64-encoded (as every provider wants inline data).
    base64: str

    def text(self) -> str:
        """The payload as UTF-8 text (undecodable bytes replaced): a text file's content."""
        return base64.b64decode(self.base64).decode("utf-8", "replace")


def parse_data_url(url: str) -> DataUrl | None:
    """``data:<type>[;base64],<payload>`` → its media type and base64 payload; ``None`` for
    other URLs; :class:`RequestRejected` for a data URL that cannot be decoded."""
    if not url.startswith("data:"):
        return None
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise RequestRejected("A file's data URL has no ',' before its payload.")
    fields = header.split(";")
    media_type = fields[0] or "text/plain"
    if "base64" in fields[1:]:
        try:
            base64.b64decode(payload, validate=True)
        except binascii.Error as exc:
            raise RequestRejected(f"A file's data URL is not valid base64: {exc}") from exc
        return DataUrl(media_type, payload)
    return DataUrl(media_type, base64.b64encode(unquote_to_bytes(payload)).decode("ascii"))


def provider_error(status: int, body: bytes) -> dict[str, Any]:
    """The ``error`` object of a provider's refusal (``{"error": {...}}``, or a list of one, as
    some Google front ends send): its message is what the user should read. A generic one naming
    the status when the body is not that."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, list) and parsed:
        parsed = parsed[0]
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        error: dict[str, Any] = parsed["error"]
        return error
    return {"message": f"The model provider refused the request ({status})."}


def content_pieces(content: Any) -> list[tuple[str, Any]]:
    """A message delta's content in whatever shape the server sends it, as ``(kind, value)``
    pieces in order: ``("text", str)``, ``("reasoning", str)``, or ``("unknown", piece)``.

    A string is text; a list holds content parts (Mistral's reasoning models):
    ``{"type": "text", "text"}`` is text, ``{"type": "thinking", "thinking": [{"type": "text",
    "text"}]}`` reasoning, as the AI SDK's ``openai-compatible`` provider reads them. Any other
    part that carries a ``text`` string is kept as text; what carries none is ``unknown`` for
    the caller to keep visibly (never dropped). Empty text is left out."""
    if content is None:
        return []
    if isinstance(content, str):
        return [("text", content)] if content else []
    pieces: list[tuple[str, Any]] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, str):
            kind, text = "text", part
        elif not isinstance(part, dict):
            pieces.append(("unknown", part))
            continue
        elif part.get("type") == "thinking" and isinstance(part.get("thinking"), list):
            kind = "reasoning"
            text = "".join(_texts(part["thinking"]))
        elif isinstance(part.get("text"), str):
            kind, text = "text", part["text"]
        else:
            pieces.append(("unknown", part))
            continue
        if text:
            pieces.append((kind, text))
    return pieces


def _texts(parts: list[Any]) -> Iterator[str]:
    for part in parts:
        text = part.get("text") if isinstance(part, dict) else None
        if part.get("type") == "text" and isinstance(text, str):
            yield text


def output_text(output: Any) -> str:
    """A tool's output as the text a provider wants back: a string as it is, anything else as
    JSON."""
    return output if isinstance(output, str) else json_text(output)


def add_turn(turns: list[dict[str, Any]], role: str, key: str, items: list[Any]) -> None:
    """Append ``items`` to ``turns`` as a turn of ``role`` (under ``key``: ``content``,
    ``parts``…), merged into the last turn when that is of the same role: the APIs that want user
    and model turns to alternate. No items: nothing."""
    if not items:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1][key].extend(items)
    else:
        turns.append({"role": role, key: items})
