"""One turn, sans-I/O: upstream frames in, SSE bytes out. The pipeline every command runs.

``translator → surrogate pairs → guard → encoder``: a dialect's translator (any object with the
:class:`EventTranslator` shape; the pipeline never knows which dialect) maps events to chunks,
:class:`~chunkbridge.translators.core.surrogates.SurrogatePairs` joins UTF-16 halves split across
deltas, the :class:`~chunkbridge.translators.core.guard.StreamGuard` makes the sequence valid for
the target client, and :mod:`~chunkbridge.translators.core.sse_codec` writes the bytes.
``chunkbridge serve``, ``replay``, the golden files, ``record`` and the tests all run turns through
this class (driven by the gateway's turn driver), so a golden file checks the code users run.

Calling contract: :meth:`Turn.encode_frame` (or :meth:`Turn.feed_frame` for chunks instead of
bytes) for each raw frame — :meth:`Turn.encode_event` for each event of an in-process source —
until :attr:`Turn.done`; when the upstream connection ends,
:meth:`Turn.upstream_ended`; to end the turn for any other reason (timeout, client gone,
shutdown), :meth:`Turn.close`; when the driver's settle window after an ask passed in silence,
:meth:`Turn.settle`. None of them raises: an exception inside translation is an
*internal error* — the turn ends with ``error`` + ``finish``, and the exception is kept in
:attr:`Turn.internal_error` for the log, never blamed on the upstream.

The hot path: a plain text delta for the text part that is already open (the guard agreeing
that it is open inside a step) skips the chunk dict and the generic encoder: a pre-built event
prefix plus the orjson-encoded delta, byte-identical to the general path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL, is_approval_question
from chunkbridge.protocol_specs.ui_message_stream import DEFAULT_TARGET
from chunkbridge.translators.core.approvals import ApprovalHook, SignApproval
from chunkbridge.translators.core.client_model import KnownToolCall
from chunkbridge.translators.core.closing import (
    CLOSE_OUTCOMES,
    CloseReason,
    CloseRequest,
    DeferredClose,
)
from chunkbridge.translators.core.event_translator import Chunk, EventTranslator, Item
from chunkbridge.translators.core.gating import ConversionHook
from chunkbridge.translators.core.guard import RepairHook, StreamGuard
from chunkbridge.translators.core.message_assembly import MessageAssembler
from chunkbridge.translators.core.sse_codec import encode_chunks
from chunkbridge.translators.core.steps import StepJoin
from chunkbridge.translators.core.surrogates import NOT_JSON, SurrogatePairs, loads_lenient

__all__ = ["EventTurn", "Turn", "TurnOptions"]

_loads = orjson.loads
_dumps = orjson.dumps
_JSONDecodeError = orjson.JSONDecodeError
_JSONEncodeError = orjson.JSONEncodeError


@dataclass(slots=True)
class TurnOptions:
    #: AI SDK major of the client (5 is accepted by 5, 6 and 7).
    target: int = DEFAULT_TARGET
    #: The client is an ai 7 that accepts ``reset-step`` (``reset_step``, target 7 only):
    #: ``guard.reset_step`` says whether a step's parts can be withdrawn on it.
    reset_step: bool = False
    #: ``start.messageId``: the assistant message being continued (spec §5.4), if any.
    message_id: str | None = None
    #: Replace upstream error texts by generic ones in ``error`` chunks (they can leak internals).
    mask_errors: bool = False
    on_repair: RepairHook | None = None
    on_conversion: ConversionHook | None = None
    #: The continued message's tool parts (the guard's ``known_tools``).
    known_tools: Sequence[KnownToolCall] = ()
    #: Calls whose approval the app denied in this request (``tool-output-denied`` first).
    denied_calls: Sequence[str] = ()
    #: Signs approval requests (``approval_secret``); ``None``: unsigned.
    sign_approval: SignApproval | None = None
    #: Told of every approval the stream requests (the gateway's ledger).
    on_approval: ApprovalHook | None = None
    #: A step-wise turn (the agent loop, :class:`StepJoin`): the tools the gateway runs.
    gateway_tools: frozenset[str] | None = None
    #: In a step-wise turn: the tools the app runs (declared, ``ask_user``).
    app_tools: frozenset[str] = frozenset()
    #: Build the message the client builds (:attr:`Turn.assembler`), as the chunks are made.
    assemble: bool = False
    #: The assistant message this turn continues, as the client has it (the assembler's start).
    continued: dict[str, Any] | None = None


class Turn:
    """One turn of one response. See the module docstring for the calling contract."""

    def __init__(self, translator: EventTranslator, options: TurnOptions | None = None) -> None:
        options = options or TurnOptions()
        self.guard = StreamGuard(
            target=options.target,
            message_id=options.message_id,
            on_repair=options.on_repair,
            on_conversion=options.on_conversion,
            mask_errors=options.mask_errors,
            known_tools=options.known_tools,
            denied_calls=options.denied_calls,
            sign_approval=options.sign_approval,
            on_approval=options.on_approval,
            runs_here=options.gateway_tools or frozenset(),
            reset_step=options.reset_step,
        )
        #: The agent loop's view of the model's steps (``TurnOptions.gateway_tools``), else
        #: ``None``.
        self.step_join: StepJoin | None = None
        if options.gateway_tools is not None:
            translator = self.step_join = StepJoin(
                translator, options.gateway_tools, self.guard, options.app_tools
            )
        self.translator = translator
        #: The message as the client builds it from what this turn wrote (``assemble``): the
        #: turn's one assembler, read by the agent loop, the transcript and resume.
        self.assembler: MessageAssembler | None = None
        if options.assemble:
            self.assembler = MessageAssembler(options.target, options.continued)
        #: Upstream frames (or events) fed, terminal and malformed ones included.
        self.events = 0
        #: Frames fed after the turn ended (ignored).
        self.after_done = 0
        #: The first exception raised inside translation, if any (the turn then ended).
        self.internal_error: Exception | None = None
        self._pairs = SurrogatePairs()
        self._held = self._pairs.held
        self._open_text = self.guard.open_text
        self._terminal = frozenset(translator.TERMINAL_FRAMES)
        #: What an object given to :meth:`encode_event` stands for (the kit's translators read
        #: an SDK's pydantic models); ``None``: the translator reads dicts only.
        self._read_object: Callable[[Any], Sequence[Any] | None] | None = getattr(
            translator, "read_object", None
        )
        #: A translator's :class:`DeferredClose` (the agent asked), until it waits or goes on.
        self.deferred_close: CloseRequest | None = None
        #: The request that ended the turn (its finish reason, the answer's message metadata).
        self.closed_by: CloseRequest | None = None
        #: :attr:`events` when the deferral was made or last confirmed: any other event since
        #: then (the fast path's text deltas included) means the agent went on.
        self._deferred_at = -1
        #: Bytes of a ``text-delta`` event for part ``_prefix_id`` up to its delta (hot path).
        self._prefix_id: str | None = None
        self._prefix = b""

    # -- state ---------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """The turn is over (its ``finish`` went out): stop reading the upstream."""
        return self.guard.finished

    @property
    def close_reason(self) -> CloseReason | None:
        """Why the turn ended (``None`` while it runs)."""
        request = self.guard.close_request
        return None if request is None else request.reason

    @property
    def waiting(self) -> bool:
        """The agent asked the user and has said nothing with content since."""
        return self.deferred_close is not None and self.events == self._deferred_at

    @property
    def open_questions(self) -> list[str]:
        """The ids of the questions (``ask_user`` calls, not an approval's question form) this
        stream asked and left unanswered: what the app may answer in the next request."""
        return [
            call_id
            for call_id, record in self.guard.model.tools.items()
            if record.name == QUESTION_TOOL
            and not (record.settled or record.provider_executed or record.from_history)
            and not record.input_streaming
            and not is_approval_question(record.input)
        ]

    @property
    def finish_reason(self) -> str | None:
        """The finishReason the client was told (``None`` while the turn runs)."""
        return self.guard.finish_reason

    def report(self) -> dict[str, Any]:
        """What the turn adds to the gateway's one log line per turn (``stream.end``)."""
        guard, stats = self.guard, self.translator.stats
        reason = self.close_reason
        return {
            "close_reason": reason.value if reason is not None else "unfinished",
            "finish_reason": guard.finish_reason,
            "upstream_events": self.events,
            "unknown_events": sum(v for k, v in stats.items() if k.startswith("unknown-event:")),
            "malformed_events": stats.get("malformed-event", 0),
            "guard_repairs": sum(guard.repairs.values()),
            "conversions": sum(guard.gate.conversions.values()),
            "approvals_requested": len(guard.approvals_issued),
        }

    # -- input ---------------------------------------------------------------------------------

    def encode_frame(self, frame: str | bytes) -> bytes:
        """One raw upstream frame (a WebSocket message, an SSE ``data:`` payload) to SSE bytes:
        ``encode_chunks(self.feed_frame(frame))``, faster. Never raises."""
        try:
            event = _loads(frame)
        except _JSONDecodeError:
            return encode_chunks(self.feed_frame(frame))  # (the assembler fed there)
        return self._encode(event, False)

    def encode_event(self, event: Any) -> bytes:
        """One event of an in-process source to SSE bytes: a dict, as a frame would parse, or
        an object the translator reads (:meth:`~chunkbridge.kit.Translator.read_object`: an
        SDK's pydantic model…). Its strings may hold lone surrogates (Python's ``json`` makes
        them of ``"\\ud83d"``): they are joined as the lenient path's are. Never raises."""
        if type(event) is dict:
            return self._encode(event, True)
        try:
            events = None if self._read_object is None else self._read_object(event)
        except Exception as exc:
            return encode_chunks(self._seen(self._internal_error(exc)))
        if events is None:  # not an event: malformed, per the dialect's policy
            return encode_chunks(self._seen(self._feed(event, True)))
        if len(events) == 1:
            return self._encode(events[0], True)
        return b"".join([self._encode(one, True) for one in events])  # none: bookkeeping

    def _encode(self, event: Any, lone_surrogates: bool) -> bytes:
        """A parsed event to SSE bytes; ``lone_surrogates``: its strings may hold some."""
        try:
            translator = self.translator
            text_id = translator.text_id
            if (
                text_id in self._open_text
                and self.guard.in_step
                and not self._held
                and type(event) is dict
            ):
                delta = translator.fast_text_delta(event)
                if delta is not None:
                    self.events += 1
                    if text_id != self._prefix_id:
                        self._set_prefix(text_id)
                    try:
                        body = self._prefix + _dumps(delta) + b"}\n\n"
                    except _JSONEncodeError:  # a lone surrogate: joined, or scrubbed at its end
                        chunk = {"type": "text-delta", "id": text_id, "delta": delta}
                        return encode_chunks(self._seen(self._guarded([chunk], True)))
                    if self.assembler is not None:
                        self.assembler.text_delta(text_id, delta)
                    return body
            return encode_chunks(self._seen(self._feed(event, lone_surrogates)))
        except Exception as exc:
            return encode_chunks(self._seen(self._internal_error(exc)))

    def feed_frame(self, frame: str | bytes) -> list[Chunk]:
        """One raw upstream frame to chunks. Never raises."""
        try:
            try:
                event = _loads(frame)
            except _JSONDecodeError as exc:
                return self._seen(self._slow_frame(frame, exc.msg))
            return self._seen(self._feed(event, False))
        except Exception as exc:
            return self._seen(self._internal_error(exc))

    def feed(self, event: Any) -> list[Chunk]:
        """One parsed upstream event to chunks. Never raises."""
        try:
            return self._seen(self._feed(event, True))
        except Exception as exc:
            return self._seen(self._internal_error(exc))

    def upstream_ended(self, error_text: str | None = None) -> list[Chunk]:
        """The upstream connection ended (``error_text``: how it failed, if it did). The
        translator may still complete the turn (a trailing usage event was all it waited
        for); otherwise the turn ends as truncated. Never raises."""
        if self.guard.finished:
            return []
        try:
            waiting = self.waiting  # the agent asked, then hung up: it waits for the answer
            out = self._guarded(self.translator.end_of_stream(False), True)
            if not self.guard.finished and not self._step_completed():
                if waiting and error_text is None and self.deferred_close is not None:
                    out += self._close(self.deferred_close)
                else:
                    out += self._close(CloseRequest(CloseReason.UPSTREAM_CLOSED, error_text))
            return self._seen(out)  # (a completed step: the agent loop decides what follows)
        except Exception as exc:
            return self._seen(self._internal_error(exc))

    def waits_on_app(self, call_id: str) -> None:
        """The gateway's call ``call_id`` waits for the app (its question): at the end of the
        turn it stays open, as a call awaiting approval does, instead of being settled."""
        record = self.guard.model.tools.get(call_id)
        if record is not None:
            record.awaiting_approval = True

    def emit(self, chunks: Sequence[Chunk]) -> list[Chunk]:
        """Chunks the gateway itself adds (the agent loop's tool results, step boundaries,
        approval requests), through the guard like the translator's. Never raises."""
        try:
            out: list[Chunk] = []
            for chunk in chunks:
                out += self.guard.feed(chunk)
            return self._seen(out)
        except Exception as exc:
            return self._seen(self._internal_error(exc))

    def close(self, request: CloseRequest) -> list[Chunk]:
        """End the turn now (timeout, client gone, shutdown…): the closing chunks, ``[]`` if it
        already ended. Never raises."""
        if self.guard.finished:
            return []
        try:
            return self._seen(self._close(request))
        except Exception as exc:
            return self._seen(self._internal_error(exc))

    def settle(self) -> list[Chunk]:
        """The settle window after an ask passed without a word from the upstream: if the agent
        said nothing with content since it asked, it waits, and the turn ends as the translator
        asked; if it went on, the deferral is dropped (the turn ends at the agent's own end).
        Never raises."""
        request = self.deferred_close
        if request is None or self.guard.finished:
            return []
        if not self.waiting:
            self.deferred_close = None
            return []
        return self.close(request)

    # -- internals -----------------------------------------------------------------------------

    def _seen(self, out: list[Chunk]) -> list[Chunk]:
        """``out``, which the turn writes: the assembler reads it too."""
        if self.assembler is not None and out:
            self.assembler.feed_written(out)
        return out

    def _step_completed(self) -> bool:  # a step-wise turn's model step: the turn goes on
        join = self.step_join
        return join is not None and join.ended is not None and not self.guard.finished

    def _set_prefix(self, text_id: str | None) -> None:
        self._prefix_id = text_id
        self._prefix = b'data: {"type":"text-delta","id":' + _dumps(text_id) + b',"delta":'

    def _slow_frame(self, frame: str | bytes, why: str) -> list[Chunk]:
        """A frame orjson refused: a terminal frame, JSON only the lenient parser takes, or not
        JSON at all."""
        if self._terminal:
            text = frame if isinstance(frame, str) else frame.decode("utf-8", "replace")
            if text.strip() in self._terminal:
                self.events += 1
                if self.guard.finished:
                    return []
                out = self._guarded(self.translator.end_of_stream(True), True)
                if not self.guard.finished and not self._step_completed():
                    out += self._close(CloseRequest(CloseReason.COMPLETED))
                return out
        event = loads_lenient(frame)
        if event is NOT_JSON:
            self.events += 1
            if self.guard.finished:
                self.after_done += 1
                return []
            return self._guarded(self.translator.malformed(f"not JSON ({why})", frame), False)
        return self._feed(event, True)

    def _feed(self, event: Any, maybe_surrogates: bool) -> list[Chunk]:
        self.events += 1
        if self.guard.finished:
            self.after_done += 1
            return []
        out = self._guarded(self.translator.feed(event), maybe_surrogates)
        if self.deferred_close is not None and self._deferred_at == self.events - 1:
            # Status noise after the ask (transient parts, bookkeeping) is not the agent going
            # on: it still waits.
            if all(chunk.get("transient") is True for chunk in out):
                self._deferred_at = self.events
        return out

    def _guarded(self, items: Sequence[Item], maybe_surrogates: bool) -> list[Chunk]:
        guard = self.guard
        check_pairs = maybe_surrogates or bool(self._held)
        if len(items) == 1 and not check_pairs:
            item = items[0]
            if type(item) is dict:
                return guard.feed(item)
        out: list[Chunk] = []
        for item in items:
            if isinstance(item, CloseRequest):
                out += self._close(item)
            elif isinstance(item, DeferredClose):
                self.deferred_close = item.request  # None: withdrawn, the agent goes on
                self._deferred_at = self.events
            elif check_pairs and type(item) is dict:
                for chunk in self._pairs.fix(item):
                    out += guard.feed(chunk)
            else:
                out += guard.feed(item)
        return out

    def _close(self, request: CloseRequest) -> list[Chunk]:
        self.closed_by = request
        out: list[Chunk] = []
        if self._held and not self.guard.finished:
            for chunk in self._pairs.flush():
                out += self.guard.feed(chunk)
        return out + self.guard.close(request)

    def _internal_error(self, exc: Exception) -> list[Chunk]:
        if self.internal_error is None:
            self.internal_error = exc
        if self.guard.finished:
            return []
        self._held.clear()
        try:
            return self.guard.close(CloseRequest(CloseReason.INTERNAL_ERROR))
        except Exception:
            # The guard itself failed: end with what every client accepts whatever came before
            # (processing stops at an error chunk).
            self.guard.give_up(CloseRequest(CloseReason.INTERNAL_ERROR))
            text = CLOSE_OUTCOMES[CloseReason.INTERNAL_ERROR].error_text
            return [
                {"type": "error", "errorText": text},
                {"type": "finish", "finishReason": "error"},
            ]


class EventTurn(Turn):
    """A turn whose upstream is an in-process source (an app's own async iterator of events):
    the turn driver's frames are events (:meth:`Turn.encode_event`), not text to parse."""

    encode_frame = Turn.encode_event  # type: ignore[assignment]
