"""Recorded upstream sessions: the one file format ``record`` writes and ``replay``, the golden
files and ``mock-upstream`` read.

A recording is ``FILE.jsonl``: one upstream message per line, exactly the JSON payload the
upstream sent (a WebSocket text frame, or an SSE ``data:`` payload such as OpenAI's ``[DONE]``);
blank lines are skipped; the end of the file is the upstream closing. Lines are split on ``\\n``
only (``str.splitlines()`` would also split on U+2028 inside JSON strings), a trailing ``\\r`` is
dropped, and bytes that are not UTF-8 are kept (``surrogateescape``) so that such a frame reaches
the translator as the malformed input it is. ``FILE.jsonl.timing`` (optional) holds, per line,
the milliseconds since the prompt at which it arrived.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

import orjson

__all__ = ["RecordingWriter", "frames_of", "read_frames", "read_pauses", "timing_path"]


def frames_of(text: str) -> list[str]:
    """The frames of a recording's text."""
    return [line.removesuffix("\r") for line in text.split("\n") if line.strip()]


def read_frames(path: Path) -> list[str]:
    return frames_of(path.read_bytes().decode("utf-8", "surrogateescape"))


def timing_path(path: Path) -> Path:
    return path.with_name(path.name + ".timing")


def read_pauses(path: Path) -> list[float]:
    """Seconds to wait before each frame, from ``FILE.jsonl.timing``; ``[]`` when there is none."""
    timing = timing_path(path)
    if not timing.exists():
        return []
    offsets = [float(x) for x in timing.read_text().split()]
    return [max(0.0, b - a) / 1000 for a, b in zip([0.0, *offsets], offsets, strict=False)]


def _one_line(frame: str) -> str:
    """A frame as one line: JSON re-encoded compactly (same key order), other text as is."""
    try:
        return orjson.dumps(orjson.loads(frame)).decode()
    except orjson.JSONDecodeError:
        return frame.replace("\r", " ").replace("\n", " ")


class RecordingWriter:
    """Writes frames (and their arrival times) as a recording; a context manager."""

    def __init__(self, path: Path) -> None:
        self._lines = path.open("w", encoding="utf-8", errors="surrogateescape")
        self._timing = timing_path(path).open("w")
        self.count = 0

    def write(self, frame: str | bytes, at_ms: float) -> None:
        text = frame if isinstance(frame, str) else frame.decode("utf-8", "surrogateescape")
        self._lines.write(_one_line(text) + "\n")
        self._timing.write(f"{at_ms:.1f}\n")
        self.count += 1

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._lines.close()
        self._timing.close()
