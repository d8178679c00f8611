"""What every dialect translator shares: the calling contract, event dispatch, bad input, the guard.

A translator is a sans-I/O state machine (h11/wsproto style): construct it with
:class:`TranslatorOptions`, call :meth:`Translator.feed` with each upstream event (a parsed JSON
value) or :meth:`Translator.feed_frame` with each raw frame (a WebSocket text frame, an SSE
``data:`` payload), and :meth:`Translator.close` once when the upstream is gone. Each call
returns UI chunks that already went through the :class:`~translators.guard.StreamGuard`, so they
form a stream every target client accepts. ``feed`` and ``close`` never raise.

A dialect module only maps: it fills ``HANDLERS`` (upstream ``type`` → method) and returns raw
chunks; it may return :func:`close_request` to end the turn with a reason. The base class owns
the turn lifecycle and the policy for what a dialect does not know:

* an event whose ``type`` has no handler is *unknown*: with policy ``forward`` (default) it
  becomes a transient ``data-<type>`` part carrying the event; ``drop`` counts it; ``error``
  ends the turn;
* an event that is not a JSON object, has no string ``type``, or whose fields have the wrong
  types is *malformed*: ``forward`` sends a transient ``data-upstream-malformed`` part; ``drop``
  counts it; ``error`` ends the turn with an error chunk.

Deterministic: ids come from the injected ``id_factory``; no clock, no randomness.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

import orjson

from protocol_specs.ui_message_stream import DATA_PREFIX, DEFAULT_TARGET
from translators.gating import ConversionHook
from translators.guard import CloseReason, RepairHook, StreamGuard
from translators.sse_codec import encode_chunk, encode_chunks

__all__ = [
    "Chunk",
    "IdFactory",
    "Translator",
    "TranslatorOptions",
    "UnknownEventPolicy",
    "close_request",
    "counter_ids",
]

Chunk = dict[str, Any]
#: ``id_factory(kind) -> id``; ``kind`` is ``"text"``, ``"reasoning"``, ``"tool"``, ``"msg"``…
IdFactory = Callable[[str], str]

_CLOSE = "\x00close"  # never a UI chunk type: a request from a handler to end the turn


class UnknownEventPolicy(Enum):
    FORWARD = "forward"
    DROP = "drop"
    ERROR = "error"


def counter_ids() -> IdFactory:
    """Deterministic ids ``<kind>-1``, ``<kind>-2``… (a counter per kind): golden-file friendly."""
    counters: Counter[str] = Counter()

    def next_id(kind: str) -> str:
        counters[kind] += 1
        return f"{kind}-{counters[kind]}"

    return next_id


@dataclass(slots=True)
class TranslatorOptions:
    #: Id source for parts the upstream gives no id for. Default: :func:`counter_ids`.
    id_factory: IdFactory | None = None
    #: AI SDK major of the client (5 is accepted by 5, 6 and 7).
    target: int = DEFAULT_TARGET
    unknown_events: UnknownEventPolicy = UnknownEventPolicy.FORWARD
    #: ``start.messageId``: the assistant message being continued (spec §5.4), if any.
    message_id: str | None = None
    #: Send tool parts as ``dynamic-tool`` (tools the app does not define) instead of
    #: ``tool-<name>``.
    dynamic_tools: bool = False
    #: Replace upstream error texts by generic ones in ``error`` chunks (they can leak internals).
    mask_errors: bool = False
    on_repair: RepairHook | None = None
    on_conversion: ConversionHook | None = None
    #: Dialect-specific settings (documented in each dialect's spec module).
    extra: dict[str, Any] = field(default_factory=dict)


def close_request(
    reason: CloseReason,
    error_text: str | None = None,
    finish_reason: str | None = None,
    message_metadata: Any = None,
) -> Chunk:
    """What a handler returns (last) to end the turn; the base class turns it into ``close``."""
    return {
        "type": _CLOSE,
        "reason": reason,
        "error_text": error_text,
        "finish_reason": finish_reason,
        "message_metadata": message_metadata,
    }


_NOT_JSON = object()
_loads = orjson.loads
_dumps = orjson.dumps


def _loads_lenient(frame: str | bytes) -> Any:
    """Slow path for valid JSON orjson refuses: lone surrogate escapes (``"\\ud800"``), which
    JavaScript backends produce from half an emoji. The encoder replaces them with U+FFFD."""
    try:
        return json.loads(frame, parse_constant=_no_constants)
    except ValueError:
        return _NOT_JSON


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class MalformedEvent(ValueError):
    """A handler found a field of the wrong type (raised inside handlers, caught in ``feed``)."""


def require_str(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    if not isinstance(value, str):
        raise MalformedEvent(f"{key!r} must be a string")
    return value


def optional_str(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    if value is not None and not isinstance(value, str):
        raise MalformedEvent(f"{key!r} must be a string")
    return value


def error_message(value: Any, default: str) -> str:
    """An upstream error as short text: a string, ``{message}``, or ``{error: {message}}``."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, dict):
        for key in ("message", "error", "detail"):
            if key in value:
                return error_message(value[key], default)
    return default


