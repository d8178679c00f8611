"""The UI message stream's field shapes, as checks that mirror the AI SDK's zod schemas (per
major): what :mod:`~chunkbridge.translators.core.validator` reports and the gating step converts.
Never run per text delta. The chunk types and their fields are stated in
:mod:`~chunkbridge.protocol_specs.ui_message_stream`."""

from __future__ import annotations

import math
from typing import Any

from chunkbridge.protocol_specs.ui_message_stream import (
    ACCEPTED_TYPES,
    DATA_CHUNK_SPEC,
    FINISH_REASONS,
    RESET_STEP_SINCE,
    Kind,
    chunk_spec,
)

__all__ = ["schema_errors", "unknown_keys", "value_fits"]


def _is_json(value: Any) -> bool:
    """Whether ``value`` is a JSON value (iterative: any depth, no recursion limit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, str | bool | int):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                return False
            stack.extend(item.values())
        else:
            return False
    return True


def _is_provider_metadata(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(inner, dict) and _is_json(inner) for inner in value.values()
    )


def _is_citation_source(source: Any) -> bool:
    if not isinstance(source, dict) or source.get("type") != "source":
        return False
    optional_ok = isinstance(source.get("title", ""), str) and _is_provider_metadata(
        source.get("providerMetadata", {})
    )
    if source.get("sourceType") == "url":
        return optional_ok and _all_str(source, "id", "url")
    if source.get("sourceType") == "document":
        return (
            optional_ok
            and _all_str(source, "id", "mediaType", "title")
            and isinstance(source.get("filename", ""), str)
        )
    return False


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_citation(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and _is_citation_source(item.get("source"))
        and all(_is_index(item[k]) for k in ("startIndex", "endIndex") if k in item)
        and isinstance(item.get("citedText", ""), str)
    )


def _is_steering_part(part: Any) -> bool:
    if not isinstance(part, dict) or not _is_provider_metadata(part.get("providerMetadata", {})):
        return False
    if part.get("type") == "text":
        return isinstance(part.get("text"), str)
    if part.get("type") == "file":
        ref = part.get("providerReference", {})
        return (
            _all_str(part, "mediaType", "url")
            and isinstance(part.get("filename", ""), str)
            and isinstance(ref, dict)
            and all(isinstance(v, str) for v in ref.values())
        )
    return False


def _all_str(obj: dict[str, Any], *keys: str) -> bool:
    return all(isinstance(obj.get(k), str) for k in keys)


def value_fits(kind: Kind, value: Any, major: int) -> bool:
    """Whether ``value`` passes the zod schema of a field of this ``kind`` for ``major``."""
    if kind is Kind.STRING:
        return isinstance(value, str)
    if kind is Kind.BOOL:
        return isinstance(value, bool)
    if kind is Kind.JSON:
        return _is_json(value)
    if kind is Kind.PROVIDER_METADATA:
        return _is_provider_metadata(value)
    if kind is Kind.TOOL_METADATA:
        return isinstance(value, dict) and _is_json(value)
    if kind is Kind.FINISH_REASON:
        return isinstance(value, str) and value in FINISH_REASONS[major]
    if kind is Kind.INPUT_ENCODING:
        return value in ("json", "text")
    if kind is Kind.CITATIONS:
        return isinstance(value, list) and all(_is_citation(c) for c in value)
    if kind is Kind.STEERING_PARTS:
        return isinstance(value, list) and all(_is_steering_part(p) for p in value)
    if kind is Kind.STRING_MAP:
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    raise AssertionError(kind)  # pragma: no cover - every Kind is handled above


def schema_errors(chunk: Any, major: int, *, reset_step: bool = False) -> list[str]:
    """Why ``uiMessageChunkSchema`` of ``major`` rejects ``chunk``; ``[]`` when it accepts it.
    ``reset_step``: the client is an ai 7 that accepts ``reset-step`` (see
    :data:`~chunkbridge.protocol_specs.ui_message_stream.RESET_STEP`).

    Unknown keys are not errors (the pinned releases use loose objects); :func:`unknown_keys`
    lists them for warnings.
    """
    if not isinstance(chunk, dict):
        return [f"chunk is a JSON {type(chunk).__name__}, not an object"]
    chunk_type = chunk.get("type")
    if not isinstance(chunk_type, str):
        return ["chunk has no string 'type'"]
    spec = chunk_spec(chunk_type)
    if spec is None:
        return [f"unknown chunk type {chunk_type!r}"]
    if major not in spec.majors:
        return [f"chunk type {chunk_type!r} does not exist in ai {major}"]
    if spec is not DATA_CHUNK_SPEC and chunk_type not in ACCEPTED_TYPES[major, reset_step]:
        # in the major, newer than the client may be: reset-step without reset_step
        return [
            f"chunk type {chunk_type!r} exists from ai {RESET_STEP_SINCE} on: an ai {major} "
            "client not known to be that new rejects it (allow it with reset_step)"
        ]
    errors = []
    for field in spec.fields.values():
        if major not in field.majors:
            continue
        if field.name not in chunk:
            if field.required:
                errors.append(f"{chunk_type}: required field {field.name!r} is missing")
            continue
        value = chunk[field.name]
        if value is None and field.kind is not Kind.JSON:
            errors.append(f"{chunk_type}: {field.name!r} is null (omit optional fields instead)")
        elif not value_fits(field.kind, value, major):
            errors.append(
                f"{chunk_type}: {field.name!r} is not a valid {field.kind.value}: {value!r:.80}"
            )
    return errors


def unknown_keys(chunk: dict[str, Any], major: int) -> list[str]:
    """Keys ``major`` does not declare for this chunk (ignored now, fatal on strict releases)."""
    spec = chunk_spec(chunk.get("type", ""))
    if spec is None:
        return []
    declared = spec.declared(major)
    return [k for k in chunk if k not in declared]
