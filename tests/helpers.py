"""Test helpers in the spirit of h11's ConnectionPair: feed things, assert protocol meaning."""

from __future__ import annotations

from typing import Any

import orjson

from translators.guard import CloseReason, StreamGuard
from translators.sse_codec import DONE_FRAME, SseDecoder, encode_chunks
from translators.validator import validate_sse


def guard_all(
    chunks: list[Any],
    *,
    target: int = 5,
    reason: CloseReason | None = CloseReason.COMPLETED,
    message_id: str | None = None,
    **close_kwargs: Any,
) -> tuple[list[dict[str, Any]], StreamGuard]:
    guard = StreamGuard(target=target, message_id=message_id)
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += guard.feed(chunk)
    if reason is not None:
        out += guard.close(reason, **close_kwargs)
    return out, guard


def types(chunks: list[dict[str, Any]]) -> list[str]:
    return [c["type"] for c in chunks]


def to_sse(chunks: list[dict[str, Any]]) -> bytes:
    return encode_chunks(chunks) + DONE_FRAME


def decode_sse(body: bytes) -> list[dict[str, Any]]:
    """An SSE body back to chunks (``[DONE]`` left out)."""
    events = SseDecoder().decode_bytes(body)
    return [orjson.loads(e.data) for e in events if e.data != "[DONE]"]


def assert_valid_for(body: bytes, *majors: int) -> None:
    for major in majors or (5, 6, 7):
        report = validate_sse(body, major)
        assert report.ok, (major, [str(e) for e in report.errors], body[:2000])


def translate(
    dialect: str, events: list[Any], *, target: int = 5, close: bool = True, **options: Any
) -> tuple[list[dict[str, Any]], Any]:
    """Feed events (dicts, or raw str frames) to a fresh translator; close at the end."""
    from gateway.dialects import create_translator
    from translators.base import TranslatorOptions

    translator = create_translator(dialect, TranslatorOptions(target=target, **options))
    out: list[dict[str, Any]] = []
    for event in events:
        out += translator.feed_frame(event) if isinstance(event, str) else translator.feed(event)
    if close:
        out += translator.close(CloseReason.UPSTREAM_CLOSED)
    return out, translator


def of_type(chunks: list[dict[str, Any]], chunk_type: str) -> list[dict[str, Any]]:
    return [c for c in chunks if c["type"] == chunk_type]


def text_of(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
