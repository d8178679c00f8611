"""What every in-process dialect's test checks of a live run of its library: the run is its
recording (so the goldens judge the library as it is today), and its live objects become the
golden's bytes for every target (the object and the recorded form of each event read alike)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from chunkbridge.gateway.devtools.library_recording import library_sse, record_library_events
from chunkbridge.gateway.devtools.recordings import read_frames
from chunkbridge.gateway.devtools.replay import replay_file


async def check_live_run(
    dialect: str, events: Callable[[], Any], recording: Path, tmp_path: Path, update: bool
) -> None:
    """``events()``: a fresh run of the library. ``update`` (``--update-goldens``): write the
    recording and its golden from this run first."""
    golden = recording.with_suffix(".sse")
    fresh = tmp_path / "fresh.jsonl"
    frames = await record_library_events(dialect, events(), fresh)
    if update:
        recording.write_bytes(fresh.read_bytes())  # noqa: ASYNC240 (a test's small files)
        golden.write_bytes(replay_file(dialect, recording))  # noqa: ASYNC240
    assert [orjson.loads(f) for f in read_frames(recording)] == frames
    assert await library_sse(dialect, events()) == golden.read_bytes()
    for target in (6, 7):
        live = await library_sse(dialect, events(), target=target)
        assert live == replay_file(dialect, recording, target=target)
