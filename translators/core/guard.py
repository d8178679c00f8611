"""The stream guard: any sequence of chunks in, a stream every target client accepts out.

A sans-I/O state machine in the manner of h11's ``_state.py``. It never knows which dialect produced
a chunk; it knows the client (:class:`~chunkbridge.translators.core.client_model.ClientModel`, the
same model the validator runs) and repairs instead of letting the client throw:

* exactly one ``start`` first (with the message id to reuse when continuing, spec §5.4); a later
  ``start`` only contributes its metadata (as ``message-metadata``);
* ``start-step``/``finish-step`` balanced; a part-producing chunk outside a step opens one;
* every ``*-delta``/``*-end`` preceded by its start: a delta for an unknown id opens the part, an
  end for an unknown id is dropped, a second start for an open id closes the first;
* text and reasoning parts closed before ``finish-step``, ``finish`` and ``error``;
* tool output/approval chunks only for known tool calls (others become ``data-*`` parts), with the
  ``dynamic`` flag ai 5 needs;
* a continuation (spec §5.4) knows the continued message's tool parts (``known_tools``): it may
  send their outputs, never announce them again (that would move a part backwards); a denied
  approval's ``tool-output-denied`` opens it, and later outputs for that call are stale;
* ``tool-approval-request`` only after its tool part (then :mod:`~chunkbridge.translators.core.
  approvals`); a call awaiting approval is the app's, so a normal ending does not settle it;
* the closing discipline, in one place for every dialect (:meth:`StreamGuard.close`, the only way
  a stream ends): close open parts, settle pending tool calls (``tool-output-error``), then
  ``error`` if the reason is an error, then ``finish-step``, then exactly one ``finish`` with a
  finishReason the target accepts. Nothing after ``finish``. A ``finish`` or ``error`` chunk fed
  in is read as the :class:`~chunkbridge.translators.core.closing.CloseRequest` it stands for.

Every chunk first goes through :class:`~chunkbridge.translators.core.gating.Gate` for the target
major (and ``reset_step``: whether the client is an ai 7 that accepts ``reset-step``; for one that
does not, the guard ends the step's open text and reasoning parts, which stay on that client, and
the gate makes the chunk a transient data part). Each repair is counted in
:attr:`StreamGuard.repairs` and reported through ``on_repair``. ``feed`` and ``close`` never
raise and do O(1) work per chunk (closing is linear in the open parts, once).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from chunkbridge.protocol_specs.ui_message_stream import (
    CHUNK_SPECS,
    DATA_PREFIX,
    DEFAULT_TARGET,
    RESET_STEP,
    STEPLESS_TYPES,
    TOOL_OUTPUT_TYPES,
)
from chunkbridge.translators.core.approvals import (
    ApprovalHook,
    ApprovalRequests,
    IssuedApproval,
    SignApproval,
)
from chunkbridge.translators.core.client_model import ClientModel, KnownToolCall, Rule
from chunkbridge.translators.core.closing import CLOSE_OUTCOMES, CloseReason, CloseRequest, Outcome
from chunkbridge.translators.core.gating import ConversionHook, Gate
from chunkbridge.translators.core.rule_repairs import rule_repair

__all__ = ["Chunk", "RepairHook", "StreamGuard"]

Chunk = dict[str, Any]
RepairHook = Callable[[str, dict[str, Any]], None]
_INPUT_TYPES = frozenset({"tool-input-start", "tool-input-available", "tool-input-error"})
#: The chunks that shape the stream rather than a part: :meth:`StreamGuard._feed_control`.
_STREAM_CONTROL = frozenset({"start", "finish", "error", "start-step", "finish-step"})

#: Outputs that carry ``dynamic``: ai 5 looks the tool part up by kind with it.
_DYNAMIC_AWARE = frozenset(t for t in TOOL_OUTPUT_TYPES if "dynamic" in CHUNK_SPECS[t].fields)
#: Chunks that move a known call's part on: stale once the part has moved past them.
_CALL_UPDATES = _INPUT_TYPES | _DYNAMIC_AWARE
_COMPLETED = CloseRequest(CloseReason.COMPLETED)


class StreamGuard:
    """Feed chunks with :meth:`feed`; end with :meth:`close`. Both return chunks to send.

    Read by the turn pipeline's fast path, as plain attributes (not properties, they are read
    per frame): :attr:`in_step`, :attr:`open_text`, :attr:`finished`.
    """

    def __init__(
        self,
        *,
        target: int = DEFAULT_TARGET,
        message_id: str | None = None,
        on_repair: RepairHook | None = None,
        on_conversion: ConversionHook | None = None,
        mask_errors: bool = False,
        known_tools: Sequence[KnownToolCall] = (),
        denied_calls: Sequence[str] = (),
        sign_approval: SignApproval | None = None,
        on_approval: ApprovalHook | None = None,
        runs_here: frozenset[str] = frozenset(),
        reset_step: bool = False,
    ) -> None:
        self.target = target
        #: The client accepts ``reset-step`` (an ai 7 ≥ 7.0.70): a step's parts can be withdrawn.
        self.reset_step = reset_step
        #: Tools the gateway runs (the agent loop): a call still running when the stream ends is
        #: settled like a provider's, never left to the app.
        self._runs_here = runs_here
        #: Send the generic text of the close reason instead of the upstream's error text.
        self.mask_errors = mask_errors
        #: Forced ``start.messageId`` (the assistant message being continued), if any.
        self.message_id = message_id
        self.gate = Gate(target, on_conversion, reset_step=reset_step)
        # Named after the continued message, if any: its start must not reset the known tools.
        self.model = ClientModel(major=target, message_id=message_id or "")
        self.model.seed(known_tools)
        #: Calls whose approval the app denied: ``tool-output-denied`` in the first step.
        self._denied = tuple(denied_calls)
        self._approvals = ApprovalRequests(target, sign_approval, on_approval)
        #: The approvals this stream requested, in order.
        self.approvals_issued: list[IssuedApproval] = self._approvals.issued
        #: Open text part ids as the client knows them (the same dict for the guard's whole
        #: life: the turn pipeline keeps a reference to it).
        self.open_text = self.model.open_text
        #: Repairs by kind (``opened-text``, ``dropped-after-finish``…): our translators' and the
        #: upstream's mistakes, which the client would otherwise have died on. (A plain dict
        #: like the gate's ``conversions``: cheap to make per turn, not tracked by the GC.)
        self.repairs: dict[str, int] = {}
        self._on_repair = on_repair
        #: ``start`` was emitted (a later ``start`` only adds metadata).
        self.started = False
        #: A step is open: part chunks need no ``start-step`` first.
        self.in_step = False
        #: ``finish`` was emitted; everything fed after it is discarded (and counted).
        self.finished = False
        #: The request that ended the stream (its reason is the close reason of the turn).
        self.close_request: CloseRequest | None = None
        #: The finishReason ``finish`` carried, and the ``errorText`` of ``error``, if any.
        self.finish_reason: str | None = None
        self.error_text: str | None = None

    def _repair(self, key: str, chunk: dict[str, Any]) -> None:
        self.repairs[key] = self.repairs.get(key, 0) + 1
        if self._on_repair is not None:
            self._on_repair(key, chunk)

    # -- input ---------------------------------------------------------------------------------

    def feed(self, chunk: Any) -> list[Chunk]:
        """Chunks to send for one translator chunk; ``[]`` after ``finish``. Never raises."""
        # Hot path: a well-formed text delta for an open part inside a step needs no work.
        if (
            self.in_step
            and type(chunk) is dict
            and chunk.get("type") == "text-delta"
            and len(chunk) == 3
            and chunk.get("id") in self.open_text
            and type(chunk.get("delta")) is str
        ):
            return [chunk]
        if self.finished:
            self._repair("dropped-after-finish", chunk if isinstance(chunk, dict) else {})
            return []
        out: list[Chunk] = []
        if not self.started:
            first = chunk if isinstance(chunk, dict) and chunk.get("type") == "start" else None
            self._emit_start(out, first)
            if first is not None:
                return out
        kind = chunk.get("type") if type(chunk) is dict else None
        if kind == "tool-approval-request":
            request = self._approvals.request(chunk, self.model, self.gate)
            if request is None:
                self._repair("dropped-approval-for-settled-call", chunk)
                return out
            chunk = request
        elif kind == RESET_STEP and not self.reset_step:
            self._close_parts(out)  # this client keeps the withdrawn parts: as they are, done
        gated = self.gate.gate(chunk)
        if gated is not None:
            self._feed_gated(gated, out)
        return out

    def close(self, request: CloseRequest = _COMPLETED) -> list[Chunk]:
        """End the stream: the closing chunks, or ``[]`` if it already finished. Never raises."""
        if self.finished:
            return []
        out: list[Chunk] = []
        if not self.started:
            self._emit_start(out, None)
        self._finish(out, request)
        return out

    def give_up(self, request: CloseRequest) -> None:
        """Count the stream as ended by ``request`` without writing its closing chunks: the
        guard itself failed, and the turn writes an ending every client accepts instead."""
        self.finished = True
        self.close_request = request
        self.finish_reason = "error"

    # -- internals -----------------------------------------------------------------------------

    def _emit_start(self, out: list[Chunk], first: Chunk | None) -> None:
        start: Chunk = {"type": "start"}
        if first is not None:
            gated = self.gate.gate(first)
            if gated is not None:
                start = gated
        if self.message_id is not None:
            start = {**start, "messageId": self.message_id}
        self._apply(self._object_metadata(start), out)
        self.started = True

    def _send_denials(self, out: list[Chunk]) -> None:
        """``tool-output-denied`` for the calls the app denied: in the first step (the one the
        upstream opens, so no empty step), or at the end if none opens."""
        denied, self._denied = self._denied, ()
        for call_id in denied:
            record = self.model.tools.get(call_id)
            if record is None or record.settled:
                continue
            gated = self.gate.gate({"type": "tool-output-denied", "toolCallId": call_id})
            if gated is not None:
                self._feed_gated(gated, out)
            record.denied = True

    def _object_metadata(self, chunk: Chunk) -> Chunk:
        """Keep message metadata an object: the client's deep merge throws on a string or number
        base (:attr:`Rule.METADATA_MERGE`), so other values are wrapped as ``{"value": x}``."""
        metadata = chunk.get("messageMetadata")
        if metadata is None or isinstance(metadata, dict):
            return chunk
        self._repair("wrapped-metadata", chunk)
        return {**chunk, "messageMetadata": {"value": metadata}}

    def _apply(self, chunk: Chunk, out: list[Chunk]) -> None:
        self.model.apply(chunk)
        out.append(chunk)

    def _feed_gated(self, chunk: Chunk, out: list[Chunk]) -> None:
        chunk_type: str = chunk["type"]
        if chunk_type in _STREAM_CONTROL:
            self._feed_control(chunk_type, chunk, out)
            return
        if (
            not self.in_step
            and chunk_type not in STEPLESS_TYPES
            and not chunk_type.startswith(DATA_PREFIX)
        ):
            self._open_step({"type": "start-step"}, out)
        if chunk_type in _CALL_UPDATES and self._is_stale(chunk_type, chunk):
            return
        if chunk_type in _DYNAMIC_AWARE:
            chunk = self._with_dynamic_flag(chunk)
        elif chunk_type == "message-metadata":
            chunk = self._object_metadata(chunk)
        elif chunk_type == "text-start" and chunk["id"] in self.model.open_text:
            self._repair("closed-reopened-text", chunk)
            self._apply({"type": "text-end", "id": chunk["id"]}, out)
        elif chunk_type == "reasoning-start" and chunk["id"] in self.model.open_reasoning:
            self._repair("closed-reopened-reasoning", chunk)
            self._apply({"type": "reasoning-end", "id": chunk["id"]}, out)
        rule = self.model.check(chunk)
        if rule is None:
            self._apply(chunk, out)
        else:
            self._repair_rule(rule, chunk, out)

    def _feed_control(self, chunk_type: str, chunk: Chunk, out: list[Chunk]) -> None:
        """The stream-level chunks: a second ``start`` keeps only its metadata, ``finish`` and
        ``error`` are the close requests they stand for, steps stay balanced."""
        if chunk_type == "start":
            metadata = chunk.get("messageMetadata")
            if metadata is not None:
                self._repair("second-start-as-metadata", chunk)
                update = {"type": "message-metadata", "messageMetadata": metadata}
                self._apply(self._object_metadata(update), out)
            else:
                self._repair("dropped-second-start", chunk)
        elif chunk_type == "finish":
            request = CloseRequest(
                CloseReason.COMPLETED,
                finish_reason=chunk.get("finishReason"),
                message_metadata=chunk.get("messageMetadata"),
            )
            self._finish(out, request)
        elif chunk_type == "error":
            self._finish(out, CloseRequest(CloseReason.UPSTREAM_ERROR, chunk["errorText"]))
        elif chunk_type == "start-step":
            if self.in_step:
                self._repair("closed-step-before-start-step", chunk)
                self._end_step(out)
            self._open_step(chunk, out)
        elif self.in_step:  # finish-step
            self._end_step(out)
        else:
            self._repair("dropped-finish-step-outside-step", chunk)

    def _open_step(self, start: Chunk, out: list[Chunk]) -> None:
        """Send ``start``; the first step also carries the denials the app decided."""
        self.in_step = True
        self._apply(start, out)
        if self._denied:
            self._send_denials(out)

    def _is_stale(self, chunk_type: str, chunk: Chunk) -> bool:
        """A tool chunk the client's part has moved past: the input of a call the continued
        message already holds, anything after a denial. Counted; the caller drops it."""
        record = self.model.tools.get(chunk["toolCallId"])
        if record is None:
            return False
        if record.from_history and chunk_type in _INPUT_TYPES:
            self._repair("dropped-known-tool-input", chunk)
            return True
        if record.denied:
            self._repair("dropped-output-after-denial", chunk)
            return True
        return False

    def _repair_rule(self, rule: Rule, chunk: Chunk, out: list[Chunk]) -> None:
        name, chunks = rule_repair(rule, chunk, self.model)
        self._repair(name, chunk)
        for repaired in chunks:
            self._apply(repaired, out)

    def _with_dynamic_flag(self, chunk: Chunk) -> Chunk:
        """ai 5 finds an output's tool part by kind: mirror the part's kind in ``dynamic``."""
        record = self.model.tools.get(chunk["toolCallId"])
        if record is None:
            return chunk
        is_dynamic = False not in record.kinds
        if bool(chunk.get("dynamic")) is is_dynamic:
            return chunk
        fixed = {k: v for k, v in chunk.items() if k != "dynamic"}
        if is_dynamic:
            fixed["dynamic"] = True
        return fixed

    def _close_parts(self, out: list[Chunk]) -> None:
        for part_id in list(self.model.open_reasoning):
            self._apply({"type": "reasoning-end", "id": part_id}, out)
        for part_id in list(self.model.open_text):
            self._apply({"type": "text-end", "id": part_id}, out)

    def _end_step(self, out: list[Chunk]) -> None:
        self._close_parts(out)
        self._apply({"type": "finish-step"}, out)
        self.in_step = False

    def _settle_tools(self, out: list[Chunk], outcome: Outcome, finish_reason: str | None) -> None:
        # An answer that ends for the app's tool results may leave a provider's tool waiting
        # on them (a program calling the app's tools, a deferred tool search): its result comes
        # in the next response, on the same part.
        waiting_on_app = finish_reason == "tool-calls" and not outcome.is_error
        for call_id, record in self.model.unsettled_tools():
            # Pending on us: input still streaming, or a tool we run. A client-run tool with
            # complete input belongs to the app after a normal end or an abort (openai-chat
            # tool calls end at tool-input-available on purpose); an error settles it too.
            ours = record.provider_executed or record.name in self._runs_here
            if not (record.input_streaming or ours or outcome.is_error):
                continue
            if record.provider_executed and waiting_on_app and not record.input_streaming:
                continue
            if record.awaiting_approval and not outcome.is_error:
                continue  # the app's to approve or deny
            settle: Chunk = {"type": "tool-output-error", "toolCallId": call_id}
            settle["errorText"] = outcome.tool_text
            if record.provider_executed:
                settle["providerExecuted"] = True
            if False not in record.kinds:
                settle["dynamic"] = True
            self._repair("settled-pending-tool", settle)
            self._apply(settle, out)

    def _finish(self, out: list[Chunk], request: CloseRequest) -> None:
        if self._denied:
            self._send_denials(out)
        self.close_request = request
        outcome = CLOSE_OUTCOMES[request.reason]
        self._close_parts(out)
        self._settle_tools(out, outcome, request.finish_reason)
        if outcome.is_error:
            given = request.error_text
            use_given = given is not None and not self.mask_errors
            self.error_text = given if use_given else outcome.error_text
            self._apply({"type": "error", "errorText": self.error_text}, out)
        if self.in_step:
            self._apply({"type": "finish-step"}, out)
            self.in_step = False
        finish: Chunk = {
            "type": "finish",
            "finishReason": request.finish_reason or outcome.finish_reason,
        }
        if outcome.is_error:
            finish["finishReason"] = "error"
        if request.message_metadata is not None:
            finish["messageMetadata"] = request.message_metadata
        gated = self._object_metadata(self.gate.gate(finish) or {"type": "finish"})
        self.finish_reason = gated.get("finishReason")
        self._apply(gated, out)
        self.finished = True
