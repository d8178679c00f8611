"""The base class of every dialect translator: event dispatch and what a dialect does not know.

A translator is a sans-I/O state machine (h11/wsproto style) that only *maps*: an upstream event (a
parsed JSON value) in, UI chunks out. It fills ``HANDLERS`` (upstream ``type`` → method) and its
handlers return chunk dicts; a handler that saw the upstream's terminal event ends the list with a
:class:`~chunkbridge.translators.core.closing.CloseRequest`. Everything else is someone else's job:
the turn pipeline (:class:`chunkbridge.translators.core.turn.Turn`) runs the chunks through the
stream guard (ordering, the closing discipline) and the SSE encoder, and catches any exception a
handler raises as an internal error.

The base class owns the policy for what a dialect does not know (``unknown_events``):

* an event whose ``type`` has no handler is *unknown*: with ``forward`` (default) it becomes a
  transient ``data-<type>`` part carrying the event; ``drop`` counts it; ``error`` ends the turn;
* an event that is not a JSON object, has no string ``type``, or has a field of the wrong type
  (a handler raised :class:`MalformedEvent`) is *malformed*, the upstream's fault: ``forward``
  sends a transient ``data-upstream-malformed`` part; ``drop`` counts it; ``error`` ends the turn.

Only :class:`~chunkbridge.kit.events.MalformedEvent` is blamed on the upstream. Handlers check
what they read with :func:`~chunkbridge.kit.events.require_str` and friends; any other exception
is a bug of ours.

It also owns what every dialect writes the same way: the answer's opening (:meth:`Translator.
begin`: ``start`` and ``start-step``, once), its end (:meth:`Translator.finish`), one text and
one reasoning part at a time, questions to the app.

Deterministic: ids come from the injected ``id_factory``; no clock, no randomness.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

from chunkbridge.kit.events import MalformedEvent, preview
from chunkbridge.kit.objects import read_model
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL
from chunkbridge.protocol_specs.ui_message_stream import DATA_PREFIX
from chunkbridge.translators.core.closing import CloseReason, CloseRequest, DeferredClose
from chunkbridge.translators.core.event_translator import Chunk, Item

__all__ = ["IdFactory", "Translator", "TranslatorOptions", "UnknownEventPolicy", "counter_ids"]

#: ``id_factory(kind) -> id``; ``kind`` is ``"text"``, ``"reasoning"``, ``"tool"``, ``"msg"``…
IdFactory = Callable[[str], str]


class UnknownEventPolicy(Enum):
    """What a translator does with an event type it has no handler for (the gateway's
    ``unknown_events`` setting): forward it as a transient ``data-<type>`` part, drop it
    (counted), or end the turn with an error."""

    FORWARD = "forward"
    DROP = "drop"
    ERROR = "error"


def counter_ids(after: dict[str, int] | None = None) -> IdFactory:
    """Deterministic ids ``<kind>-1``, ``<kind>-2``… (a counter per kind): golden-file friendly.
    ``after``: the highest number each kind used already (a turn taken over goes on past the
    ids its message holds)."""
    counters: dict[str, int] = dict(after or {})  # str → int: not tracked by the GC

    def next_id(kind: str) -> str:
        counters[kind] = n = counters.get(kind, 0) + 1
        return f"{kind}-{n}"

    return next_id


@dataclass(frozen=True, slots=True)
class TranslatorOptions:
    """How a translator is configured; one instance may serve every turn of a gateway."""

    #: Id source for parts the upstream gives no id for. Default: :func:`counter_ids`.
    id_factory: IdFactory | None = None
    unknown_events: UnknownEventPolicy = UnknownEventPolicy.FORWARD
    #: Send tool parts as ``dynamic-tool`` (tools the app does not define) instead of
    #: ``tool-<name>``.
    dynamic_tools: bool = False
    #: The dialect's own settings (an instance of its ``Dialect.settings`` model), if any.
    settings: Any = None


Handler = Callable[[Any, dict[str, Any]], Sequence[Item]]
_HANDLER_TABLES: dict[type, dict[str, Handler]] = {}


def _handler_table(cls: type[Translator]) -> dict[str, Handler]:
    """``HANDLERS`` resolved to functions once per class (not bound methods per stream)."""
    table = _HANDLER_TABLES.get(cls)
    if table is None:
        table = {kind: getattr(cls, name) for kind, name in cls.HANDLERS.items()}
        _HANDLER_TABLES[cls] = table
    return table


class Translator:
    """Base class: subclasses fill :attr:`HANDLERS` and implement the handlers."""

    #: upstream ``type`` → handler method name.
    HANDLERS: ClassVar[dict[str, str]] = {}
    #: Raw frames that end the upstream stream normally (e.g. OpenAI's ``[DONE]``).
    TERMINAL_FRAMES: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, options: TranslatorOptions | None = None) -> None:
        self.options = options = options or TranslatorOptions()
        self.ids: IdFactory = options.id_factory or counter_ids()
        #: ``unknown-event:<type>``, ``dropped-unknown-event``, ``malformed-event``…
        self.stats: Counter[str] = Counter()
        self._handlers = _handler_table(type(self))
        #: Some chunk was produced: the stream has started (its ``start`` went out).
        self.started = False
        #: The open text part (one at a time), which :meth:`fast_text_delta` streams into.
        self.text_id: str | None = None
        self._reasoning_id: str | None = None
        #: The agent asked the user (a question or an approval) in this turn.
        self.asked = False
        #: :meth:`begin` was called: the answer's ``start`` went out.
        self.begun = False
        #: The answer's message metadata so far (the model…), sent with its ``finish``.
        self.metadata: dict[str, Any] = {}
        #: ``busy = steer``: the id of the user message a steer frame took upstream, until the
        #: dialect sees it land (set by the gateway; see :meth:`steered`).
        self.steering: str | None = None
        #: The user message the answer ended for: the rest of the run is the next answer's.
        self.steered_by: str | None = None

    # -- the calling contract (chunkbridge.translators.core.turn.EventTranslator)
    # ---------------------------

    def feed(self, event: Any) -> Sequence[Item]:
        """Chunks (and maybe a closing :class:`CloseRequest`) for one parsed upstream event.

        Raises only for bugs: malformed and unknown input is handled by the policy."""
        if type(event) is not dict:
            return self.malformed("not a JSON object", event)
        event_type = self.event_type(event)
        if event_type is None:
            return self.malformed("no string 'type'", event)
        handler = self._handlers.get(event_type)
        if handler is None:
            return self.unknown(event_type, event)
        try:
            items = handler(self, event)
        except MalformedEvent as exc:
            return self.malformed(f"{event_type}: {exc}", event)
        if items:
            self.started = True
        return items

    def read_object(self, event: Any) -> Sequence[Any] | None:
        """The events an object from an in-process source stands for (the turn calls this for
        what is not a dict): a pydantic model (an SDK's event) is the JSON object it was read
        from (:func:`~chunkbridge.kit.objects.wire_dict`); ``[]`` for an SDK's own bookkeeping
        that says nothing new (a dialect overrides this to say which); ``None`` for anything
        else, which is then malformed. A dialect whose library's events are not pydantic
        models reads them here, or returns ``[event]`` and dispatches on them itself."""
        read = read_model(event)
        return None if read is None else [read]

    def read_error(self, error: Exception) -> Sequence[Any] | None:
        """An exception an in-process source raised, as the events it stands for: a dialect
        whose SDK raises on the provider's ``error`` event (:func:`~chunkbridge.kit.objects.
        sdk_error`) gives that event back, so the turn ends as the gateway ends it; ``None``
        (the default): a failure of the source, ended with a generic error."""
        return None

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        """The text of ``event`` if it is a plain, non-empty delta for the open text part
        :attr:`text_id` (doing the dialect's own bookkeeping for it), else ``None`` with no side
        effect. Dialects override this to use the pipeline's hot path; the default always takes
        the general path."""
        return None

    def end_of_stream(self, terminal: bool) -> Sequence[Item]:
        """The upstream ended: ``terminal`` for one of :attr:`TERMINAL_FRAMES`, else its
        connection closed. Return what is left to say, ending with a :class:`CloseRequest` when
        the turn is complete after all (a dialect that waited for a trailing usage event…).
        Without one, the pipeline ends the turn as completed after a terminal frame and as
        truncated after a close. The default has nothing to add."""
        return []

    def event_type(self, event: dict[str, Any]) -> str | None:
        """The dispatch key of an event (``event["type"]``; dialects may override)."""
        event_type = event.get("type")
        return event_type if isinstance(event_type, str) else None

    def malformed(self, why: str, raw: Any) -> Sequence[Item]:
        """A frame or event the upstream got wrong, per the policy (also for frames that are
        not JSON: the pipeline calls this)."""
        self.stats["malformed-event"] += 1
        policy = self.options.unknown_events
        if policy is UnknownEventPolicy.DROP:
            return []
        if policy is UnknownEventPolicy.ERROR:
            return [CloseRequest(CloseReason.UPSTREAM_PROTOCOL_ERROR)]
        self.started = True
        data = {"reason": why, "frame": preview(raw)}
        return [{"type": "data-upstream-malformed", "data": data, "transient": True}]

    def unknown(self, event_type: str, event: dict[str, Any]) -> Sequence[Item]:
        """Something this dialect has no mapping for, per the policy: an event type without a
        handler, or (called by handlers) an unknown kind inside a known event, such as a new
        content block type; ``event_type`` names the ``data-*`` part."""
        self.stats[f"unknown-event:{event_type}"] += 1
        policy = self.options.unknown_events
        if policy is UnknownEventPolicy.DROP:
            self.stats["dropped-unknown-event"] += 1
            return []
        if policy is UnknownEventPolicy.ERROR:
            text = f"Unsupported upstream event: {event_type}"
            return [CloseRequest(CloseReason.UPSTREAM_PROTOCOL_ERROR, text)]
        self.started = True
        data = {k: v for k, v in event.items() if k != "type"}
        return [{"type": DATA_PREFIX + event_type, "data": data, "transient": True}]

    # -- the answer's lifecycle: how every dialect opens and ends one ---------------------------

    def begin(
        self, *, model: Any = None, metadata: Mapping[str, Any] | None = None, step: bool = True
    ) -> list[Chunk]:
        """The answer's opening, once (``[]`` after): ``start`` then ``start-step`` (``step=False``:
        the dialect opens its steps itself). ``start.messageMetadata`` has the ``model`` the
        upstream named (kept in :attr:`metadata` for the finish too) and ``metadata``. When other
        chunks already went out (the guard opened the message for them), the metadata comes as
        a ``message-metadata`` chunk instead."""
        if self.begun:
            return []
        self.begun = True
        shown: dict[str, Any] = {}
        if isinstance(model, str) and model:
            self.metadata["model"] = shown["model"] = model
        if metadata:
            shown.update(metadata)
        out: list[Chunk] = []
        if not self.started:
            start: Chunk = {"type": "start"}
            if shown:
                start["messageMetadata"] = shown
            out.append(start)
        elif shown:
            out.append({"type": "message-metadata", "messageMetadata": shown})
        if step:
            out.append({"type": "start-step"})
        return out

    def finish(
        self,
        finish_reason: str | None,
        *,
        usage: Mapping[str, int] | None = None,
        step: bool = True,
        **metadata: Any,
    ) -> list[Item]:
        """The answer's end: ``finish-step`` (``step=False``: the dialect ended the step itself)
        and the :class:`CloseRequest` that completes the turn with ``finish_reason`` and the
        message metadata — :attr:`metadata`, the ``usage`` if any, then ``metadata`` whose values
        are not ``None``; none at all when that is empty."""
        merged = dict(self.metadata)
        if usage:
            merged["usage"] = usage
        merged.update((k, v) for k, v in metadata.items() if v is not None)
        close = CloseRequest(
            CloseReason.COMPLETED, finish_reason=finish_reason, message_metadata=merged or None
        )
        return [{"type": "finish-step"}, close] if step else [close]

    def steered(self, finish_reason: str | None, **metadata: Any) -> list[Item]:
        """The steered user message (:attr:`steering`) landed in the run: the answer ends here,
        its ``finish`` saying ``steeredBy``, and the events that follow are the next answer's
        (the turn is done, so the gateway reads them into that one). A dialect calls this where
        its agent shows the message it was steered with (pi: the user ``message_start`` after a
        turn's end), with the step it had open already ended."""
        by, self.steering = self.steering, None
        self.steered_by = by
        return self.finish(finish_reason, step=False, steeredBy=by, **metadata)

    # -- helpers for dialects: one text and one reasoning part at a time ------------------------

    def text_delta(self, delta: str) -> list[Chunk]:
        """Text into the open text part (opening one, and closing reasoning, when needed)."""
        text_id = self.text_id
        if text_id is not None:
            return [{"type": "text-delta", "id": text_id, "delta": delta}]
        out = self.end_reasoning()
        self.text_id = text_id = self.ids("text")
        out.append({"type": "text-start", "id": text_id})
        out.append({"type": "text-delta", "id": text_id, "delta": delta})
        return out

    def reasoning_delta(self, delta: str) -> list[Chunk]:
        """Reasoning into the open reasoning part (closing text first, when open)."""
        reasoning_id = self._reasoning_id
        if reasoning_id is not None:
            return [{"type": "reasoning-delta", "id": reasoning_id, "delta": delta}]
        out = self.end_text()
        self._reasoning_id = reasoning_id = self.ids("reasoning")
        out.append({"type": "reasoning-start", "id": reasoning_id})
        out.append({"type": "reasoning-delta", "id": reasoning_id, "delta": delta})
        return out

    def end_text(self) -> list[Chunk]:
        """End the open text part (of :meth:`text_delta`), if any."""
        if self.text_id is None:
            return []
        text_id, self.text_id = self.text_id, None
        return [{"type": "text-end", "id": text_id}]

    def end_reasoning(self) -> list[Chunk]:
        """End the open reasoning part (of :meth:`reasoning_delta`), if any."""
        if self._reasoning_id is None:
            return []
        reasoning_id, self._reasoning_id = self._reasoning_id, None
        return [{"type": "reasoning-end", "id": reasoning_id}]

    def end_parts(self) -> list[Chunk]:
        """End the open reasoning and text parts: before a tool call, a step's or the answer's
        end."""
        return self.end_reasoning() + self.end_text()

    def tool_flags(self, **flags: Any) -> dict[str, Any]:
        """Flags every chunk of one tool call carries (``dynamic`` when configured)."""
        if self.options.dynamic_tools:
            flags["dynamic"] = True
        return flags

    def question(self, question_id: str, question: dict[str, Any]) -> list[Chunk]:
        """The agent asks the app: the client-side ``ask_user`` call (``toolCallId`` = the
        question's id, ``input`` = its fields) that ends at ``input-available``
        (``protocol_specs/human_in_the_loop.py``). The caller follows it with
        :meth:`await_answer`."""
        base = {"toolCallId": question_id, "toolName": QUESTION_TOOL, **self.tool_flags()}
        return [
            {"type": "tool-input-start", **base},
            {"type": "tool-input-available", **base, "input": question},
        ]

    def await_answer(self) -> DeferredClose:
        """After a question or an approval request: the turn ends (``tool-calls``) if the agent
        waits — falls silent for the settle window, or its connection ends — and goes on into
        the same message if it keeps talking (:class:`DeferredClose`). A dialect whose upstream
        says explicitly that it waits returns a :class:`CloseRequest` then."""
        self.asked = True
        return DeferredClose(CloseRequest(CloseReason.COMPLETED, finish_reason="tool-calls"))

    def going_on(self) -> list[Item]:
        """The upstream says the agent is busy again after it asked (a status, not content):
        the pending :meth:`await_answer` is withdrawn, the turn ends at the agent's own end."""
        return [DeferredClose(None)] if self.asked else []

    def finish_reason_after_asking(self, finish_reason: str) -> str:
        """A normal ``stop`` is ``tool-calls`` when the agent asked the user in this turn: the
        message ends with a question or an approval the app still has to answer."""
        return "tool-calls" if self.asked and finish_reason == "stop" else finish_reason
