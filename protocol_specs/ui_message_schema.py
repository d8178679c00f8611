"""The language the UI message stream's chunk table is written in
(:mod:`~chunkbridge.protocol_specs.ui_message_stream`): the JSON shape a field takes, a field,
a chunk's role for a streaming part, a chunk type with its fields per major."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

__all__ = ["ChunkSpec", "FieldSpec", "Kind", "PartRole"]


class Kind(Enum):
    """The JSON shape a field must have (zod schema of ai@7.0.173, same in 5 and 6)."""

    #: ``z.string()``
    STRING = "string"
    #: ``z.boolean()``
    BOOL = "boolean"
    #: ``z.unknown()``: any JSON value, ``null`` included; as a required field the key must exist.
    JSON = "json"
    #: ``{provider: {key: json}}``: an object of objects.
    PROVIDER_METADATA = "providerMetadata"
    #: ``{key: json}``
    TOOL_METADATA = "toolMetadata"
    #: one of :data:`FINISH_REASONS` for the major.
    FINISH_REASON = "finishReason"
    #: ``"json"`` or ``"text"``
    INPUT_ENCODING = "inputEncoding"
    #: ``text-end.citations`` [7]
    CITATIONS = "citations"
    #: ``steering-message.parts`` [7]
    STEERING_PARTS = "steeringParts"
    #: ``z.record(z.string(), z.string())``
    STRING_MAP = "stringMap"


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    kind: Kind
    required: bool
    #: Majors whose schema declares the field. Others accept it (loose objects) but ignore it,
    #: and their strict early patch releases reject it, so the gating step removes it.
    majors: frozenset[int]


@dataclass(frozen=True, slots=True)
class PartRole:
    """What a chunk does to a streaming part of the message (spec §3): text and reasoning parts
    are named by ``id``, a tool call's input by ``toolCallId``."""

    #: ``"text"``, ``"reasoning"`` or ``"tool-input"``.
    part: str
    #: ``"open"`` (creates the part), ``"continue"`` (streams into it), ``"close"`` (ends it).
    action: Literal["open", "continue", "close"]
    #: The field naming the part.
    key: str
    #: For ``continue``: the field holding the streamed text.
    delta: str | None = None


@dataclass(frozen=True, slots=True)
class ChunkSpec:
    type: str
    #: Majors whose union contains this type; any other major rejects the chunk outright.
    majors: frozenset[int]
    fields: dict[str, FieldSpec]
    #: Its role for a streaming part, if it has one.
    part_role: PartRole | None = None
    #: Creates no part of the message: never opens a step by itself.
    stepless: bool = False
    #: Refers to a tool call by ``toolCallId``: the client needs a tool part for it first.
    tool_reference: bool = False

    #: Per major, the field names (``type`` included) this chunk may carry: see :meth:`declared`.
    by_major: dict[int, frozenset[str]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for major in (5, 6, 7):
            names = {"type", *(f.name for f in self.fields.values() if major in f.majors)}
            self.by_major[major] = frozenset(names)

    def declared(self, major: int) -> frozenset[str]:
        """Field names (``type`` included) this chunk may carry for ``major``."""
        return self.by_major[major]
