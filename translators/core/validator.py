"""Read-only check of an SSE body against one client major: would ``useChat`` accept all of it?

The same rules as the guard, read from the same places: framing from
:class:`~chunkbridge.translators.core.sse_codec.SseDecoder` (eventsource-parser semantics), shapes
from :func:`chunkbridge.protocol_specs.ui_message_shapes.schema_errors`, ordering from
:class:`~chunkbridge.translators.core.client_model.ClientModel`. The first fatal finding is where
the real client throws; nothing after it is read, as in the client. An ``error`` chunk is a
legitimate ending: the client stops applying chunks there, so the rest is only reported as a
warning.

Warnings are what the client tolerates but is risky: no ``[DONE]``, events after ``[DONE]``, a last
event without its blank line (silently dropped), keys a strict patch release would reject, field
lines the client ignores, a second ``start``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chunkbridge.protocol_specs.ui_message_shapes import schema_errors, unknown_keys
from chunkbridge.protocol_specs.ui_message_stream import SSE_DONE
from chunkbridge.translators.core.client_model import ClientModel, KnownToolCall
from chunkbridge.translators.core.sse_codec import SseDecoder, SseEvent

__all__ = ["Finding", "ValidationReport", "validate_sse"]


@dataclass(frozen=True, slots=True)
class Finding:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass(slots=True)
class ValidationReport:
    target: int
    #: The client is an ai 7 that accepts ``reset-step`` (``reset_step``).
    reset_step: bool = False
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    #: Chunks the client applied (the ``[DONE]`` marker excluded).
    chunks: int = 0
    #: ``errorText`` of the ``error`` chunk that ended the stream, if one did.
    error_text: str | None = None
    finish_reason: str | None = None

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "resetStep": self.reset_step,
            "ok": self.ok,
            "errors": [str(f) for f in self.errors],
            "warnings": [str(f) for f in self.warnings],
            "chunks": self.chunks,
            "errorText": self.error_text,
            "finishReason": self.finish_reason,
        }


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_json(data: str) -> Any:
    """``JSON.parse`` semantics: strict JSON, no NaN/Infinity."""
    return json.loads(data, parse_constant=_reject_constant)


def _chunk_type(data: str) -> Any:
    try:
        chunk = _parse_json(data)
    except (ValueError, RecursionError):
        return None
    return chunk.get("type") if isinstance(chunk, dict) else None


def validate_sse(
    body: bytes | str,
    target: int,
    *,
    continued_message_id: str = "",
    known_tools: Sequence[KnownToolCall] = (),
    reset_step: bool = False,
) -> ValidationReport:
    """Check a whole SSE body for ``target`` (5, 6 or 7; ``reset_step``: an ai 7 client that
    accepts ``reset-step``). Never raises on bad input. A continuation (spec §5.4) is checked
    against the message it continues: its id and its tool parts (``known_tools``), which the
    body may refer to."""
    report = ValidationReport(target, reset_step)
    decoder = SseDecoder()
    events = decoder.decode_bytes(body) if isinstance(body, bytes) else decoder.decode(body)
    dangling = decoder.flush()
    for line, name in decoder.ignored_fields:
        if name not in ("id", "retry", "event"):
            report.warnings.append(Finding(line, f"field {name!r} is ignored by the client"))
    model = ClientModel(major=target, message_id=continued_message_id)
    model.seed(known_tools)
    _check_events(events, report, model)
    if dangling is not None:
        report.warnings.append(
            Finding(
                dangling.line,
                "the last event has no blank line after it: the client drops it silently "
                f"({dangling.data[:60]!r})",
            )
        )
    return report


def _check_events(events: list[SseEvent], report: ValidationReport, model: ClientModel) -> None:
    done_line = 0
    starts = 0
    finished_line = 0
    for event in events:
        if event.data == SSE_DONE:
            if done_line:
                report.warnings.append(Finding(event.line, "a second [DONE]"))
            done_line = done_line or event.line
            continue
        if report.error_text is not None:
            if _chunk_type(event.data) in ("finish-step", "finish"):
                continue  # what the AI SDK server itself sends after an error
            report.warnings.append(
                Finding(event.line, "event after an error chunk: the client never reads it")
            )
            return
        if done_line:
            report.warnings.append(
                Finding(event.line, "event after [DONE]: the client still applies it")
            )
        chunk = _client_chunk(event, report)
        if chunk is None:
            return
        rule = model.check(chunk)
        if rule is not None:
            report.errors.append(Finding(event.line, f"{chunk['type']}: {rule.value}"))
            return
        model.apply(chunk)
        report.chunks += 1
        chunk_type = chunk["type"]
        if finished_line and chunk_type not in ("error", "finish"):
            report.warnings.append(
                Finding(event.line, f"{chunk_type} after finish (line {finished_line})")
            )
        if chunk_type == "start":
            starts += 1
            if starts == 2:
                report.warnings.append(
                    Finding(event.line, "a second start: useChat may show two assistant messages")
                )
        elif chunk_type == "finish":
            finished_line = finished_line or event.line
            report.finish_reason = chunk.get("finishReason", report.finish_reason)
        elif chunk_type == "error":
            report.error_text = chunk["errorText"]
    if not done_line:
        report.warnings.append(Finding(0, "no data: [DONE] at the end (tolerated by the client)"))


def _client_chunk(event: SseEvent, report: ValidationReport) -> Any:
    """The event's chunk as the client parses it, or ``None`` where the client throws (the
    error is in ``report``); keys a strict release would reject are only a warning."""
    try:
        chunk = _parse_json(event.data)
    except (ValueError, RecursionError) as exc:
        what = "empty data" if not event.data.strip() else f"data is not JSON ({exc})"
        report.errors.append(Finding(event.line, f"{what}: {event.data[:80]!r}"))
        return None
    problems = schema_errors(chunk, report.target, reset_step=report.reset_step)
    if problems:
        report.errors.extend(Finding(event.line, p) for p in problems)
        return None
    extra = unknown_keys(chunk, report.target)
    if extra:
        report.warnings.append(
            Finding(
                event.line,
                f"{chunk['type']}: keys not declared by ai {report.target} "
                f"({', '.join(extra)}): ignored here, fatal on its strict early releases",
            )
        )
    return chunk
