"""Reading upstream events: the checks a handler makes, and the texts a dialect falls back on.

A handler reads fields with :func:`require_str` and friends; a field of the wrong type raises
:class:`MalformedEvent`, the only exception blamed on the upstream (the translator's policy for
malformed events takes it from there). Anything else a handler raises is a bug of ours.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = [
    "AGENT_ERROR",
    "PROVIDER_ERROR",
    "TOOL_ERROR",
    "MalformedEvent",
    "error_message",
    "flat_text_delta",
    "json_text",
    "optional_str",
    "preview",
    "require_dict",
    "require_list",
    "require_str",
]

#: What an ``error`` says when a model provider's error carries no message.
PROVIDER_ERROR = "The model provider reported an error."
#: ... when an agent's failure carries none.
AGENT_ERROR = "The agent failed."
#: ... when a tool's failure carries none.
TOOL_ERROR = "The tool failed."


class MalformedEvent(ValueError):
    """An event field has the wrong type: the upstream's fault (raised in handlers, caught in
    :meth:`Translator.feed`)."""


def require_str(event: dict[str, Any], key: str) -> str:
    """``event[key]``, which must be a string (:class:`MalformedEvent` otherwise)."""
    value = event.get(key)
    if not isinstance(value, str):
        raise MalformedEvent(f"{key!r} must be a string")
    return value


def optional_str(event: dict[str, Any], key: str) -> str | None:
    """``event[key]`` when it is a string, ``None`` when absent or null (:class:`MalformedEvent`
    for any other type)."""
    value = event.get(key)
    if value is not None and not isinstance(value, str):
        raise MalformedEvent(f"{key!r} must be a string")
    return value


def require_dict(value: Any, what: str) -> dict[str, Any]:
    """``value``, which must be a JSON object (:class:`MalformedEvent` naming ``what``
    otherwise)."""
    if not isinstance(value, dict):
        raise MalformedEvent(f"{what} must be an object")
    return value


def require_list(value: Any, what: str) -> list[Any]:
    """``value``, which must be a JSON array (:class:`MalformedEvent` naming ``what``
    otherwise)."""
    if not isinstance(value, list):
        raise MalformedEvent(f"{what} must be a list")
    return value


def flat_text_delta(
    event: dict[str, Any], kind: str, id_key: str, part: str | None, keys: frozenset[str]
) -> str | None:
    """For :meth:`Translator.fast_text_delta` of vocabularies whose text delta is one flat event
    (``{type, <id_key>, delta, …}``): the delta when ``event`` is exactly such an event for the
    open part ``part`` (no key outside ``keys``, a non-empty string delta), else ``None``."""
    if part is None or event.get(id_key) != part or event.get("type") != kind:
        return None
    for key in event:
        if key not in keys:
            return None
    delta = event.get("delta")
    return delta if type(delta) is str and delta else None


def error_message(value: Any, default: str) -> str:
    """An upstream error as short text: a string, ``{message}``, or ``{error: {message}}``."""
    for _ in range(8):  # bounded: an error nested deeper than this is not a message
        if isinstance(value, str) and value:
            return value
        if not isinstance(value, dict):
            break
        for key in ("message", "error", "detail"):
            if key in value:
                value = value[key]
                break
        else:
            break
    return default


#: How much of a malformed frame the ``data-upstream-malformed`` part shows.
_PREVIEW_CHARS = 500


def preview(raw: Any) -> str:
    """A bounded, printable preview of a frame or value: the text of a frame, ``repr`` of a
    parsed value (never raises: a value nested too deeply for ``repr`` is described instead)."""
    if isinstance(raw, bytes):
        return raw[: _PREVIEW_CHARS * 4].decode("utf-8", "replace")[:_PREVIEW_CHARS]
    if isinstance(raw, str):
        return raw[:_PREVIEW_CHARS]
    try:
        return repr(raw)[:_PREVIEW_CHARS]
    except RecursionError:
        return f"<a JSON {type(raw).__name__} nested too deeply to show>"


def json_text(value: Any) -> str:
    """``value`` as JSON text, whatever an upstream sent: orjson's, and the standard library's
    for what orjson refuses (integers beyond 64 bits, which JSON allows)."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
