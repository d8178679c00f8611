"""A tool server's health: one task per server owns its connection, notices when it ends, and
connects again.

The ``mcp`` SDK's client is entered and left by one task (its anyio cancel scopes require it),
so the connection is the supervising task's: it connects, then waits until the connection is
lost, or its owner stops it, and closes it itself. A connection is lost when

- the server's messages end: a stdio server whose process exited (its stdout closed), or a
  transport the SDK closed (:func:`watched` sees the end of its read stream);
- the SDK's HTTP transport fails (a request that cannot reach the server fails the transport's
  task group, which cancels this task: the one cancellation not asked for by :meth:`stop`);
- an HTTP server does not answer a liveness probe (``tools/list``, every ``probe_interval``
  seconds, bounded by ``connect_timeout``). A stdio server is not probed: a server busy with a
  blocking tool is not dead, and its exit is seen at once.

Down, the server's tools leave the catalog (``on_health``), a call still waiting on it ends with
an error that says so, and it is started or connected again after 1 s, then 2, 4… up to 30 s
between tries; back up, its tools return. Only the first connection's failure is the start-up's
(:class:`~chunkbridge.gateway.tools.mcp_source.ToolSourceUnavailable`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio

from chunkbridge.gateway.logging import get_logger

if TYPE_CHECKING:
    from chunkbridge.gateway.tools.mcp_source import McpToolSource

__all__ = ["FIRST_RETRY", "MAX_RETRY", "Supervisor", "describe", "watched"]

#: Seconds before the first try to connect again; doubled after each failed try.
FIRST_RETRY = 1.0
#: Seconds between tries at most.
MAX_RETRY = 30.0


class Supervisor:
    """The task that owns one server's connection (see the module)."""

    def __init__(self, source: McpToolSource) -> None:
        self.source = source
        self.up = False
        #: Why the server is down (``None`` while it is up).
        self.reason: str | None = None
        #: Called when the server goes down or comes back up.
        self.on_health: Callable[[McpToolSource], None] = lambda source: None
        self.log = get_logger("chunkbridge.tools")
        self._stopping = asyncio.Event()
        self._connecting = False
        self._down_since = 0.0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Connect the first time; the connection's failure is raised as it is."""
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(started), name=f"tools:{self.source.name}")
        await started

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._stopping.set()
        if self._connecting:  # a try may take connect_timeout: not worth waiting for
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _run(self, started: asyncio.Future[None]) -> None:
        try:
            await self._connect()
        except BaseException as exc:
            started.set_exception(exc)
            return
        self.up = True
        started.set_result(None)
        try:
            while await self._serve() and await self._reconnect():
                self._came_up()
        except Exception as exc:  # our bug: said, and the server left down, not half up
            self.log.exception("tools.supervisor_failed", server=self.source.name)
            with contextlib.suppress(Exception):
                await self.source.close()  # once more: what failed may have been a passing fault
            self._went_down(f"its supervision failed: {describe(exc)}")

    async def _connect(self) -> None:
        self._connecting = True
        try:
            await self.source.open()
        finally:
            self._connecting = False

    async def _serve(self) -> bool:
        """Wait while the connection lasts, then close it; ``False`` when stopped."""
        source = self.source
        try:
            reason = await self._watch()
        except asyncio.CancelledError:  # the SDK's transport failed: it cancels its scopes
            failure = await source.close(failed=True)
            if self._stopping.is_set():
                raise
            self._went_down(failure or "the connection failed")
            return True
        if reason is None:
            await source.close()
            return False
        self._went_down(reason)  # its tools leave now, not after the close's own waits
        await source.close()
        return True

    async def _watch(self) -> str | None:
        source = self.source
        interval = source.settings.probe_interval if source.settings.url is not None else None
        lost = source.lost
        while not self._stopping.is_set():
            if lost.is_set():
                return source.lost_reason or "the connection ended"
            if not await _any_set(interval, lost, self._stopping) and interval is not None:
                try:
                    async with asyncio.timeout(source.settings.connect_timeout):
                        await source.probe()
                except Exception as exc:
                    return f"no answer to a probe: {describe(exc)}"
        return None

    async def _reconnect(self) -> bool:
        """Try again with backoff until connected (``True``) or stopped."""
        delay = FIRST_RETRY
        tries = 0
        while not await _any_set(delay, self._stopping):
            tries += 1
            try:
                await self._connect()
            except Exception as exc:
                delay = min(delay * 2, MAX_RETRY)
                self.log.info(
                    "tools.reconnect_failed",
                    server=self.source.name,
                    tries=tries,
                    error=describe(exc),
                    retry_in=delay,
                )
                continue
            return True
        return False

    def _went_down(self, reason: str) -> None:
        self.up, self.reason, self._down_since = False, reason, time.monotonic()
        self.log.warning("tools.server_down", server=self.source.name, reason=reason)
        self.on_health(self.source)

    def _came_up(self) -> None:
        self.up, self.reason = True, None
        down = round(time.monotonic() - self._down_since, 3)
        tools = len(self.source.tools)
        self.log.info("tools.server_up", server=self.source.name, down_seconds=down, tools=tools)
        self.on_health(self.source)


async def _any_set(seconds: float | None, *events: asyncio.Event) -> bool:
    """Wait until one of ``events`` is set (``True``), or ``seconds`` pass (``False``)."""
    waits = {asyncio.ensure_future(event.wait()) for event in events}
    try:
        done, _ = await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
    return bool(done)


def describe(exc: BaseException) -> str:
    """``Type: message`` of the failure inside ``exc`` (the first of an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


@contextlib.asynccontextmanager
async def watched(transport: Any, ended: Callable[[], None]) -> AsyncIterator[Any]:
    """The SDK ``transport`` whose read stream calls ``ended`` when the server's messages end."""
    async with transport as (read, write):
        yield _WatchedStream(read, ended), write


class _WatchedStream:
    """A transport's read stream, as the SDK reads it, that says when it ends."""

    def __init__(self, stream: Any, ended: Callable[[], None]) -> None:
        self._stream = stream
        self._ended = ended

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended()
            raise

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _WatchedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:  # ``last_context``, which the SDK looks for
        return getattr(self._stream, name)
