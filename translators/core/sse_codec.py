"""Server-sent events, both ways: UI chunks → SSE bytes, and SSE text → events.

Encoding follows what the AI SDK server writes (spec §1.2): one ``data: <compact JSON>\\n\\n`` per
chunk, ``data: [DONE]\\n\\n`` at the end, comment lines for keep-alives. The encoder is the last
step of the hot path, so it trusts the guard's output shape and only does what must happen per
chunk: drop ``null`` optional fields, keep required ``unknown`` keys, and fall back to a scrubbing
slow path when orjson refuses a value (lone surrogates, non-string keys, non-JSON objects).

Decoding mirrors eventsource-parser 3.1.1 as the AI SDK client runs it (spec §1.3): ``\\n``,
``\\r\\n`` and ``\\r`` line ends, a leading BOM stripped, one space after the colon removed,
``data`` lines joined with ``\\n``, events dispatched on a blank line only when they have data.
:class:`SseDecoder` is incremental (``decode``/``flush``, like httpx's ``LineDecoder``) so it can
sit on a socket, and it reports what the client would silently drop (an event with no blank line
after it)."""

from __future__ import annotations

import codecs
import json
import math
from dataclasses import dataclass
from typing import Any, Final

import orjson

from chunkbridge.protocol_specs.ui_message_stream import DATA_PREFIX, REQUIRED_JSON_KEYS

__all__ = [
    "DONE_FRAME",
    "KEEPALIVE_FRAME",
    "STREAM_OPEN_FRAME",
    "SseDecoder",
    "SseEvent",
    "as_written",
    "decode_chunks",
    "encode_chunk",
    "encode_chunks",
    "json_safe",
]

DONE_FRAME: Final = b"data: [DONE]\n\n"
KEEPALIVE_FRAME: Final = b": keep-alive\n\n"
STREAM_OPEN_FRAME: Final = b": stream-open\n\n"
_DATA_REQUIRED: Final = REQUIRED_JSON_KEYS[DATA_PREFIX]


#: Nesting kept by the scrubbing slow path; deeper values are replaced by :data:`TOO_DEEP` (orjson
#: itself stops at 254 levels, and Python's recursion limit is not far beyond).
MAX_DEPTH: Final = 200
TOO_DEEP: Final = "[nested too deeply]"


