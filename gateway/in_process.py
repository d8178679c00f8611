"""An in-process dialect's event source: the library's events, then how its iterator ended.

A dialect whose events are a Python library's objects (:class:`~chunkbridge.kit.
InProcessContract`) needs, after the library's last event, the frame that says how the iterator
ended (:data:`~chunkbridge.kit.STREAM_END`, or :func:`~chunkbridge.kit.stream_error` for an
exception it raised): :func:`library_events` yields exactly that sequence, whatever drives it (a
response streaming to a client, a recorder writing a fixture, a test).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

from chunkbridge.kit import STREAM_END, stream_error

__all__ = ["library_events"]


async def library_events(
    events: AsyncIterable[Any] | AbstractAsyncContextManager[AsyncIterable[Any]],
) -> AsyncIterator[Any]:
    """The events of ``events`` — an async iterable, or an async context manager that gives one
    (pydantic-ai's ``run_stream_events()``: entered here, and exited when this generator is
    closed, so that a consumer that stops early stops the run) — then ``STREAM_END``, or the
    ``stream_error`` frame of the exception the library raised. Cancellation is not an error
    of the library's: it propagates."""
    if not isinstance(events, AsyncIterable):
        async with events as entered:
            async for item in library_events(entered):
                yield item
        return
    iterator = aiter(events)
    try:
        while True:
            try:
                event = await anext(iterator)
            except StopAsyncIteration:
                break
            except Exception as exc:  # the library's failure, told to the translator
                yield stream_error(exc)
                return
            yield event
        yield STREAM_END
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()
