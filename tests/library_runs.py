"""What every in-process dialect's test checks of a live run of its library: the run is its
recording (so the goldens judge the library as it is today), and its live objects become the
golden's bytes for every target (the object and the recorded form of each event read alike).

Ids a library draws at random per run (LangGraph's message and interrupt ids) are aligned: the
run's ids are read as the recording's at the same places, in its frames and in its bytes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from chunkbridge.gateway.devtools.library_recording import library_sse, record_library_events
from chunkbridge.gateway.devtools.recordings import read_frames
from chunkbridge.gateway.devtools.replay import replay_file


def _align(fresh: Any, recorded: Any, ids: dict[str, str], key: str = "") -> None:
    """``ids``: fresh id → recorded id, for the ``id`` fields where the two runs differ."""
    if isinstance(fresh, dict) and isinstance(recorded, dict):
        for k in fresh.keys() & recorded.keys():
            _align(fresh[k], recorded[k], ids, k)
    elif isinstance(fresh, list) and isinstance(recorded, list):
        for f, r in zip(fresh, recorded, strict=False):
            _align(f, r, ids, key)
    elif key == "id" and isinstance(fresh, str) and isinstance(recorded, str) and fresh != recorded:
        ids[fresh] = recorded


def _aligned(raw: bytes, ids: dict[str, str]) -> bytes:
    for fresh, recorded in ids.items():
        raw = raw.replace(fresh.encode(), recorded.encode())
    return raw


async def check_live_run(
    dialect: str, events: Callable[[], Any], recording: Path, tmp_path: Path, update: bool
) -> None:
    """``events()``: a fresh run of the library. ``update`` (``--update-goldens``): write the
    recording and its golden from a run first."""
    golden = recording.with_suffix(".sse")
    if update:
        fresh = tmp_path / "fresh.jsonl"
        await record_library_events(dialect, events(), fresh)
        recording.write_bytes(fresh.read_bytes())  # noqa: ASYNC240 (a test's small files)
        golden.write_bytes(replay_file(dialect, recording))  # noqa: ASYNC240
    recorded = [orjson.loads(f) for f in read_frames(recording)]
    for target in (5, 6, 7):
        frames: list[Any] = []
        live = await library_sse(dialect, events(), target=target, frames=frames)
        ids: dict[str, str] = {}
        _align(frames, recorded, ids)
        got = orjson.loads(_aligned(orjson.dumps(frames), ids))
        differ = [(g, r) for g, r in zip(got, recorded, strict=False) if g != r]
        assert len(got) == len(recorded) and not differ, (target, len(got), differ[:1])
        expected = (
            golden.read_bytes() if target == 5 else replay_file(dialect, recording, target=target)
        )
        assert _aligned(live, ids) == expected
