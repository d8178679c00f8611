"""A model step made again after a takeover, sans-I/O: what readers saw stays, nothing twice.

A durable agent turn streams each model step into a chunk log that readers follow. When the
instance running the turn dies while the model streams step *k*, another instance takes the turn
over: it feeds the whole log into a fresh :class:`~chunkbridge.translators.core.turn.Turn`
(``Turn.emit``: its guard and assembler then hold exactly what readers saw, nothing is written
again) and calls the model for step *k* again. Readers already saw the step's beginning — the
*tail*: its ``start-step``, some text, reasoning, a tool call's input so far. Fed as they come,
the redone call's chunks would open a second step inside the first, show that text twice and
reuse ids the guard still has open.

:class:`StepRedo` wraps the redone call's translator for that one step (an
:class:`~chunkbridge.translators.core.event_translator.EventTranslator` like it, under the turn's
:class:`~chunkbridge.translators.core.steps.StepJoin`) and makes the redone step a continuation
of the tail:

* the redone ``start-step`` is dropped when the tail opened the step;
* the redone parts are matched to the shown ones in order, by kind — the n-th text with the n-th
  text, the n-th reasoning with the n-th reasoning, a tool call with the shown call of the same
  ``toolCallId``, or else of the same ``toolName`` at the same position. A matched part's
  ``*-start`` is dropped and its chunks go out under the shown id;
* while the redone text (a tool call's input text) repeats the shown text, its deltas are
  dropped; once it goes past, only what is new goes out, into the shown part — or, when readers
  saw that part end, into a new part after it;
* a matched part's end closes the shown part if readers saw it open, else it is dropped; a
  matched call's ``tool-input-available`` goes out under the shown ``toolCallId`` (so the loop
  runs the call readers saw), unless readers saw the call settled already;
* when the step ends (its ``finish-step``, its completing
  :class:`~chunkbridge.translators.core.closing.CloseRequest`, the end of the stream), shown parts
  left unmatched are closed: text and reasoning ended, a call whose input was cut off settled by
  ``tool-input-error`` (an input that will not complete; a call whose input was complete stays as
  it was shown, the guard settles it at the turn's end like any call left over).

With a model that answers differently the second time, what was shown stays and the new answer
follows: at the first redone part that contradicts the shown one (other text, a call of another
tool at that position), the shown part ends as it is (a cut-off call with ``tool-input-error``),
so do the shown parts not matched yet, the redone part so far goes out as a new part, and the rest
of the redone step passes through unchanged.

A part that goes out as a new part keeps the redone translator's id unless the message already
used it (a fresh translator counts from 1 again): then it gets a ``-redo`` suffix. Sources,
files and data parts are not matched: a redone one shows again.

A client that takes ``reset-step`` (``reset_step``) is not given a continuation: the taker
withdraws the tail with that chunk first, and :func:`step_tail` reads a withdrawn tail as the
step's opening alone — the redone step then only drops its ``start-step`` and shows its parts as
new ones.

The turn's hot path writes text deltas straight under :attr:`StepRedo.text_id`; it is ``None``
while the open redone text part is rewritten, so those deltas come through :meth:`StepRedo.feed`.
The wrapper lives for one step: the next model call's translator is a plain one again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.event_translator import Chunk, EventTranslator, Item

__all__ = ["CUT_OFF_CALL_TEXT", "StepRedo", "step_tail", "withdrawable"]

#: ``errorText`` of a shown call whose input was cut off and that the redone step does not
#: complete.
CUT_OFF_CALL_TEXT = "The tool call was cut off and the model did not make it again."

#: ``*-start`` / ``*-delta`` / ``*-end`` of text and reasoning: (kind, role).
_TEXT_CHUNKS = {
    f"{kind}-{role}": (kind, role)
    for kind in ("text", "reasoning")
    for role in ("start", "delta", "end")
}
#: Chunks that settle a call (a preliminary output does not).
_SETTLING = frozenset({"tool-input-error", "tool-output-error", "tool-output-denied"})
#: The chunks that make a tool part (an output needs one first).
_CALL_INPUT = frozenset({"tool-input-start", "tool-input-available", "tool-input-error"})
#: Chunks of a step that make no part of the message.
_PARTLESS = frozenset({"start", "start-step", "message-metadata", "reset-step"})
#: What a part's chunks carry its id in, and its text in.
_ID_KEY = {"text": "id", "reasoning": "id", "tool": "toolCallId"}
_TEXT_KEY = {"text": "delta", "reasoning": "delta", "tool": "inputTextDelta"}


def step_tail(log: Sequence[Chunk]) -> Sequence[Chunk]:
    """The chunks of ``log`` after its last ``finish-step``: the step readers saw in part. A
    ``reset-step`` in it withdrew what came before it but the step's opening (as the client
    applies it: the ``step-start`` part stays)."""
    for index in range(len(log) - 1, -1, -1):
        kind = log[index].get("type")
        if kind == "finish-step":
            return log[index + 1 :]
        if kind == "reset-step":
            opened = [c for c in step_tail(log[:index]) if c.get("type") == "start-step"]
            return [*opened[:1], *log[index + 1 :]]
    return log


def withdrawable(log: Sequence[Chunk]) -> bool:
    """Whether readers saw parts of the step ``log`` ends in (what a ``reset-step`` would
    withdraw)."""
    return any(chunk.get("type") not in _PARTLESS for chunk in step_tail(log))


@dataclass(slots=True, eq=False)
class _Shown:
    """A part of the tail, as readers saw it."""

    kind: str  # "text", "reasoning" or "tool"
    id: str
    pieces: list[str] = field(default_factory=list)
    text: str = ""
    #: Text and reasoning: not ended. A tool call: its input still streaming.
    open: bool = True
    #: A tool call: its name and the flags its chunks carry (``dynamic``…).
    name: str = ""
    flags: dict[str, Any] = field(default_factory=dict)
    #: A tool call readers saw settled (an output, an error): its input may not come again.
    settled: bool = False
    #: A redone part took it (or it was closed for good): no longer to be matched.
    taken: bool = False


@dataclass(slots=True, eq=False)
class _Redone:
    """A redone part whose chunks are rewritten: matched to a shown part, or renamed."""

    kind: str
    #: The id the redone translator gave it.
    own_id: str
    #: The id its chunks go out under.
    out_id: str
    #: The shown part, while the redone text repeats it (``None`` once past, or never matched).
    shown: _Shown | None = None
    #: How much of the shown text the redone part repeated.
    pos: int = 0
    #: Its own ``*-start``, held while it repeats the shown part.
    start: Chunk | None = None


class StepRedo:
    """The :class:`EventTranslator` of a redone model step (see the module)."""

    TERMINAL_FRAMES: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, translator: EventTranslator, shown: Sequence[Chunk]) -> None:
        """``translator``: the redone model call's. ``shown``: the chunks readers saw of the
        turn — its whole log, or only the tail (the chunks after the last ``finish-step``); only
        the tail is matched, the ids of the whole are avoided for new parts."""
        self.inner = translator
        self.TERMINAL_FRAMES = translator.TERMINAL_FRAMES  # type: ignore[misc]
        #: Ids the message used (a new part must not take one).
        self._used = set(_ids(shown))
        tail = step_tail(shown)
        #: The tail opened the step: the redone ``start-step`` is dropped.
        self._step_open = any(chunk.get("type") == "start-step" for chunk in tail)
        self._shown = _read_tail(tail)
        #: The next shown text / reasoning part to match, and the number of redone calls.
        self._next = {"text": 0, "reasoning": 0}
        self._calls = 0
        #: The redone parts being rewritten, by (kind, own id).
        self._parts: dict[tuple[str, str], _Redone] = {}
        #: The redone step contradicted the tail: its new parts pass through.
        self.diverged = False
        #: The unmatched shown parts were closed (the step ended).
        self._closed = False

    # -- EventTranslator -----------------------------------------------------------------------

    @property
    def stats(self) -> Mapping[str, int]:
        return self.inner.stats

    @property
    def text_id(self) -> str | None:
        text_id = self.inner.text_id
        if text_id is None or ("text", text_id) in self._parts:
            return None  # its deltas are rewritten: the slow path, through feed
        return text_id

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        return self.inner.fast_text_delta(event) if self.text_id is not None else None

    def feed(self, event: Any) -> Sequence[Item]:
        return self._map(self.inner.feed(event))

    def end_of_stream(self, terminal: bool) -> Sequence[Item]:
        return [*self._map(self.inner.end_of_stream(terminal)), *self._close_shown()]

    def malformed(self, why: str, raw: Any) -> Sequence[Item]:
        return self._map(self.inner.malformed(why, raw))

    # -- mapping -------------------------------------------------------------------------------

    def _map(self, items: Sequence[Item]) -> list[Item]:
        out: list[Item] = []
        for item in items:
            if type(item) is not dict:
                if isinstance(item, CloseRequest) and item.reason is CloseReason.COMPLETED:
                    out += self._close_shown()  # (errors: the guard closes everything)
                out.append(item)
                continue
            kind = item.get("type", "")
            text_chunk = _TEXT_CHUNKS.get(kind)
            if text_chunk is not None:
                out += self._text_chunk(text_chunk[0], text_chunk[1], item)
            elif "toolCallId" in item:
                out += self._tool_chunk(item)
            elif kind == "start-step" and self._step_open:
                self._step_open = False  # the tail's step goes on
            elif kind == "finish-step":
                out += [*self._close_shown(), item]
            else:
                out.append(item)
        return out

    def _text_chunk(self, kind: str, role: str, chunk: Chunk) -> list[Chunk]:
        key = (kind, chunk["id"])
        if role == "start":
            return self._begin(kind, chunk)
        redone = self._parts.get(key)
        if redone is None:
            return [chunk]
        if role == "delta":
            return self._delta(redone, chunk)
        del self._parts[key]
        shown = redone.shown
        if shown is None:
            return [{**chunk, "id": redone.out_id}]
        if not shown.open:
            return []  # readers saw it end
        shown.open = False
        return [{**chunk, "id": shown.id}]

    def _tool_chunk(self, chunk: Chunk) -> list[Chunk]:
        kind = chunk["type"]
        redone = self._parts.get(("tool", chunk["toolCallId"]))
        if redone is None and kind in _CALL_INPUT:
            out = self._begin("tool", chunk)
            if kind == "tool-input-start":
                return out
            redone = self._parts.get(("tool", chunk["toolCallId"]))
            if redone is None or redone.shown is None:  # not matched: as _begin sent it
                return out
        elif redone is None:
            return [chunk]
        elif kind == "tool-input-start":
            return [] if redone.shown is not None else [{**chunk, "toolCallId": redone.out_id}]
        elif kind == "tool-input-delta":
            return self._delta(redone, chunk)
        shown = redone.shown
        if shown is not None and kind.startswith("tool-input-"):  # the input is complete
            redone.shown = None
            shown.open = False
            if shown.settled:
                return []  # readers saw the call settled: its part must not move back
        return [{**chunk, "toolCallId": redone.out_id}]

    # -- parts ---------------------------------------------------------------------------------

    def _begin(self, kind: str, start: Chunk) -> list[Chunk]:
        """A redone part begins: matched to the next shown one of its kind, or new."""
        own_id = start[_ID_KEY[kind]]
        out: list[Chunk] = []
        shown = None
        if not self.diverged:
            shown, out = self._match(kind, start)
        if shown is not None:
            shown.taken = True
            self._parts[kind, own_id] = _Redone(kind, own_id, shown.id, shown, start=start)
            return out
        out_id = self._fresh(own_id)
        if out_id != own_id or kind == "tool":  # (a call's later chunks must know it is new)
            self._parts[kind, own_id] = _Redone(kind, own_id, out_id)
        return [*out, {**start, _ID_KEY[kind]: out_id}]

    def _match(self, kind: str, start: Chunk) -> tuple[_Shown | None, list[Chunk]]:
        """The shown part a redone part repeats, if any, and what a contradiction closes."""
        if kind != "tool":
            index = self._next[kind]
            self._next[kind] = index + 1
            shown = [part for part in self._shown if part.kind == kind]
            if index < len(shown) and not shown[index].taken:
                return shown[index], []
            return None, []
        calls = [part for part in self._shown if part.kind == "tool"]
        position, self._calls = self._calls, self._calls + 1
        for call in calls:
            if call.id == start["toolCallId"] and not call.taken:
                return call, []
        if position >= len(calls) or calls[position].taken:
            return None, []  # a call beyond the tail
        if calls[position].name == start["toolName"]:
            return calls[position], []
        return None, self._diverge(calls[position])  # another tool than readers saw

    def _delta(self, redone: _Redone, chunk: Chunk) -> list[Chunk]:
        id_key, text_key = _ID_KEY[redone.kind], _TEXT_KEY[redone.kind]
        shown = redone.shown
        if shown is None:
            return [{**chunk, id_key: redone.out_id}]
        text: str = chunk[text_key]
        seen, pos = shown.text, redone.pos
        if pos + len(text) <= len(seen):
            if seen.startswith(text, pos):
                redone.pos = pos + len(text)
                return []  # readers saw it
            return self._restart(redone, seen[:pos] + text)
        head = len(seen) - pos
        if not seen.startswith(text[:head], pos):
            return self._restart(redone, seen[:pos] + text)
        rest = text[head:]  # past what readers saw: new
        if shown.open:
            redone.shown = None
            return [{**chunk, id_key: shown.id, text_key: rest}]
        if redone.kind == "tool":  # an input readers saw complete cannot grow
            return self._restart(redone, seen + rest)
        return self._reopen(redone, {**chunk, text_key: rest})

    def _reopen(self, redone: _Redone, delta: Chunk) -> list[Chunk]:
        """The redone part as a new part from here on (the shown one ended, or was left)."""
        redone.shown = None
        redone.out_id = self._fresh(redone.own_id)
        id_key = _ID_KEY[redone.kind]
        start = redone.start or {"type": f"{redone.kind}-start", id_key: redone.own_id}
        if start["type"] != "tool-input-start" and redone.kind == "tool":
            fields = ("toolName", "dynamic", "providerExecuted", "title")
            start = {"type": "tool-input-start", **{k: start[k] for k in fields if k in start}}
        out = [{**start, id_key: redone.out_id}]
        if delta[_TEXT_KEY[redone.kind]]:
            out.append({**delta, id_key: redone.out_id})
        return out

    def _restart(self, redone: _Redone, so_far: str) -> list[Chunk]:
        """The redone part contradicts the shown one: the answer is another one."""
        assert redone.shown is not None
        out = self._diverge(redone.shown)
        kind = redone.kind
        delta_type = "tool-input-delta" if kind == "tool" else f"{kind}-delta"
        delta = {"type": delta_type, _ID_KEY[kind]: redone.own_id, _TEXT_KEY[kind]: so_far}
        return out + self._reopen(redone, delta)

    def _diverge(self, shown: _Shown) -> list[Chunk]:
        """From here on the redone step is another answer: ``shown`` and the shown parts not
        matched yet end as readers saw them."""
        self.diverged = True
        return self._end(shown) + self._end_left()

    def _close_shown(self) -> list[Chunk]:
        """The step ends: the shown parts no redone part took end as readers saw them."""
        if self._closed:
            return []
        self._closed = True
        return self._end_left()

    def _end_left(self) -> list[Chunk]:
        return [chunk for part in self._shown if not part.taken for chunk in self._end(part)]

    def _end(self, shown: _Shown) -> list[Chunk]:
        """What ends a shown part as it is: nothing if it ended already."""
        shown.taken = True
        if not shown.open:
            return []
        shown.open = False
        if shown.kind != "tool":
            return [{"type": f"{shown.kind}-end", "id": shown.id}]
        shown.settled = True
        return [
            {
                "type": "tool-input-error",
                "toolCallId": shown.id,
                "toolName": shown.name,
                "input": shown.text,
                "errorText": CUT_OFF_CALL_TEXT,
                **shown.flags,
            }
        ]

    def _fresh(self, part_id: str) -> str:
        """``part_id``, or it with a ``-redo`` suffix when the message already used it."""
        fresh, n = part_id, 1
        while fresh in self._used:
            fresh = f"{part_id}-redo" if n == 1 else f"{part_id}-redo{n}"
            n += 1
        self._used.add(fresh)
        return fresh


def _ids(chunks: Iterable[Chunk]) -> Iterable[str]:
    for chunk in chunks:
        for key in ("id", "toolCallId"):
            value = chunk.get(key)
            if isinstance(value, str):
                yield value


def _read_tail(tail: Sequence[Chunk]) -> list[_Shown]:
    """The tail's text, reasoning and tool call parts, in the order readers saw them."""
    parts: list[_Shown] = []
    by_id: dict[tuple[str, str], _Shown] = {}
    for chunk in tail:
        kind = chunk.get("type", "")
        text_chunk = _TEXT_CHUNKS.get(kind)
        if text_chunk is not None:
            part_kind, role = text_chunk
            key = (part_kind, chunk["id"])
            if role == "start":
                by_id[key] = part = _Shown(part_kind, chunk["id"])
                parts.append(part)
            elif key in by_id:
                part = by_id[key]
                if role == "delta":
                    part.pieces.append(chunk["delta"])
                else:
                    part.open = False
            continue
        call_id = chunk.get("toolCallId")
        if not isinstance(call_id, str):
            continue
        call = by_id.get(("tool", call_id))
        if call is None:
            if kind not in _CALL_INPUT:
                continue  # an output for a call of an earlier step
            flags: dict[str, Any] = {
                k: chunk[k] for k in ("dynamic", "providerExecuted") if k in chunk
            }
            call = _Shown("tool", call_id, name=chunk["toolName"], flags=flags)
            by_id["tool", call_id] = call
            parts.append(call)
        if kind == "tool-input-delta":
            call.pieces.append(chunk["inputTextDelta"])
        elif kind != "tool-input-start":
            call.open = False  # the input is complete (or settled)
            preliminary = kind == "tool-output-available" and chunk.get("preliminary")
            if kind in _SETTLING or (kind == "tool-output-available" and not preliminary):
                call.settled = True
    for part in parts:
        part.text = "".join(part.pieces)
        part.pieces.clear()
    return parts
