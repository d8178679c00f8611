"""UTF-16 surrogate pairs split across two deltas, joined back into their one character.

JavaScript backends cut streamed text at UTF-16 code units, so an emoji can arrive as one delta
ending with the high surrogate (``"…\\ud83d"``) and the next starting with the low one
(``"\\ude00…"``). Each half alone is not text: the encoder would turn each into U+FFFD and the user
would see two replacement characters where one emoji was. :class:`SurrogatePairs` holds a delta's
trailing high surrogate back and puts it in front of the next delta *of the same part* (text,
reasoning or tool input: the roles come from :data:`~chunkbridge.protocol_specs.ui_message_stream.
PART_ROLES`), so the pair reaches the client whole. A held half that is never completed goes out as
U+FFFD when its part ends, or when the turn closes.

Lone surrogates only come out of the lenient JSON parser (orjson refuses them) and out of an
in-process source's events (Python's ``json`` makes them), so the turn pipeline runs this stage
on those and while something is held; the fast path never needs it.
"""

from __future__ import annotations

import json
from typing import Any

from chunkbridge.protocol_specs.ui_message_stream import PART_ROLES

__all__ = ["NOT_JSON", "REPLACEMENT", "SurrogatePairs", "join_surrogates", "loads_lenient"]

REPLACEMENT = "\ufffd"
_HIGH_FIRST, _HIGH_LAST = "\ud800", "\udbff"

#: Part kind → (its delta chunk type, the field naming the part, the field holding the text).
_DELTAS = {
    role.part: (chunk_type, role.key, role.delta)
    for chunk_type, role in PART_ROLES.items()
    if role.action == "continue" and role.delta is not None
}


def join_surrogates(text: str) -> str:
    """``text`` with each surrogate pair turned into its character and each lone surrogate into
    U+FFFD (for text assembled from deltas, such as streamed tool arguments)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class SurrogatePairs:
    """Joins surrogate pairs across the deltas of each part. ``fix`` every chunk while
    :attr:`held` is not empty or the chunk may carry a lone surrogate; ``flush`` before the turn
    closes."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        #: (part kind, part id) → the high surrogate its last delta ended with.
        self.held: dict[tuple[str, Any], str] = {}

    def fix(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        """The chunks to send instead of ``chunk`` (itself, changed, or preceded by a flush)."""
        role = PART_ROLES.get(chunk.get("type"))  # type: ignore[arg-type]
        if role is None:
            return [chunk]
        key = (role.part, chunk.get(role.key))
        if role.action == "continue":
            field = role.delta
            assert field is not None
            delta = chunk.get(field)
            if type(delta) is not str or not delta:
                return [chunk]
            held = self.held.pop(key, None)
            # the held half and the first code unit: the character, or U+FFFD and that unit
            text = delta if held is None else join_surrogates(held + delta[:1]) + delta[1:]
            if text and _HIGH_FIRST <= text[-1] <= _HIGH_LAST:
                self.held[key] = text[-1]
                text = text[:-1]
                if not text:  # the whole delta was the held half
                    return []
            return [chunk] if text is delta else [{**chunk, field: text}]
        if key in self.held:  # the part ends (or starts again): its half will never be completed
            return [*self._flush(key), chunk]
        return [chunk]

    def flush(self) -> list[dict[str, Any]]:
        """U+FFFD deltas for every half still held (call before the turn's closing chunks)."""
        out: list[dict[str, Any]] = []
        for key in list(self.held):
            out += self._flush(key)
        return out

    def _flush(self, key: tuple[str, Any]) -> list[dict[str, Any]]:
        del self.held[key]
        chunk_type, key_field, delta_field = _DELTAS[key[0]]
        return [{"type": chunk_type, key_field: key[1], delta_field: REPLACEMENT}]


#: What :func:`loads_lenient` returns for a frame that is not JSON at all.
NOT_JSON: Any = object()


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_lenient(frame: str | bytes) -> Any:
    """Slow path for what orjson refuses but is still usable: lone surrogate escapes
    (``"\\ud83d"``, half an emoji from a JavaScript backend) and integers beyond 64 bits.
    ``NaN``/``Infinity`` stay invalid, and so does nesting too deep to parse."""
    try:
        return json.loads(frame, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        return NOT_JSON
