"""The AI SDK UI message stream vocabulary, per client major (ai 5, 6 and 7), as data.

This module is the one statement of *what a chunk may look like* for each major: chunk types, their
fields (required or optional, which majors declare them, what JSON shape they take), the
``finishReason`` values each major accepts, and the response headers. Ordering rules (which chunk
may follow which) live in :mod:`chunkbridge.translators.core.client_model`; conversion to a target
major in :mod:`chunkbridge.translators.core.gating`. Both read the tables below and never restate
them.

Source: ``shared/specs/ui-message-stream.md`` §1.1, §2.1–§2.4, checked against the zod schemas in
``ai@5.0.277``, ``ai@6.0.326`` and ``ai@7.0.173`` (``uiMessageChunkSchema``). The pinned releases
use loose objects: a key a major does not declare is accepted and ignored, a declared key with the
wrong shape (``null`` included) kills the stream, and an unknown ``type`` is always rejected.
One ai 7 type is newer than some loose 7 releases: ``reset-step``, sent only to a client that
says it knows it (:data:`RESET_STEP`, :data:`ACCEPTED_TYPES`).

Each chunk type also has a *role* (:class:`PartRole`, :data:`STEPLESS_TYPES`,
:data:`TOOL_REFERENCE_TYPES`): which types open, continue and close a streaming part, which create
no part (so they never open a step), which refer to an existing tool call. The client model, the
guard, the validator and the text stages read these tables; none of them lists chunk types itself.

Chunks on the hot path are plain ``dict`` objects; nothing here is called per text delta except
:func:`schema_errors` in the validator, which is not the hot path.
"""

from __future__ import annotations

from typing import Final, Literal

from chunkbridge.protocol_specs.ui_message_schema import ChunkSpec, FieldSpec, Kind, PartRole

__all__ = [
    "ACCEPTED_TYPES",
    "ALL_MAJORS",
    "CHUNK_SPECS",
    "DATA_CHUNK_SPEC",
    "DATA_PREFIX",
    "DEFAULT_TARGET",
    "FINISH_REASONS",
    "EMITTED_FINISH_REASONS",
    "Kind",
    "ChunkSpec",
    "DELTA_TYPES",
    "FieldSpec",
    "Major",
    "PART_CLOSERS",
    "PART_ROLES",
    "PartRole",
    "REQUIRED_JSON_KEYS",
    "RESET_STEP",
    "RESET_STEP_SINCE",
    "RESPONSE_HEADERS",
    "SSE_DONE",
    "STEPLESS_TYPES",
    "TOOL_OUTPUT_TYPES",
    "TOOL_REFERENCE_TYPES",
    "chunk_spec",
]

Major = Literal[5, 6, 7]
ALL_MAJORS: Final[tuple[Major, ...]] = (5, 6, 7)
#: What every major accepts: the safe default when the client's major is not known.
DEFAULT_TARGET: Final[Major] = 5
DATA_PREFIX: Final = "data-"
SSE_DONE: Final = "[DONE]"

#: ``UI_MESSAGE_STREAM_HEADERS`` (spec §1.1). ``connection: keep-alive`` is left to the server:
#: it is forbidden over HTTP/2 and the client never reads it.
RESPONSE_HEADERS: Final[dict[str, str]] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}

_COMMON_FINISH = frozenset({"stop", "length", "content-filter", "tool-calls", "error", "other"})
#: spec §2.4: ``unknown`` only in 5, ``interrupted`` only in 7; anything else is fatal everywhere.
FINISH_REASONS: Final[dict[int, frozenset[str]]] = {
    5: _COMMON_FINISH | {"unknown"},
    6: _COMMON_FINISH,
    7: _COMMON_FINISH | {"interrupted"},
}


#: finishReason values chunkbridge *emits* per target: ``unknown`` is left out for 5 so that the
#: default target's streams are accepted by 6 and 7 as well.
EMITTED_FINISH_REASONS: Final[dict[int, frozenset[str]]] = {
    5: _COMMON_FINISH,
    6: _COMMON_FINISH,
    7: _COMMON_FINISH | {"interrupted"},
}


_ALL = frozenset(ALL_MAJORS)
_6_7 = frozenset({6, 7})
_7 = frozenset({7})


def _f(name: str, kind: Kind, required: bool = False, majors: frozenset[int] = _ALL) -> FieldSpec:
    return FieldSpec(name, kind, required, majors)


S, B, J, PM, TM = Kind.STRING, Kind.BOOL, Kind.JSON, Kind.PROVIDER_METADATA, Kind.TOOL_METADATA


def _chunk(
    type_: str,
    majors: frozenset[int],
    *fields: FieldSpec,
    role: PartRole | None = None,
    stepless: bool = False,
    tool_reference: bool = False,
) -> ChunkSpec:
    return ChunkSpec(type_, majors, {f.name: f for f in fields}, role, stepless, tool_reference)


