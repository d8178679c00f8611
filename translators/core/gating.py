"""Target gating: make one chunk acceptable to one client major, converting instead of dropping.

A chunk type the target does not know is converted to the nearest thing it does know (the table
:data:`TYPE_CONVERSIONS`; ``reset-step`` counts as unknown to an ai 7 client not said to accept
it, ``reset_step``); a field the target does not declare is removed (the strict early patch
releases of every major reject it, spec §2.1); ``null`` in an optional field is removed and a
missing required ``unknown`` key is added as ``null`` (spec §2.2); a number where an id string is
expected is stringified; a ``finishReason`` the target rejects is mapped (``interrupted`` →
``other`` below 7, ``unknown`` → ``other`` above 5). Every such change is counted in
:attr:`Gate.conversions` under a stable key and reported through ``on_conversion`` so the gateway
can log it; nothing changes silently.

A chunk that cannot be represented at all (not an object, no string ``type``, a required string
field missing) is dropped and counted under ``invalid-chunk``. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chunkbridge.protocol_specs.ui_message_shapes import value_fits
from chunkbridge.protocol_specs.ui_message_stream import (
    ACCEPTED_TYPES,
    CHUNK_SPECS,
    DATA_CHUNK_SPEC,
    DATA_PREFIX,
    EMITTED_FINISH_REASONS,
    FINISH_REASONS,
    ChunkSpec,
    Kind,
)

__all__ = ["Gate", "TYPE_CONVERSIONS", "ConversionHook"]

ConversionHook = Callable[[str, dict[str, Any]], None]

DENIED_TEXT = "Tool execution was denied."


def _as_data(name: str, *, transient: bool = False) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def convert(chunk: dict[str, Any]) -> dict[str, Any]:
        data = {k: v for k, v in chunk.items() if k != "type"}
        out: dict[str, Any] = {"type": DATA_PREFIX + name, "data": data}
        if transient:
            out["transient"] = True
        return out

    return convert


def _denied_as_error(chunk: dict[str, Any]) -> dict[str, Any]:
    # ai 5 has no denial state; an output error settles the call with a readable reason.
    return {
        "type": "tool-output-error",
        "toolCallId": chunk["toolCallId"],
        "errorText": DENIED_TEXT,
    }


def _reasoning_file_as_file(chunk: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in chunk.items() if k != "type"} | {"type": "file"}


#: Chunk types some majors reject → the conversion used for those majors (spec §2.3).
TYPE_CONVERSIONS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "tool-approval-request": _as_data("tool-approval-request"),
    "tool-approval-response": _as_data("tool-approval-response"),
    "tool-output-denied": _denied_as_error,
    "custom": _as_data("custom"),
    "reasoning-file": _reasoning_file_as_file,
    "steering-message": _as_data("steering-message"),
    # A client without it (5, 6, an ai 7 without ``reset_step``) cannot drop a step's parts:
    # they stay (the guard ends the open ones), and the app hears of it in ``onData`` only —
    # transient, so the message the client holds (and the gateway stores) does not change.
    "reset-step": _as_data("reset-step", transient=True),
}

#: finishReason values one major has and another lacks → the common value that replaces them.
FINISH_REASON_FALLBACKS = {"interrupted": "other", "unknown": "other"}


def _target_tables(target: int) -> tuple[dict[str, frozenset[str]], dict[str, tuple[str, ...]]]:
    specs = (*CHUNK_SPECS.values(), DATA_CHUNK_SPEC)
    declared = {spec.type: spec.declared(target) for spec in specs}
    required = {
        spec.type: tuple(f.name for f in spec.fields.values() if f.required and target in f.majors)
        for spec in specs
    }
    return declared, required


#: Per-target lookup tables, built once (every stream's Gate shares them).
_TARGET_TABLES = {target: _target_tables(target) for target in FINISH_REASONS}


class Gate:
    """Converts chunks for one target major. Call :meth:`gate` on every chunk, in order.

    ``reset_step``: the client is an ai 7 that accepts ``reset-step`` (the app pins ai ≥ 7.0.70);
    without it ``reset-step`` is converted like any type the client lacks."""

    __slots__ = (
        "target",
        "reset_step",
        "conversions",
        "_on_conversion",
        "_types",
        "_declared",
        "_required",
        "_finish_reasons",
    )

    def __init__(
        self, target: int, on_conversion: ConversionHook | None = None, *, reset_step: bool = False
    ) -> None:
        if target not in FINISH_REASONS:
            raise ValueError(f"target must be 5, 6 or 7, not {target!r}")
        if reset_step and target != 7:
            raise ValueError(f"reset_step is an ai 7 capability, not one of target {target}")
        self.target = target
        self.reset_step = reset_step
        #: How many chunks were changed, by kind of change (``type:x->y``, ``field-removed:t.f``…).
        #: A plain dict, not a ``Counter``: one is made per turn, and a dict of str → int is
        #: neither slow to build nor tracked by the garbage collector.
        self.conversions: dict[str, int] = {}
        self._on_conversion = on_conversion
        self._types = ACCEPTED_TYPES[target, reset_step]
        self._declared, self._required = _TARGET_TABLES[target]
        self._finish_reasons = EMITTED_FINISH_REASONS[target]

    def _count(self, key: str, chunk: dict[str, Any]) -> None:
        self.conversions[key] = self.conversions.get(key, 0) + 1
        if self._on_conversion is not None:
            self._on_conversion(key, chunk)

    #: For conversions made outside the gate (the guard's, which need the client model).
    record_conversion = _count

    def gate(self, chunk: Any) -> dict[str, Any] | None:
        """The chunk as the target accepts it (maybe the same object), or ``None`` if unusable."""
        if not isinstance(chunk, dict) or not isinstance(chunk.get("type"), str):
            self._count("invalid-chunk", {"chunk": repr(chunk)[:200]})
            return None
        chunk_type = chunk["type"]
        spec = CHUNK_SPECS.get(chunk_type)
        if spec is None:
            if not chunk_type.startswith(DATA_PREFIX):
                self._count(f"type:{chunk_type}->data", chunk)
                chunk = _as_data(chunk_type)(chunk)
            spec = DATA_CHUNK_SPEC
        elif chunk_type not in self._types:
            converted = TYPE_CONVERSIONS[chunk_type](chunk)
            self._count(f"type:{chunk_type}->{converted['type']}", chunk)
            chunk = converted
            spec = CHUNK_SPECS.get(chunk["type"], DATA_CHUNK_SPEC)
        return self._fit_fields(chunk, spec)

    def _fit_fields(self, chunk: dict[str, Any], spec: ChunkSpec) -> dict[str, Any] | None:
        declared = self._declared[spec.type]
        fields = spec.fields
        for key, value in chunk.items():
            if key == "type":
                continue
            if key not in declared:
                break
            field = fields[key]
            if value is None and field.kind is not Kind.JSON:
                break
            if field.kind is Kind.STRING:
                if not isinstance(value, str):
                    break
            elif field.kind is Kind.FINISH_REASON:
                if value not in self._finish_reasons:
                    break
            elif field.kind is not Kind.JSON and not value_fits(field.kind, value, self.target):
                break
        else:
            if all(name in chunk for name in self._required[spec.type]):
                return chunk
        return self._repair_fields(chunk, spec, declared)

    def _repair_fields(
        self, chunk: dict[str, Any], spec: ChunkSpec, declared: frozenset[str]
    ) -> dict[str, Any] | None:
        """Slow path: build a fixed copy, counting every change."""
        chunk_type = chunk["type"]
        out: dict[str, Any] = {"type": chunk_type}
        for key, value in chunk.items():
            if key == "type":
                continue
            where = f"{spec.type if spec is DATA_CHUNK_SPEC else chunk_type}.{key}"
            if key not in declared:
                self._count(f"field-removed:{where}", chunk)
                continue
            field = spec.fields[key]
            if value is None and field.kind is not Kind.JSON:
                self._count(f"null-removed:{where}", chunk)
                continue
            if field.kind is Kind.FINISH_REASON and value not in self._finish_reasons:
                fallback = (
                    FINISH_REASON_FALLBACKS.get(value, "other")
                    if isinstance(value, str)
                    else "other"
                )
                self._count(f"finish-reason:{value}->{fallback}", chunk)
                out[key] = fallback
                continue
            if value_fits(field.kind, value, self.target):
                out[key] = value
            elif (
                field.kind is Kind.STRING
                and isinstance(value, int | float)
                and not isinstance(value, bool)
            ):
                self._count(f"stringified:{where}", chunk)
                out[key] = str(value)
            elif field.required:
                self._count(f"invalid-chunk:{where}", chunk)
                return None
            else:
                self._count(f"invalid-removed:{where}", chunk)
        for name, field in spec.fields.items():
            if field.required and name not in out and self.target in field.majors:
                if field.kind is not Kind.JSON:
                    self._count(f"invalid-chunk:{spec.type}.{name}-missing", chunk)
                    return None
                self._count(f"null-added:{spec.type}.{name}", chunk)
                out[name] = None
        return out
