"""An app's own events as an upstream: the in-process source of ``UIStreamResponse``.

An app that runs its model or agent in-process — an SDK's stream, an agent's events, its own
async generator — hands chunkbridge that iterator instead of an upstream URL.
:class:`EventSource` is the :class:`~chunkbridge.gateway.transports.base.Upstream` it becomes,
so the turn driver, the pipeline and everything around a turn are the ones a network upstream
gets. One task (the *pump*) reads the source ahead into a small buffer: the driver takes what
is there in one write (as it takes what a socket holds), and its timers — keep-alives,
timeouts, a stop — wake a waiting ``recv`` whatever the source is doing.

What the source may be: an async iterable; an awaitable of one (``AsyncOpenAI``'s
``create(..., stream=True)``); an async context manager whose value is one, entered and left by
the pump (``anthropic``'s ``messages.stream()``, pydantic-ai's ``run_stream_events()``; an SDK
stream that is both is entered too, so its own exit closes it); a list or tuple; another
iterable, read in a worker thread as Starlette reads a sync body (it may block); or a callable
(:func:`opens_later`) that returns one of these, called by the pump when the turn first reads —
so nothing of the source starts before the turn does (a request that waited its turn first).

Closing (:meth:`EventSource.aclose`: the turn is over, or the client stopped or went away):
the pump is cancelled — inside the source's context, or followed by its ``aclose()`` or
``close()`` (an SDK's stream closes its HTTP response) — and waited for up to
:data:`CLOSE_TIMEOUT` seconds. A source that raises ends the turn: an SDK's error that carries
the provider's error event is that event again (``read_error``: the dialect's translator says
it, :meth:`~chunkbridge.kit.Translator.read_error`), so the turn ends with the provider's own
message as the gateway's would; any other exception is an upstream failure
(:class:`SourceFailed`: a generic text, the exception in the log).
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from starlette.concurrency import iterate_in_threadpool

from chunkbridge.gateway.errors import UpstreamError
from chunkbridge.gateway.transports.base import UpstreamEnded
from chunkbridge.kit import AGENT_ERROR

__all__ = ["CLOSE_TIMEOUT", "EventSource", "SourceFailed", "check_source", "opens_later"]

#: Seconds a closing source gets to stop (a Stop or a disconnect closes it within them).
CLOSE_TIMEOUT = 1.0
#: Events read ahead at most (the driver writes at most this many at once, ``MAX_BATCH``).
READ_AHEAD = 128


#: ``read_error(exception)``: the events an exception of the source stands for, or ``None``.
ReadError = Callable[[Exception], Sequence[Any] | None]


class SourceFailed(UpstreamError):
    """The app's source raised: the turn ends with an error chunk (a generic text: the
    exception's may be internal; it goes to the log)."""

    client_message = AGENT_ERROR

    def __init__(self, error: Exception) -> None:
        super().__init__(detail=f"{type(error).__name__}: {error}")
        self.error = error


def check_source(events: Any) -> None:
    """Raise :class:`TypeError` at once for what no source can be (an app's bug)."""
    if not (_is_source(events) or opens_later(events)):
        raise TypeError(
            f"events must be an async iterable of events (or an awaitable or async context "
            f"manager of one, or a callable returning one), not {type(events).__name__}"
        )


def opens_later(events: Any) -> bool:
    """``events`` is a callable that opens the source (no source itself: an async context
    manager made by ``contextlib.asynccontextmanager`` is callable too, and is a source)."""
    return callable(events) and not _is_source(events)


def _is_source(events: Any) -> bool:
    kind = type(events)
    return (
        inspect.isawaitable(events)
        or hasattr(kind, "__aiter__")
        or hasattr(kind, "__aenter__")
        or hasattr(kind, "__iter__")
    ) and not isinstance(events, str | bytes | dict)


