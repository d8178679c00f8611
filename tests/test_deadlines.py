"""Deadlines, sans-I/O: the caller's clock in, what is due out."""

from __future__ import annotations

import pytest

from chunkbridge.translators.core.deadlines import Deadlines, Due


def deadlines(now: float = 100.0, **limits: float) -> Deadlines:
    values = {"first_event": 5.0, "idle": 2.0, "total": 30.0, "keepalive": 1.0, **limits}
    return Deadlines(now, **values)


def test_nothing_is_due_before_the_first_limit() -> None:
    d = deadlines()
    assert d.next_check() == 101.0  # the keep-alive comes first
    assert d.due(100.999) is None


def test_a_keepalive_is_due_after_silence_towards_the_client_and_rearms_on_write() -> None:
    d = deadlines()
    assert d.due(101.0) is Due.KEEPALIVE
    d.wrote(101.0)
    assert d.next_check() == 102.0
    assert d.due(101.5) is None


def test_silence_before_the_first_event_uses_the_first_event_limit() -> None:
    d = deadlines(keepalive=60.0)
    assert d.next_check() == 105.0
    assert d.due(104.9) is None
    assert d.due(105.0) is Due.FIRST_EVENT_TIMEOUT


def test_after_the_first_event_the_idle_limit_applies_from_the_last_event() -> None:
    d = deadlines(keepalive=60.0)
    d.event(103.0)
    assert d.next_check() == 105.0  # 103 + idle 2
    d.event(104.5)
    assert d.due(106.0) is None
    assert d.due(106.5) is Due.IDLE_TIMEOUT


def test_the_total_limit_counts_from_when_the_request_started() -> None:
    d = Deadlines(100.0, first_event=50, idle=50, total=30, keepalive=60, started=90.0)
    assert d.ends_at == 120.0
    assert d.due(119.9) is None
    assert d.due(120.0) is Due.TOTAL_TIMEOUT


def test_a_timeout_wins_over_a_keepalive_due_at_the_same_time() -> None:
    d = deadlines(first_event=1.0, keepalive=1.0)
    assert d.due(101.0) is Due.FIRST_EVENT_TIMEOUT
    d = deadlines(total=1.0, keepalive=1.0, first_event=9.0)
    assert d.due(101.0) is Due.TOTAL_TIMEOUT


def test_events_keep_an_idle_turn_alive_but_not_past_its_total() -> None:
    d = deadlines(total=10.0, keepalive=60.0)
    for t in range(101, 111):
        assert d.due(float(t) - 0.01) is None, t
        d.event(float(t))
    assert d.due(110.0) is Due.TOTAL_TIMEOUT


@pytest.mark.parametrize(
    ("due", "value", "is_timeout"),
    [
        (Due.KEEPALIVE, "keepalive", False),
        (Due.FIRST_EVENT_TIMEOUT, "first-event", True),
        (Due.IDLE_TIMEOUT, "idle", True),
        (Due.TOTAL_TIMEOUT, "total", True),
    ],
)
def test_what_is_due_names_itself_for_the_log(due: Due, value: str, is_timeout: bool) -> None:
    assert due.value == value and due.is_timeout is is_timeout
