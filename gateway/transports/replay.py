"""A recorded session as an upstream (httpx's ``MockTransport`` idea): the frames of a recording,
then a normal end. It never waits — every frame is already here — so the turn driver runs a replay
to its end in one step, with no event loop and no clock: ``chunkbridge replay`` and the golden
files run exactly the loop that serves users."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from chunkbridge.gateway.transports.base import UpstreamEnded

__all__ = ["ReplayUpstream"]


class ReplayUpstream:
    def __init__(self, frames: Iterable[str | bytes]) -> None:
        self._frames = deque(frames)

    async def recv(self) -> str | bytes:
        if not self._frames:
            raise UpstreamEnded
        return self._frames.popleft()

    def buffered(self) -> bool:
        return True  # the next frame, or the end, is always here: recv never waits

    def wake(self) -> None:
        pass

    async def gather(self, seconds: float) -> None:
        pass

    async def aclose(self, *, abort: bool = False) -> None:
        self._frames.clear()
