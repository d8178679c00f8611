"""Dialects whose events are a Python library's objects, streamed inside the host app's process.

pydantic-ai's agent events, the OpenAI Agents SDK's stream events, a LangGraph graph's stream:
the host app runs the library itself and hands chunkbridge the events as the library yields
them. Such a dialect has no upstream URL (:class:`InProcessContract` instead of a WebSocket or
HTTP contract), so ``chunkbridge serve`` cannot put it in front of one.

Two forms of the same event reach its translator:

* the library's own object, while the app streams: the translator reads the attributes it needs
  and nothing else (no validation, no ``model_dump`` per event);
* its *recorded* form, a JSON value (:attr:`InProcessContract.record`: the object's fields as the
  library names them, with its own type tags), which recordings hold one per line so that a
  session recorded from the real library replays into golden files like any other dialect's.
  The translator reads a recorded object through :class:`Record`, which answers the same
  attribute reads, so one handler serves both forms.

The event iterator's end belongs to the stream too: the library's iterator ends (a run that
completed) or raises (a run that failed). A driver says which after the library's last event:
:data:`STREAM_END` (or simply the end of the events: an in-process source that stops without
raising has completed), or :func:`stream_error` for the exception (what
:meth:`LibraryTranslator.read_error` gives a driver that asks); a recording holds that frame as
its last line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chunkbridge.kit.events import AGENT_ERROR, MalformedEvent
from chunkbridge.kit.translator import Translator
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.event_translator import Item

__all__ = [
    "STREAM_END",
    "STREAM_SIGNAL",
    "InProcessContract",
    "LibraryTranslator",
    "Record",
    "record_of",
    "stream_error",
]

#: The key of a stream-level frame (its value: ``"end"`` or ``"error"``); no library event has it.
STREAM_SIGNAL = "chunkbridge"
#: The frame for an event iterator that ended normally.
STREAM_END: dict[str, Any] = {STREAM_SIGNAL: "end"}


def stream_error(exc: BaseException) -> dict[str, Any]:
    """The frame for an exception the event iterator raised: its class name and message (the
    text the client's ``error`` chunk shows, unless the deployment masks errors)."""
    return {STREAM_SIGNAL: "error", "error": type(exc).__name__, "message": str(exc)}


@dataclass(frozen=True, slots=True)
class InProcessContract:
    """A dialect whose events are a Python library's objects in the host app's own process."""

    #: What the user installs: ``pip install 'chunkbridge[<extra>]'`` (the library comes with it).
    extra: str
    #: The library's events, in a few words (``"pydantic-ai agent.run_stream_events() events"``).
    events: str
    #: One library event as its recorded frame (a JSON value). Recording time only: the
    #: translator reads the objects themselves.
    record: Callable[[Any], Any]


class Record:
    """A recorded object read as the object: ``record.name`` is the recorded field (``None``
    when the recording left it out, as recordings leave out ``None`` fields). Nested objects
    stay plain JSON values: a handler wraps the ones that are objects in the library
    (:func:`record_of`), so that a field that is a ``dict`` in the library stays a ``dict``."""

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def __getattr__(self, name: str) -> Any:
        return self._fields.get(name)

    def __repr__(self) -> str:
        return f"Record({self._fields!r})"


def record_of(value: Any) -> Any:
    """``value`` read as a library object: a recorded ``dict`` through :class:`Record`, anything
    else (the library's own object, ``None``, a malformed value) as it is."""
    return Record(value) if type(value) is dict else value


class LibraryTranslator(Translator):
    """The base of an in-process dialect's translator. ``HANDLERS`` maps an event's kind
    (:meth:`event_kind`: the library's own type tag) to a method that reads the event's
    attributes, whichever form it came in (a recorded ``dict`` is read through
    :class:`Record`); the stream-level frames end the turn (:meth:`end_of_events`,
    :meth:`events_failed`). The unknown-event and malformed-event policies are the base class's:
    an unknown kind is forwarded as a transient ``data-<kind>`` part carrying its recorded form."""

    @staticmethod
    def record(event: Any) -> Any:
        """The recorded form of one event (the dialect's :attr:`InProcessContract.record`);
        dialects override it."""
        return event

    def feed(self, event: Any) -> Sequence[Item]:
        """Chunks for one of the library's events — the live object, or its recorded form (a
        dict, read through :class:`Record`) — or a stream-level frame (:data:`STREAM_END`,
        :func:`stream_error`), dispatched by :meth:`event_kind` to ``HANDLERS``."""
        if type(event) is dict:
            signal = event.get(STREAM_SIGNAL)
            if signal is not None:
                return self._signal(signal, event)
            event = Record(event)
        kind = self.event_kind(event)
        if kind is None:
            return self.malformed("not an event of this library", event)
        handler = self._handlers.get(kind)
        if handler is None:
            return self.unknown(kind, self._fields(event))
        try:
            items = handler(self, event)
        except MalformedEvent as exc:
            return self.malformed(f"{kind}: {exc}", event)
        if items:
            self.started = True
        return items

    def event_kind(self, event: Any) -> str | None:
        """The dispatch key of an event, in either form (``None``: not an event of this
        library). The default reads ``event.type``."""
        kind = getattr(event, "type", None)
        return kind if isinstance(kind, str) else None

    def read_object(self, event: Any) -> Sequence[Any]:
        """An object of the library is one event, which :meth:`feed` reads as it is (a driver
        that turns objects into events before feeding them asks this)."""
        return [event]

    def read_error(self, error: BaseException) -> Sequence[Any]:
        """An exception the library's iterator raised, as the frame that ends the turn with
        its message (:func:`stream_error`)."""
        return [stream_error(error)]

    def end_of_stream(self, terminal: bool) -> Sequence[Item]:
        """The library's iterator ended without saying so (no :data:`STREAM_END`): an
        in-process source that stops without raising completed its run (a failure comes as
        an exception, :meth:`read_error`), so the answer ends as :meth:`end_of_events` says."""
        return self.end_of_events()

    def end_of_events(self) -> Sequence[Item]:
        """The library's iterator ended normally: the run is complete. The default ends the
        open parts and finishes (``stop``, or ``tool-calls`` after a question)."""
        return [*self.end_parts(), *self.finish(self.finish_reason_after_asking("stop"))]

    def events_failed(self, error: str, message: str) -> Sequence[Item]:
        """The library's iterator raised ``error`` (the exception's class name) with
        ``message``: the turn ends with that message as its ``error``."""
        return [CloseRequest(CloseReason.UPSTREAM_ERROR, message or error or AGENT_ERROR)]

    def _signal(self, signal: Any, frame: dict[str, Any]) -> Sequence[Item]:
        if signal == "end":
            return self.end_of_events()
        if signal == "error":
            error, message = frame.get("error"), frame.get("message")
            return self.events_failed(
                error if isinstance(error, str) else "",
                message if isinstance(message, str) else "",
            )
        return self.malformed(f"unknown stream signal {signal!r}", frame)

    def _fields(self, event: Any) -> dict[str, Any]:
        """An event's fields for the ``data-*`` part of an unknown kind."""
        fields = event._fields if isinstance(event, Record) else type(self).record(event)
        return fields if isinstance(fields, dict) else {"event": fields}
