"""An upstream whose frames arrive at set times, for driving a :class:`TurnDriver` in tests.

Times are seconds on the running loop's clock after the turn started. Tests that use it run on
virtual time (``@pytest.mark.looptime``: the loop's clock jumps to the next timer when nothing
is ready), so a 120 s idle timeout costs no wall-clock time and no result depends on how busy
the machine is."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable
from typing import Any

import orjson

from chunkbridge.gateway.transports import UpstreamEnded
from chunkbridge.gateway.turn.driver import DriverSettings, TurnDriver
from chunkbridge.translators.core.turn import Turn

__all__ = ["TimedUpstream", "Write", "record_writes", "settings"]

#: ``(seconds after the first recv, frame)``; a frame of ``None`` ends the upstream there.
Timeline = Iterable[tuple[float, dict[str, Any] | None]]


class TimedUpstream:
    """Frames that arrive at given times (seconds after the first :meth:`now`); the end of the
    timeline is the upstream's end."""

    def __init__(self, timeline: Timeline, *, ends: bool = True) -> None:
        self.timeline = deque(timeline)
        #: Without ``ends``, the upstream stays silent after its last frame (a session socket).
        self.ends = ends
        self.start: float | None = None
        self.gathered: list[float] = []
        self.closed_with: bool | None = None
        self._woken = asyncio.Event()

    def now(self) -> float:
        loop = asyncio.get_running_loop()
        if self.start is None:
            self.start = loop.time()
        return loop.time() - self.start

    async def recv(self) -> bytes | None:
        if not self.timeline:
            if self.ends:
                raise UpstreamEnded
            return await self._sleep(float("inf"))
        at, frame = self.timeline[0]
        wait = at - self.now()
        if wait > 0 and await self._sleep(wait) is None:
            return None  # woken
        self.timeline.popleft()
        if frame is None:
            self.timeline.clear()
            raise UpstreamEnded
        return orjson.dumps(frame)

    async def _sleep(self, seconds: float) -> bytes | None:
        """``b""`` after ``seconds``, ``None`` when :meth:`wake` came first."""
        self._woken.clear()
        waker = asyncio.ensure_future(self._woken.wait())
        try:
            timeout = None if seconds == float("inf") else seconds
            done, _ = await asyncio.wait({waker}, timeout=timeout)
        finally:
            waker.cancel()
        return None if done else b""

    def buffered(self) -> bool:
        return bool(self.timeline) and self.timeline[0][0] <= self.now()

    def wake(self) -> None:
        self._woken.set()

    async def gather(self, seconds: float) -> None:
        self.gathered.append(seconds)
        await asyncio.sleep(seconds)

    async def aclose(self, *, abort: bool = False) -> None:
        self.closed_with = abort


Write = tuple[float, list[dict[str, Any]]]


def settings(**changes: float) -> DriverSettings:
    values: dict[str, float] = {
        "first_event_timeout": 60,
        "idle_timeout": 120,
        "total_timeout": 1800,
        "keepalive_interval": 15,
        "flush_interval": 0.001,
        "question_settle": 0.5,
    }
    values.update(changes)
    return DriverSettings(**values)


async def record_writes(
    upstream: TimedUpstream, turn: Turn, driver_settings: DriverSettings
) -> tuple[list[Write], TurnDriver]:
    """Run one turn; each write of chunks (seconds after the start, its chunks) and the driver.
    Keep-alive comments are recorded as a write of no chunks."""
    upstream.now()  # times count from here
    driver = TurnDriver(upstream, turn, driver_settings, clock=asyncio.get_running_loop().time)
    writes: list[Write] = []

    async def write(body: bytes) -> None:
        chunks = [
            orjson.loads(line[6:]) for line in body.split(b"\n\n") if line.startswith(b"data: {")
        ]
        writes.append((upstream.now(), chunks))

    await driver.run(write)
    return writes, driver
