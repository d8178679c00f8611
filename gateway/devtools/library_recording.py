"""Recording an in-process dialect's library, and streaming its live events as a golden would.

An in-process dialect (:class:`~chunkbridge.kit.InProcessContract`) has no upstream to ``record``
from: its recordings are made by running the library itself. :func:`record_library_events`
writes each event's recorded form (the dialect's ``record``), then the frame for how the
iterator ended, in the recording format (:mod:`chunkbridge.gateway.devtools.recordings`), so the
file replays like any other dialect's. :func:`library_sse` runs the live objects through the same
turn pipeline a replay uses: its body is byte-identical to the replay of the recording of the same
run, which is what the dialects' tests check.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import orjson

from chunkbridge.gateway.devtools.recordings import RecordingWriter
from chunkbridge.gateway.in_process import library_events
from chunkbridge.gateway.registry import get_dialect
from chunkbridge.kit import STREAM_SIGNAL, TranslatorOptions
from chunkbridge.translators.core.sse_codec import DONE_FRAME, encode_chunks
from chunkbridge.translators.core.turn import Turn, TurnOptions

__all__ = ["library_sse", "record_library_events"]

Events = AsyncIterable[Any] | AbstractAsyncContextManager[AsyncIterable[Any]]


async def record_library_events(dialect: str, events: Events, path: Path) -> list[Any]:
    """Write the recording of one run of the library (``events``: what the app would hand
    over); return its frames."""
    contract = get_dialect(dialect).in_process
    if contract is None:
        raise ValueError(f"dialect {dialect!r} is not an in-process dialect")
    frames: list[Any] = []
    started = time.monotonic()
    with RecordingWriter(path) as writer:
        async for event in library_events(events):
            is_signal = type(event) is dict and STREAM_SIGNAL in event
            frame = event if is_signal else contract.record(event)
            frames.append(frame)
            writer.write(orjson.dumps(frame), (time.monotonic() - started) * 1000)
    return frames


async def library_sse(
    dialect: str,
    events: Events,
    *,
    target: int = 5,
    settings: Any = None,
    options: TurnOptions | None = None,
    frames: list[Any] | None = None,
) -> bytes:
    """The SSE body (``[DONE]`` included) the live ``events`` become, as
    :func:`~chunkbridge.gateway.devtools.replay.replay_frames` makes it of a recording
    (``options``: the turn's, for a continuation; ``target`` then is its own). ``frames``, if
    given, gets the recorded form of every event of this run (what its recording would hold)."""
    description = get_dialect(dialect)
    contract = description.in_process
    if settings is None:
        settings = description.settings()
    translator = description.translator(TranslatorOptions(settings=settings))
    turn = Turn(translator, options or TurnOptions(target=target))
    out: list[bytes] = []
    async for event in library_events(events):
        if frames is not None and contract is not None:
            is_signal = type(event) is dict and STREAM_SIGNAL in event
            frames.append(event if is_signal else contract.record(event))
        out.append(encode_chunks(turn.feed(event)))
        if turn.done and frames is None:
            break
    out.append(encode_chunks(turn.upstream_ended()))
    out.append(DONE_FRAME)
    return b"".join(out)