Handler = Callable[[Any, dict[str, Any]], list[Chunk]]
_HANDLER_TABLES: dict[type, dict[str, Handler]] = {}


def _handler_table(cls: type[Translator]) -> dict[str, Handler]:
    """``HANDLERS`` resolved to functions once per class (not bound methods per stream)."""
    table = _HANDLER_TABLES.get(cls)
    if table is None:
        table = {kind: getattr(cls, name) for kind, name in cls.HANDLERS.items()}
        _HANDLER_TABLES[cls] = table
    return table


class Translator:
    """Base class: subclasses set :attr:`dialect` and :attr:`HANDLERS`, and implement handlers."""

    #: Registered dialect name (``chunkbridge dialects`` lists them).
    dialect: ClassVar[str] = ""
    #: One line for ``chunkbridge dialects``.
    summary: ClassVar[str] = ""
    #: upstream ``type`` → handler method name.
    HANDLERS: ClassVar[dict[str, str]] = {}
    #: Raw frames that end the upstream stream (e.g. OpenAI's ``[DONE]``).
    TERMINAL_FRAMES: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        self.options = options = options or TranslatorOptions()
        self.ids: IdFactory = options.id_factory or counter_ids()
        self.guard = StreamGuard(
            target=options.target,
            message_id=options.message_id,
            on_repair=options.on_repair,
            on_conversion=options.on_conversion,
            mask_errors=options.mask_errors,
        )
        #: ``unknown-event:<type>``, ``dropped-unknown-event``, ``malformed-event``…
        self.stats: Counter[str] = Counter()
        #: Upstream events fed (a plain int: this is counted on the hot path).
        self.events = 0
        self._handlers = _handler_table(type(self))
        #: What ``close`` uses when the upstream ends after the dialect saw its own ending.
        self.pending_close: Chunk | None = None
        #: Open text / reasoning part ids (one of each at a time).
        self._text_id: str | None = None
        self._reasoning_id: str | None = None
        #: The guard's open text ids (the same dict object for the guard's whole life).
        self._guard_open_text = self.guard.model.open_text
        #: Bytes of a ``text-delta`` event for the open text part up to its delta (hot path).
        self._delta_prefix = b""

    # -- the calling contract ------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """The turn is over (a terminal event or ``close``): stop reading the upstream."""
        return self.guard.finished

    def feed_frame(self, frame: str | bytes) -> list[Chunk]:
        """One raw upstream frame (JSON text). Never raises."""
        if self.TERMINAL_FRAMES:
            text = (
                frame.strip()
                if isinstance(frame, str)
                else frame.strip().decode("utf-8", "replace")
            )
            if text in self.TERMINAL_FRAMES:
                return self.feed_terminal_frame(text)
        try:
            event = orjson.loads(frame)
        except orjson.JSONDecodeError as exc:
            event = _loads_lenient(frame)
            if event is _NOT_JSON:
                return self._malformed(f"not JSON ({exc.msg})", frame)
        return self.feed(event)

    def encode_frame(self, frame: str | bytes) -> bytes:
        """One raw frame straight to SSE bytes: ``encode_chunks(self.feed_frame(frame))``.

        The hot path: a plain text delta for the part that is already open (the guard agreeing
        that it is open inside a step) skips the chunk dict and the generic encoder and writes
        the pre-built event prefix plus the JSON-encoded delta. The bytes are identical to the
        general path's; everything else takes the general path. Never raises.
        """
        try:
            event = _loads(frame)
        except orjson.JSONDecodeError:
            return encode_chunks(self.feed_frame(frame))
        text_id = self._text_id
        if text_id in self._guard_open_text and self.guard._in_step and type(event) is dict:
            delta = self.fast_text_delta(event)
            if delta is not None:
                self.events += 1
                try:
                    return self._delta_prefix + _dumps(delta) + b"}\n\n"
                except orjson.JSONEncodeError:
                    return encode_chunk({"type": "text-delta", "id": text_id, "delta": delta})
        return encode_chunks(self.feed(event))

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        """The text of ``event`` if it is a plain, non-empty text delta (doing the dialect's own
        bookkeeping for it), else ``None``. Dialects override this to use :meth:`encode_frame`'s
        hot path; the default always takes the general path."""
        return None

    def feed(self, event: Any) -> list[Chunk]:
        """One parsed upstream event. Never raises."""
        self.events += 1
        if self.guard.finished:
            self.stats["after-done"] += 1
            return []
        if type(event) is not dict:
            return self._malformed("not a JSON object", event)
        event_type = self.event_type(event)
        if event_type is None:
            return self._malformed("no string 'type'", event)
        handler = self._handlers.get(event_type)
        if handler is None:
            return self._unknown(event_type, event)
        try:
            chunks = handler(self, event)
        except (MalformedEvent, KeyError, TypeError, ValueError, AttributeError) as exc:
            return self._malformed(f"{event_type}: {exc}", event)
        return self._guarded(chunks)

    def feed_terminal_frame(self, frame: str) -> list[Chunk]:
        """A dialect's end-of-stream frame; the default ends the turn normally."""
        return self.close(CloseReason.COMPLETED)

    def close(
        self, reason: CloseReason = CloseReason.UPSTREAM_CLOSED, error_text: str | None = None
    ) -> list[Chunk]:
        """The upstream is gone (or the client, or a timeout): the closing chunks. Never raises.

        ``UPSTREAM_CLOSED`` after the dialect already saw its own ending (``pending_close``) is a
        normal end, not a truncated turn.
        """
        if self.guard.finished:
            return []
        if self.pending_close is not None and reason in (
            CloseReason.UPSTREAM_CLOSED,
            CloseReason.COMPLETED,
        ):
            return self._guarded([self.pending_close])
        return self.guard.close(reason, error_text)

    def event_type(self, event: dict[str, Any]) -> str | None:
        """The dispatch key of an event (``event["type"]``; dialects may override)."""
        event_type = event.get("type")
        return event_type if isinstance(event_type, str) else None

    # -- internals -----------------------------------------------------------------------------

    def _guarded(self, chunks: list[Chunk]) -> list[Chunk]:
        guard = self.guard
        if len(chunks) == 1 and chunks[0]["type"] != _CLOSE:
            return guard.feed(chunks[0])
        out: list[Chunk] = []
        for chunk in chunks:
            if chunk["type"] == _CLOSE:
                out += guard.close(
                    chunk["reason"],
                    chunk["error_text"],
                    finish_reason=chunk["finish_reason"],
                    message_metadata=chunk["message_metadata"],
                )
            else:
                out += guard.feed(chunk)
        return out

    def _unknown(self, event_type: str, event: dict[str, Any]) -> list[Chunk]:
        self.stats[f"unknown-event:{event_type}"] += 1
        policy = self.options.unknown_events
        if policy is UnknownEventPolicy.DROP:
            self.stats["dropped-unknown-event"] += 1
            return []
        if policy is UnknownEventPolicy.ERROR:
            return self.guard.close(
                CloseReason.UPSTREAM_PROTOCOL_ERROR, f"Unsupported upstream event: {event_type}"
            )
        data = {k: v for k, v in event.items() if k != "type"}
        return self.guard.feed({"type": DATA_PREFIX + event_type, "data": data, "transient": True})

    def _malformed(self, why: str, raw: Any) -> list[Chunk]:
        self.stats["malformed-event"] += 1
        policy = self.options.unknown_events
        if policy is UnknownEventPolicy.DROP:
            return []
        if policy is UnknownEventPolicy.ERROR:
            return self.guard.close(CloseReason.UPSTREAM_PROTOCOL_ERROR)
        preview = raw if isinstance(raw, str) else repr(raw)
        if isinstance(raw, bytes):
            preview = raw.decode("utf-8", "replace")
        return self.guard.feed(
            {
                "type": "data-upstream-malformed",
                "data": {"reason": why, "frame": preview[:500]},
                "transient": True,
            }
        )

    # -- helpers for dialects --------------------------------------------------------------------

    def text_delta(self, delta: str) -> list[Chunk]:
        """Text into the open text part (opening one, and closing reasoning, when needed)."""
        text_id = self._text_id
        if text_id is not None:
            return [{"type": "text-delta", "id": text_id, "delta": delta}]
        out = self.end_reasoning()
        self._text_id = text_id = self.ids("text")
        self._delta_prefix = (
            b'data: {"type":"text-delta","id":' + orjson.dumps(text_id) + b',"delta":'
        )
        out.append({"type": "text-start", "id": text_id})
        out.append({"type": "text-delta", "id": text_id, "delta": delta})
        return out

    def reasoning_delta(self, delta: str) -> list[Chunk]:
        """Reasoning into the open reasoning part (closing text first, when open)."""
        reasoning_id = self._reasoning_id
        if reasoning_id is not None:
            return [{"type": "reasoning-delta", "id": reasoning_id, "delta": delta}]
        out = self.end_text()
        self._reasoning_id = reasoning_id = self.ids("reasoning")
        out.append({"type": "reasoning-start", "id": reasoning_id})
        out.append({"type": "reasoning-delta", "id": reasoning_id, "delta": delta})
        return out

    def end_text(self) -> list[Chunk]:
        if self._text_id is None:
            return []
        text_id, self._text_id = self._text_id, None
        return [{"type": "text-end", "id": text_id}]

    def end_reasoning(self) -> list[Chunk]:
        if self._reasoning_id is None:
            return []
        reasoning_id, self._reasoning_id = self._reasoning_id, None
        return [{"type": "reasoning-end", "id": reasoning_id}]

    def end_parts(self) -> list[Chunk]:
        return self.end_reasoning() + self.end_text()

    def tool_flags(self, **flags: Any) -> dict[str, Any]:
        """Flags every chunk of one tool call carries (``dynamic`` when configured)."""
        if self.options.dynamic_tools:
            flags["dynamic"] = True
        return flags
