"""The turn driver's clock on virtual time (``looptime``): the first-event, idle and total
timeouts and the keep-alive cadence happen exactly when they are due — a minute of silence
costs no wall-clock time, and a busy machine cannot make them early or late."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import new_turn
from tests.timed_upstream import TimedUpstream, record_writes, settings

pytestmark = pytest.mark.looptime
CREATE = {"type": "message.create", "turnId": "t"}


def delta(text: str) -> dict[str, Any]:
    return {"type": "message.part.text-delta", "turnId": "t", "delta": text}


async def test_a_silent_upstream_meets_the_first_event_timeout_with_keepalives_before() -> None:
    writes, driver = await record_writes(
        TimedUpstream([], ends=False), new_turn("agent-ops-v2"), settings()
    )
    assert driver.timeout is not None and driver.timeout.value == "first-event"
    assert [t for t, chunks in writes if not chunks] == pytest.approx([15, 30, 45], abs=0.01)
    assert writes[-1][0] == pytest.approx(60, abs=0.01)
    chunks = writes[-1][1]
    assert chunks[-1] == {"type": "finish", "finishReason": "error"}
    assert any(c.get("errorText") == "The agent did not respond in time." for c in chunks)
    assert driver.abandoned  # the abort frame goes upstream


async def test_a_trickle_of_events_meets_the_total_timeout_not_the_idle_one() -> None:
    timeline = [(0, CREATE), *[(10.0 * i, delta(f"{i} ")) for i in range(1, 100)]]
    writes, driver = await record_writes(
        TimedUpstream(timeline), new_turn("agent-ops-v2"), settings(total_timeout=95)
    )
    assert driver.timeout is not None and driver.timeout.value == "total"
    assert writes[-1][0] == pytest.approx(95, abs=0.01)
    assert not [t for t, chunks in writes if not chunks]  # 10 s apart: no keep-alive needed


async def test_events_reset_the_idle_timeout_and_the_keepalive() -> None:
    timeline = [(0, CREATE), (14, delta("a")), (28, delta("b"))]
    writes, driver = await record_writes(
        TimedUpstream(timeline, ends=False),
        new_turn("agent-ops-v2"),
        settings(idle_timeout=20),
    )
    assert driver.timeout is not None and driver.timeout.value == "idle"
    assert writes[-1][0] == pytest.approx(48, abs=0.01)
    assert [t for t, chunks in writes if not chunks] == pytest.approx([43], abs=0.01)