_TEXT_OPEN = PartRole("text", "open", "id")
_TEXT_DELTA = PartRole("text", "continue", "id", "delta")
_TEXT_CLOSE = PartRole("text", "close", "id")
_REASONING_OPEN = PartRole("reasoning", "open", "id")
_REASONING_DELTA = PartRole("reasoning", "continue", "id", "delta")
_REASONING_CLOSE = PartRole("reasoning", "close", "id")
_INPUT_OPEN = PartRole("tool-input", "open", "toolCallId")
_INPUT_DELTA = PartRole("tool-input", "continue", "toolCallId", "inputTextDelta")
_INPUT_CLOSE = PartRole("tool-input", "close", "toolCallId")


_TOOL_COMMON = (
    _f("providerExecuted", B),
    _f("providerMetadata", PM),
    _f("dynamic", B),
    _f("toolMetadata", TM, majors=_6_7),
    _f("title", S, majors=_6_7),
)

#: Every chunk type of ai 5, 6 and 7 (spec §2.3) but ``data-*`` (:data:`DATA_CHUNK_SPEC`).
CHUNK_SPECS: Final[dict[str, ChunkSpec]] = {
    c.type: c
    for c in (
        _chunk("start", _ALL, _f("messageId", S), _f("messageMetadata", J), stepless=True),
        _chunk("start-step", _ALL, stepless=True),
        _chunk("text-start", _ALL, _f("id", S, True), _f("providerMetadata", PM), role=_TEXT_OPEN),
        _chunk(
            "text-delta",
            _ALL,
            _f("id", S, True),
            _f("delta", S, True),
            _f("providerMetadata", PM),
            role=_TEXT_DELTA,
        ),
        _chunk(
            "text-end",
            _ALL,
            _f("id", S, True),
            _f("providerMetadata", PM),
            _f("citations", Kind.CITATIONS, majors=_7),
            role=_TEXT_CLOSE,
        ),
        _chunk(
            "reasoning-start",
            _ALL,
            _f("id", S, True),
            _f("providerMetadata", PM),
            role=_REASONING_OPEN,
        ),
        _chunk(
            "reasoning-delta",
            _ALL,
            _f("id", S, True),
            _f("delta", S, True),
            _f("providerMetadata", PM),
            role=_REASONING_DELTA,
        ),
        _chunk(
            "reasoning-end",
            _ALL,
            _f("id", S, True),
            _f("providerMetadata", PM),
            role=_REASONING_CLOSE,
        ),
        _chunk(
            "tool-input-start",
            _ALL,
            _f("toolCallId", S, True),
            _f("toolName", S, True),
            _f("providerExecuted", B),
            _f("dynamic", B),
            _f("providerMetadata", PM, majors=_6_7),
            _f("toolMetadata", TM, majors=_6_7),
            _f("title", S, majors=_6_7),
            _f("inputEncoding", Kind.INPUT_ENCODING, majors=_6_7),
            role=_INPUT_OPEN,
        ),
        _chunk(
            "tool-input-delta",
            _ALL,
            _f("toolCallId", S, True),
            _f("inputTextDelta", S, True),
            role=_INPUT_DELTA,
        ),
        _chunk(
            "tool-input-available",
            _ALL,
            _f("toolCallId", S, True),
            _f("toolName", S, True),
            _f("input", J, True),
            *_TOOL_COMMON,
            role=_INPUT_CLOSE,
        ),
        _chunk(
            "tool-input-error",
            _ALL,
            _f("toolCallId", S, True),
            _f("toolName", S, True),
            _f("input", J, True),
            _f("errorText", S, True),
            *_TOOL_COMMON,
            role=_INPUT_CLOSE,
        ),
        _chunk(
            "tool-approval-request",
            _6_7,
            _f("approvalId", S, True),
            _f("toolCallId", S, True),
            _f("approvalDescriptor", J),
            _f("inputSchemaInput", J),
            _f("signature", S),
            _f("reason", S, majors=_7),
            _f("isAutomatic", B, majors=_7),
            tool_reference=True,
        ),
        _chunk(
            "tool-approval-response",
            _7,
            _f("approvalId", S, True),
            _f("approved", B, True),
            _f("reason", S),
            _f("providerExecuted", B),
            _f("providerMetadata", PM),
        ),
        _chunk(
            "tool-output-available",
            _ALL,
            _f("toolCallId", S, True),
            _f("output", J, True),
            _f("providerExecuted", B),
            _f("dynamic", B),
            _f("preliminary", B),
            _f("providerMetadata", PM, majors=_6_7),
            _f("toolMetadata", TM, majors=_6_7),
            tool_reference=True,
        ),
        _chunk(
            "tool-output-error",
            _ALL,
            _f("toolCallId", S, True),
            _f("errorText", S, True),
            _f("providerExecuted", B),
            _f("dynamic", B),
            _f("providerMetadata", PM, majors=_6_7),
            _f("toolMetadata", TM, majors=_6_7),
            tool_reference=True,
        ),
        _chunk("tool-output-denied", _6_7, _f("toolCallId", S, True), tool_reference=True),
        _chunk(
            "source-url",
            _ALL,
            _f("sourceId", S, True),
            _f("url", S, True),
            _f("title", S),
            _f("providerMetadata", PM),
        ),
        _chunk(
            "source-document",
            _ALL,
            _f("sourceId", S, True),
            _f("mediaType", S, True),
            _f("title", S, True),
            _f("filename", S),
            _f("providerMetadata", PM),
        ),
        _chunk(
            "file", _ALL, _f("url", S, True), _f("mediaType", S, True), _f("providerMetadata", PM)
        ),
        _chunk(
            "reasoning-file",
            _7,
            _f("url", S, True),
            _f("mediaType", S, True),
            _f("providerMetadata", PM),
        ),
        _chunk("custom", _7, _f("kind", S, True), _f("providerMetadata", PM)),
        _chunk("steering-message", _7, _f("id", S, True), _f("parts", Kind.STEERING_PARTS, True)),
        _chunk("finish-step", _ALL, stepless=True),
        _chunk("reset-step", _7, stepless=True),
        _chunk("message-metadata", _ALL, _f("messageMetadata", J, True), stepless=True),
        _chunk(
            "finish",
            _ALL,
            _f("finishReason", Kind.FINISH_REASON),
            _f("messageMetadata", J),
            stepless=True,
        ),
        _chunk("abort", _ALL, _f("reason", S, majors=_6_7), stepless=True),
        _chunk("error", _ALL, _f("errorText", S, True), stepless=True),
    )
}

