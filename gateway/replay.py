"""Replay a recorded upstream session through a translator into an SSE body.

A recording is ``.jsonl``: one upstream message per line, exactly the JSON payload the upstream
sent (a WebSocket text frame, or an SSE ``data:`` payload such as OpenAI's ``[DONE]``). Blank
lines are skipped; a line that is not JSON is a malformed event, never a crash. The end of the
file is the upstream closing the connection. Ids are deterministic, so the output is
byte-identical for the same input: that is what golden files rely on.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from gateway.dialects import create_translator
from translators.base import TranslatorOptions, UnknownEventPolicy
from translators.guard import CloseReason
from translators.sse_codec import DONE_FRAME, encode_chunks

__all__ = ["golden_diff", "replay_lines", "replay_file"]


def replay_lines(
    dialect: str,
    lines: list[str],
    *,
    target: int = 5,
    unknown_events: UnknownEventPolicy = UnknownEventPolicy.FORWARD,
    message_id: str | None = None,
) -> bytes:
    translator = create_translator(
        dialect,
        TranslatorOptions(target=target, unknown_events=unknown_events, message_id=message_id),
    )
    out: list[bytes] = []
    for line in lines:
        if not line.strip():
            continue
        if translator.done:
            break
        out.append(encode_chunks(translator.feed_frame(line)))
    out.append(encode_chunks(translator.close(CloseReason.UPSTREAM_CLOSED)))
    out.append(DONE_FRAME)
    return b"".join(out)


def replay_file(dialect: str, path: Path, *, target: int = 5, **options: object) -> bytes:
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    # split on "\n" only: str.splitlines() would also split on U+2028 inside JSON strings
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return replay_lines(dialect, lines, target=target, **options)  # type: ignore[arg-type]


def golden_diff(expected: bytes, actual: bytes, name: str) -> str:
    """A unified diff of two SSE bodies ('' when equal), one event per line."""
    if expected == actual:
        return ""
    a = expected.decode("utf-8", "replace").splitlines(keepends=True)
    b = actual.decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, fromfile=name, tofile="replay output"))
