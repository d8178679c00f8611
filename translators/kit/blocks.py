"""Building blocks for dialects whose upstream streams content blocks, tool arguments and usage.

Model-provider streams share a shape the agent dialects do not have: content arrives in blocks
addressed by an index, several of them open at once (a thinking block and a text block; parallel
tool calls), tool arguments arrive as JSON text in pieces, and the end of a response carries
token usage and provider-specific metadata. These pieces turn that shape into UI chunks with the
rules the AI SDK client needs, so a dialect only maps its event names onto them.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from chunkbridge.kit.translator import IdFactory
from chunkbridge.translators.core.event_translator import Chunk
from chunkbridge.translators.core.surrogates import join_surrogates

__all__ = ["IndexedParts", "StreamedToolCalls", "provider_metadata", "usage_metadata"]

PartKind = Literal["text", "reasoning"]


class IndexedParts:
    """Text and reasoning parts keyed by the upstream's block index.

    Several parts may be open at once and their deltas interleave; each block gets its own part
    id (from the id factory), and a block reused for another kind ends its old part first.
    """

    def __init__(self, ids: IdFactory) -> None:
        self._ids = ids
        #: block key → (kind, part id), in opening order.
        self._open: dict[Hashable, tuple[PartKind, str]] = {}

    def part_id(self, key: Hashable) -> str | None:
        """The id of block ``key``'s open part, or ``None`` when it has none open."""
        entry = self._open.get(key)
        return None if entry is None else entry[1]

    def start(
        self, key: Hashable, kind: PartKind, provider_metadata: dict[str, Any] | None = None
    ) -> list[Chunk]:
        """Open the part for block ``key`` (ending a part still open under that key)."""
        out = self.end(key)
        part_id = self._ids(kind)
        self._open[key] = (kind, part_id)
        chunk: Chunk = {"type": f"{kind}-start", "id": part_id}
        if provider_metadata:
            chunk["providerMetadata"] = provider_metadata
        out.append(chunk)
        return out

    def delta(self, key: Hashable, kind: PartKind, text: str) -> list[Chunk]:
        """Text into block ``key``'s part, opening it when the block has none of that kind."""
        entry = self._open.get(key)
        out: list[Chunk] = []
        if entry is None or entry[0] != kind:
            out = self.start(key, kind)
            entry = self._open[key]
        out.append({"type": f"{kind}-delta", "id": entry[1], "delta": text})
        return out

    def end(self, key: Hashable, provider_metadata: dict[str, Any] | None = None) -> list[Chunk]:
        """End block ``key``'s part, if open (``providerMetadata`` rides on its end chunk: a
        reasoning signature arrives at the end of its block)."""
        entry = self._open.pop(key, None)
        if entry is None:
            return []
        chunk: Chunk = {"type": f"{entry[0]}-end", "id": entry[1]}
        if provider_metadata:
            chunk["providerMetadata"] = provider_metadata
        return [chunk]

    def end_all(self) -> list[Chunk]:
        """End every open part, in the order they opened (before a step or the answer ends)."""
        out: list[Chunk] = []
        for key in list(self._open):
            out += self.end(key)
        return out


@dataclass(slots=True)
class _Call:
    id: str | None = None
    name: str | None = None
    #: ``tool-input-start`` sent (it needs the name, which may come late).
    started: bool = False
    #: Argument text received; the first ``flushed`` pieces were sent as deltas.
    arguments: list[str] = field(default_factory=list)
    flushed: int = 0


class StreamedToolCalls:
    """Tool calls whose arguments stream as JSON text, keyed by the upstream's index.

    ``delta`` records what a piece of a call carries (its id, its name, argument text) and emits
    ``tool-input-start`` once the name is known (arguments that came earlier are held until
    then), then ``tool-input-delta``; ``complete`` parses the arguments: ``tool-input-available``
    (empty arguments are ``{}``), or ``tool-input-error`` with the raw text when they are not
    JSON. Calls without an id get one from the id factory (kind ``id_kind``). Every chunk
    carries ``flags`` (``providerExecuted``, ``dynamic``…).
    """

    def __init__(self, ids: IdFactory, flags: Mapping[str, Any], id_kind: str = "call") -> None:
        self._ids = ids
        self._flags = dict(flags)
        self._id_kind = id_kind
        self._calls: dict[Hashable, _Call] = {}

    def __len__(self) -> int:
        return len(self._calls)

    def delta(
        self,
        key: Hashable,
        *,
        call_id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
    ) -> list[Chunk]:
        """What arrived for call ``key``: its id, name and a piece of its arguments' JSON text,
        each when the upstream sends it. ``tool-input-start`` goes out once the name is known
        (with the arguments held until then), each later piece as a ``tool-input-delta``."""
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _Call()
        if call_id and call.id is None:
            call.id = call_id
        if name and call.name is None:
            call.name = name
        if arguments:
            call.arguments.append(arguments)
        out: list[Chunk] = []
        if not call.started and call.name is not None:
            call.id = call.id or self._ids(self._id_kind)
            call.started = True
            out.append(
                {
                    "type": "tool-input-start",
                    "toolCallId": call.id,
                    "toolName": call.name,
                    **self._flags,
                }
            )
        if call.started and len(call.arguments) > call.flushed:
            pending = "".join(call.arguments[call.flushed :])
            call.flushed = len(call.arguments)
            out.append(
                {"type": "tool-input-delta", "toolCallId": call.id, "inputTextDelta": pending}
            )
        return out

    def complete(self, key: Hashable | None = None) -> list[Chunk]:
        """Finish one call (``key``) or, without a key, every call in first-seen order."""
        if key is not None:
            call = self._calls.pop(key, None)
            return [] if call is None else [self._complete(call)]
        out = [self._complete(call) for call in self._calls.values()]
        self._calls.clear()
        return out

    def _complete(self, call: _Call) -> Chunk:
        raw = "".join(call.arguments)
        base = {
            "toolCallId": call.id or self._ids(self._id_kind),
            "toolName": call.name or "unknown",
            **self._flags,
        }
        try:
            parsed = _parse_arguments(raw)
        except orjson.JSONDecodeError as exc:
            return {
                "type": "tool-input-error",
                **base,
                "input": raw,
                "errorText": f"The tool arguments are not valid JSON: {exc.msg}",
            }
        return {"type": "tool-input-available", **base, "input": parsed}


def _parse_arguments(raw: str) -> Any:
    if not raw.strip():
        return {}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        joined = join_surrogates(raw)  # an emoji split across two pieces: one character again
        if joined == raw:
            raise
        return orjson.loads(joined)


def usage_metadata(usage: Any, fields: Mapping[str, tuple[str, ...]]) -> dict[str, int]:
    """Token counts from a provider's usage object: ``fields`` maps our name to the path of the
    provider's field (``{"reasoningTokens": ("completion_tokens_details", "reasoning_tokens")}``).
    Counts that are missing or not integers are left out; the order is ``fields``' order."""
    out: dict[str, int] = {}
    for ours, path in fields.items():
        value = usage
        for step in path:
            value = value.get(step) if isinstance(value, dict) else None
        if type(value) is int:
            out[ours] = value
    return out


def provider_metadata(provider: str, **values: Any) -> dict[str, dict[str, Any]] | None:
    """``{provider: {key: value}}`` (the shape every major requires) without the ``None``
    values; ``None`` when nothing is left."""
    kept = {key: value for key, value in values.items() if value is not None}
    return {provider: kept} if kept else None