#: ``data-<name>`` chunks: any type string that starts with ``data-`` (``data-`` alone included).
#: Stepless: the AI SDK server writes data parts outside steps too.
DATA_CHUNK_SPEC: Final = _chunk(
    DATA_PREFIX, _ALL, _f("data", J, True), _f("id", S), _f("transient", B), stepless=True
)

#: Chunk type → its role for a streaming part (text, reasoning, tool input).
PART_ROLES: Final[dict[str, PartRole]] = {
    spec.type: spec.part_role for spec in CHUNK_SPECS.values() if spec.part_role is not None
}
#: ``continue`` chunk types: the streamed-text chunks (``text-delta``, ``tool-input-delta``…).
DELTA_TYPES: Final = frozenset(t for t, role in PART_ROLES.items() if role.action == "continue")
#: Part kind → the chunk type that ends it when nothing else did (text and reasoning parts;
#: a tool input ends with its complete input, which only the translator knows).
PART_CLOSERS: Final[dict[str, str]] = {
    role.part: t
    for t, role in PART_ROLES.items()
    if role.action == "close" and role.part != "tool-input"
}
#: Types that create no part (``data-*`` too: see :data:`DATA_CHUNK_SPEC`).
STEPLESS_TYPES: Final = frozenset(spec.type for spec in CHUNK_SPECS.values() if spec.stepless)
#: Types that refer to an existing tool call by ``toolCallId``.
TOOL_REFERENCE_TYPES: Final = frozenset(
    spec.type for spec in CHUNK_SPECS.values() if spec.tool_reference
)
#: Tool references that settle the call (an approval request does not).
TOOL_OUTPUT_TYPES: Final = frozenset(
    t for t in TOOL_REFERENCE_TYPES if t.startswith("tool-output-")
)

#: ``reset-step`` is in ai 7 from 7.0.70 on; 7.0.32–7.0.69 parse loosely yet reject the type. The
#: target names the major alone, so a client gets it only when the app says its ai 7 is that new:
#: the ``reset_step`` capability (a setting, off by default), which means exactly "this client
#: accepts ``reset-step``" wherever it is passed, and is only possible with target 7.
RESET_STEP: Final = "reset-step"
RESET_STEP_SINCE: Final = "7.0.70"


def _accepted_types(major: int, reset_step: bool) -> frozenset[str]:
    return frozenset(
        spec.type
        for spec in CHUNK_SPECS.values()
        if major in spec.majors and (reset_step or spec.type != RESET_STEP)
    )


#: ``(major, reset_step)`` → the chunk types (``data-*`` aside) that client accepts.
ACCEPTED_TYPES: Final[dict[tuple[int, bool], frozenset[str]]] = {
    (major, reset_step): _accepted_types(major, reset_step)
    for major in ALL_MAJORS
    for reset_step in (False, True)
}

#: Required ``z.unknown()`` keys: they must be present even when the value is ``null`` (spec §2.2).
REQUIRED_JSON_KEYS: Final[dict[str, tuple[str, ...]]] = {
    spec.type: tuple(f.name for f in spec.fields.values() if f.required and f.kind is Kind.JSON)
    for spec in (*CHUNK_SPECS.values(), DATA_CHUNK_SPEC)
    if any(f.required and f.kind is Kind.JSON for f in spec.fields.values())
}


def chunk_spec(chunk_type: str) -> ChunkSpec | None:
    """The spec for a chunk type, ``data-*`` included; ``None`` for a type no major knows."""
    spec = CHUNK_SPECS.get(chunk_type)
    if spec is None and chunk_type.startswith(DATA_PREFIX):
        return DATA_CHUNK_SPEC
    return spec