class EventSource:
    """The app's events as an :class:`~chunkbridge.gateway.transports.base.Upstream`."""

    def __init__(self, events: Any, log: Any = None, read_error: ReadError | None = None) -> None:
        check_source(events)
        self._events = events
        self._log = log
        self._read_error = read_error
        self._buffer: deque[Any] = deque()
        #: How the source ended (:class:`UpstreamEnded`, :class:`SourceFailed`), once it did.
        self._end: Exception | None = None
        self._waiter: asyncio.Future[bool] | None = None
        self._room: asyncio.Future[None] | None = None
        self._pump: asyncio.Task[None] | None = None
        self._pumping = False

    # -- the Upstream protocol -----------------------------------------------------------------

    async def recv(self) -> Any:
        buffer = self._buffer
        while not buffer:
            if self._end is not None:
                raise self._end
            loop = asyncio.get_running_loop()
            if self._pump is None:
                self._pump = loop.create_task(self._run())
            self._waiter = waiter = loop.create_future()
            try:
                if not await waiter:
                    return None  # woken
            finally:
                self._waiter = None
        event = buffer.popleft()
        room = self._room
        if room is not None and not room.done() and len(buffer) < READ_AHEAD // 2:
            room.set_result(None)
        return event

    def buffered(self) -> bool:
        return bool(self._buffer) or self._end is not None

    def wake(self) -> None:
        self._tell(False)

    async def gather(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def aclose(self, *, abort: bool = False) -> None:
        """Stop reading and close the source (within :data:`CLOSE_TIMEOUT`). Never raises."""
        pump = self._pump
        if pump is not None and not pump.done():
            pump.cancel()
            await asyncio.wait({pump}, timeout=CLOSE_TIMEOUT)
            if not pump.done() and self._log is not None:
                self._log.warning("source.close_timeout", seconds=CLOSE_TIMEOUT)
        if not self._pumping:  # never read (the turn ended first): what it was given, closed
            self._pumping = True
            try:
                await _discard(self._events)
            except Exception as exc:
                self._failed(exc)
        if self._end is None:
            self._end = UpstreamEnded()

    # -- the pump ------------------------------------------------------------------------------

    def _tell(self, arrived: bool) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(arrived)

    async def _run(self) -> None:
        self._pumping = True
        try:
            events = self._events
            if opens_later(events):
                events = events()
                if not _is_source(events):  # (the app's bug: said in the log)
                    raise TypeError(f"events() returned {type(events).__name__}, no source")
            if inspect.isawaitable(events):
                events = await events
            if hasattr(type(events), "__aenter__"):
                async with events as entered:
                    await self._read(events if entered is None else entered)
            else:
                try:
                    await self._read(events)
                finally:
                    await _close(events)
            self._end = UpstreamEnded()
        except asyncio.CancelledError:
            self._end = UpstreamEnded()
            raise
        except Exception as exc:
            self._failed(exc)
        finally:
            self._tell(True)

    async def _read(self, source: Any) -> None:
        buffer, tell = self._buffer, self._tell
        async for event in _iterate(source):
            buffer.append(event)
            tell(True)
            if len(buffer) >= READ_AHEAD:
                self._room = room = asyncio.get_running_loop().create_future()
                try:
                    await room
                finally:
                    self._room = None

    def _failed(self, exc: Exception) -> None:
        try:
            events = None if self._read_error is None else self._read_error(exc)
        except Exception:  # (the dialect's bug: the source's failure is still told)
            events = None
        if events:  # the provider's error, raised by its SDK: its event, as the wire had it
            self._buffer.extend(events)
            self._end = UpstreamEnded()
            if self._log is not None:
                self._log.info("source.provider_error", error=f"{type(exc).__name__}: {exc}")
            return
        self._end = failed = SourceFailed(exc)
        if self._log is not None:
            self._log.warning("source.failed", error=failed.detail, exc_info=exc)


def _iterate(source: Any) -> AsyncIterator[Any]:
    """``source``'s events, asynchronously."""
    if hasattr(type(source), "__aiter__"):
        iterator: AsyncIterator[Any] = aiter(source)
        return iterator
    if isinstance(source, list | tuple):
        return _from_memory(source)
    if isinstance(source, Iterable):
        return iterate_in_threadpool(iter(source))
    raise TypeError(f"events must be an async iterable, not {type(source).__name__}")


async def _from_memory(events: Iterable[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


async def _close(source: Any) -> None:
    """Close an iterator the pump read (``aclose()``, else ``close()``, awaited if it must)."""
    close = getattr(source, "aclose", None) or getattr(source, "close", None)
    if close is not None:
        done = close()
        if inspect.isawaitable(done):
            await done


async def _discard(events: Any) -> None:
    """What a turn that ended before reading was given: a coroutine closed unawaited (its
    request never sent), an iterator closed (an SDK's stream that is a context manager too:
    its response is open), a context manager that is only that left unentered, a callable
    never called."""
    kind = type(events)
    if inspect.iscoroutine(events):
        events.close()
    elif hasattr(kind, "__aiter__") or not (hasattr(kind, "__aenter__") or opens_later(events)):
        await _close(events)
