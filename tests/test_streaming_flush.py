"""The turn driver's flush interval: a burst of upstream frames goes out in one write per
interval, a frame after a pause goes out at once. Driven by an upstream whose frames arrive at
set times (as a socket would deliver them) and a writer that records each write, on virtual
time (``looptime``): the intervals are exact, whatever else the machine is doing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import new_turn
from tests.timed_upstream import TimedUpstream, record_writes, settings

TURN = "t1"
pytestmark = pytest.mark.looptime


def delta(text: str) -> dict[str, Any]:
    return {"type": "message.part.text-delta", "turnId": TURN, "delta": text}


def turn(*timed_deltas: tuple[float, str], end: float) -> list[tuple[float, Any]]:
    return [
        (0.0, {"type": "message.create", "turnId": TURN}),
        *[(at, delta(text)) for at, text in timed_deltas],
        (end, {"type": "message.finalize", "turnId": TURN, "reason": "end_turn"}),
        (end, {"type": "complete"}),
    ]


async def run_turn(
    timeline: list[tuple[float, Any]], flush_interval: float
) -> tuple[list[tuple[float, list[dict[str, Any]]]], TimedUpstream]:
    """Run one turn; return each write of upstream data (seconds after start, its chunks)."""
    upstream = TimedUpstream(timeline)
    driver_settings = settings(
        first_event_timeout=5, idle_timeout=5, total_timeout=30, keepalive_interval=4,
        flush_interval=flush_interval,
    )  # fmt: skip
    writes, _ = await record_writes(upstream, new_turn("agent-ops-v2"), driver_settings)
    return [(at, chunks) for at, chunks in writes if chunks], upstream


def deltas_of(chunks: list[dict[str, Any]]) -> list[str]:
    return [c["delta"] for c in chunks if c["type"] == "text-delta"]


async def test_a_burst_is_written_once_per_interval() -> None:
    timeline = turn((0.0, "a"), (0.02, "b"), (0.04, "c"), end=0.06)
    writes, upstream = await run_turn(timeline, flush_interval=0.1)
    assert [deltas_of(chunks) for _, chunks in writes] == [["a"], ["b", "c"]]
    # The second write waited for the rest of the interval after the first, and took the end
    # of the turn with it.
    assert writes[1][0] >= 0.09
    assert writes[1][1][-1]["type"] == "finish"
    assert len(upstream.gathered) == 1 and 0.05 < upstream.gathered[0] <= 0.1


async def test_a_frame_after_a_pause_is_written_at_once() -> None:
    timeline = turn((0.0, "a"), (0.15, "b"), (0.3, "c"), end=0.45)
    writes, upstream = await run_turn(timeline, flush_interval=0.05)
    assert [deltas_of(chunks) for _, chunks in writes][:3] == [["a"], ["b"], ["c"]]
    for (written, _), arrived in zip(writes[1:3], (0.15, 0.3), strict=True):
        assert written - arrived < 0.04
    assert upstream.gathered == []


async def test_zero_interval_writes_whatever_is_there() -> None:
    timeline = turn((0.0, "a"), (0.02, "b"), (0.04, "c"), end=0.06)
    writes, upstream = await run_turn(timeline, flush_interval=0)
    assert [deltas_of(chunks) for _, chunks in writes][:3] == [["a"], ["b"], ["c"]]
    assert upstream.gathered == []


async def test_a_backlog_is_written_without_waiting_for_the_interval() -> None:
    # 300 deltas already waiting shortly after the first write: more than MAX_BATCH per write.
    timeline = turn((0.0, "a"), *[(0.001, f"d{i}") for i in range(300)], end=0.001)
    writes, upstream = await run_turn(timeline, flush_interval=0.1)
    written = [d for _, chunks in writes for d in deltas_of(chunks)]
    assert written == ["a", *[f"d{i}" for i in range(300)]]
    assert len(writes) >= 3  # batches of at most MAX_BATCH frames
    assert writes[-1][1][-1]["type"] == "finish"
    # Holding per batch would take three intervals (0.3 s); the backlog went out at once.
    assert writes[-1][0] < 0.05 and upstream.gathered == []