def _scrub(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy: lone surrogates become U+FFFD, keys become strings, others ``str()``,
    values nested deeper than :data:`MAX_DEPTH` become :data:`TOO_DEEP`.

    The UTF-16 round trip joins surrogate pairs into their character (as a JS string would read
    them) and turns each lone surrogate into one U+FFFD.
    """
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, bool | int):
        return value
    if depth >= MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, dict):
        return {_scrub(str(k)): _scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, depth + 1) for v in value]
    return _scrub(str(value))


def _normalize(chunk: dict[str, Any]) -> dict[str, Any]:
    """Omit ``null`` optional fields; keep (or add as ``null``) required ``unknown`` keys."""
    chunk_type = chunk.get("type")
    required = REQUIRED_JSON_KEYS.get(chunk_type, ())  # type: ignore[arg-type]
    if not required and isinstance(chunk_type, str) and chunk_type.startswith(DATA_PREFIX):
        required = _DATA_REQUIRED
    out = {k: v for k, v in chunk.items() if v is not None or k in required}
    for key in required:
        out.setdefault(key, None)
    return out


def as_written(chunk: dict[str, Any]) -> dict[str, Any]:
    """``chunk`` as a client parses it back: its ``null`` optional fields left out, its
    required ``unknown`` keys present (values only the scrubbing path writes stay as they are:
    :func:`json_safe` makes them what the client read)."""
    if None in chunk.values() or chunk.get("type") in REQUIRED_JSON_KEYS:
        return _normalize(chunk)
    if chunk.get("type", "").startswith(DATA_PREFIX) and "data" not in chunk:
        return _normalize(chunk)
    return chunk


def json_safe(value: Any) -> Any:
    """``value`` as it reads back from what :func:`encode_chunk` writes of it: itself when
    orjson takes it, else the scrubbed copy."""
    try:
        orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return _scrub(value)
    return value


def encode_chunk(chunk: dict[str, Any]) -> bytes:
    """One SSE event for one UI chunk. Never raises for a dict of JSON-ish values (any depth,
    any size, lone surrogates, integers beyond 64 bits, NaN)."""
    chunk = as_written(chunk)
    try:
        body = orjson.dumps(chunk)
    except (TypeError, orjson.JSONEncodeError):
        # Slow path for what orjson refuses; the stdlib also takes integers beyond 64 bits.
        body = json.dumps(_scrub(chunk), ensure_ascii=False, separators=(",", ":")).encode()
    return b"data: " + body + b"\n\n"


def encode_chunks(chunks: list[dict[str, Any]]) -> bytes:
    """Several events in one write (coalescing: one socket write per batch of chunks)."""
    if len(chunks) == 1:
        return encode_chunk(chunks[0])
    return b"".join([encode_chunk(c) for c in chunks])


def decode_chunks(body: bytes) -> list[dict[str, Any]]:
    """The chunks of bytes :func:`encode_chunks` wrote (a chunk log read back: comments and
    ``[DONE]`` are no chunks)."""
    decoder = SseDecoder()
    events = decoder.decode_bytes(body)
    last = decoder.flush()
    if last is not None:
        events.append(last)
    chunks: list[dict[str, Any]] = []
    for event in events:
        if not event.data or event.data == "[DONE]":
            continue
        try:
            chunks.append(orjson.loads(event.data))
        except orjson.JSONDecodeError:  # an integer beyond 64 bits: the standard library's
            chunks.append(json.loads(event.data))
    return chunks


@dataclass(frozen=True, slots=True)
class SseEvent:
    data: str
    event: str | None = None
    id: str | None = None
    #: 1-based line of the event's first field line (for messages that point at the input).
    line: int = 0


class SseDecoder:
    """Incremental SSE parser: ``decode(text)`` → complete events; ``flush()`` at EOF.

    Feed ``str``; use :meth:`decode_bytes` for raw bytes (UTF-8, invalid bytes → U+FFFD, as
    ``TextDecoderStream`` does). Never raises.
    """

    __slots__ = (
        "_buffer",
        "_data",
        "_data_lines",
        "_data_size",
        "_event",
        "_id",
        "_first",
        "_line",
        "_event_line",
        "_utf8",
        "comments",
        "ignored_fields",
    )

    def __init__(self) -> None:
        self._buffer = ""
        self._data: list[str] = []
        self._data_lines = 0
        self._data_size = 0
        self._event: str | None = None
        self._id: str | None = None
        self._first = True
        self._line = 0
        self._event_line = 0
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        #: Comment lines seen (keep-alives), and field lines the client ignores.
        self.comments = 0
        self.ignored_fields: list[tuple[int, str]] = []

    @property
    def pending(self) -> int:
        """Characters held for the event under way (its data lines and the partial line): what
        a reader bounds, so that an event without an end cannot grow without limit."""
        return len(self._buffer) + self._data_size

    def decode_bytes(self, data: bytes) -> list[SseEvent]:
        return self.decode(self._utf8.decode(data))

    def decode(self, text: str) -> list[SseEvent]:
        if self._first and text:
            self._first = False
            if text.startswith("\ufeff"):
                text = text[1:]
        buffer = self._buffer + text if self._buffer else text
        events: list[SseEvent] = []
        start = 0
        length = len(buffer)
        while start < length:
            lf = buffer.find("\n", start)
            cr = buffer.find("\r", start, lf if lf != -1 else length)
            if cr != -1:
                if cr == length - 1:  # a CR at the end may be the first half of CRLF
                    break
                end, next_start = cr, cr + 2 if buffer[cr + 1] == "\n" else cr + 1
            elif lf != -1:
                end, next_start = lf, lf + 1
            else:
                break
            self._line_received(buffer[start:end], events)
            start = next_start
        self._buffer = buffer[start:]
        return events

    def flush(self) -> SseEvent | None:
        """At EOF: the event left without its blank line, which the AI SDK client drops."""
        tail = self._utf8.decode(b"", final=True)
        if tail:
            self.decode(tail)
        if self._buffer:
            pending: list[SseEvent] = []
            self._line_received(self._buffer.rstrip("\r"), pending)
            self._buffer = ""
        if self._data_lines == 0:
            return None
        event = SseEvent("\n".join(self._data), self._event, self._id, self._event_line)
        self._reset_event()
        return event

    def _reset_event(self) -> None:
        self._data = []
        self._data_lines = 0
        self._data_size = 0
        self._event = None
        self._id = None

    def _line_received(self, line: str, events: list[SseEvent]) -> None:
        self._line += 1
        if not line:
            if self._data_lines:
                events.append(
                    SseEvent("\n".join(self._data), self._event, self._id, self._event_line)
                )
            self._reset_event()
            return
        if line[0] == ":":
            self.comments += 1
            return
        colon = line.find(":")
        if colon == -1:
            field, value = line, ""
        else:
            field = line[:colon]
            value = line[colon + 2 :] if line[colon + 1 : colon + 2] == " " else line[colon + 1 :]
        if field == "data":
            if self._data_lines == 0:
                self._event_line = self._line
            self._data.append(value)
            self._data_lines += 1
            self._data_size += len(value) + 1
        elif field == "event":
            self._event = value or None
        elif field == "id":
            if "\0" not in value:
                self._id = value
        else:
            self.ignored_fields.append((self._line, field))
