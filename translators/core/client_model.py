"""Ordering rules of the AI SDK client: which chunk may follow which, per major.

:class:`ClientModel` mirrors the bookkeeping of ``processUIMessageStream`` (ai 5.0.277, 6.0.326,
7.0.173; spec §3): open text and reasoning ids, tool calls whose input is streaming, tool parts by
``toolCallId`` and kind, approval ids. :meth:`ClientModel.check` names the :class:`Rule` a chunk
would break on the real client (which then throws and kills the response); :meth:`apply` records
what the client records. Both the stream guard (which repairs) and the validator (which reports)
drive this one model, so the two cannot drift apart: h11's ``_state.py`` idea, with the client
as the other party.

It models ``readUIMessageStream`` as the conformance harness runs it: a ``start`` whose
``messageId`` differs from the current message id resets the state (``useChat`` renames instead).

Calling contract: only feed chunks that passed
:func:`chunkbridge.protocol_specs.ui_message_shapes.schema_errors` for the same major; call
``check`` then, when it returned ``None``, ``apply``. Both are O(1)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from chunkbridge.protocol_specs.chat_request import ANSWERED_STATES
from chunkbridge.protocol_specs.ui_message_stream import (
    CHUNK_SPECS,
    TOOL_OUTPUT_TYPES,
    TOOL_REFERENCE_TYPES,
)

__all__ = ["ClientModel", "KnownToolCall", "Rule", "ToolRecord"]


class Rule(Enum):
    """A client-side failure: the chunk throws inside ``processUIMessageStream``."""

    #: ``text-delta``/``text-end`` for an id with no open ``text-start`` (5 and 6 also forget
    #: open ids at ``finish-step``).
    TEXT_NOT_OPEN = "text part is not open (no text-start for this id, or closed by finish-step)"
    REASONING_NOT_OPEN = (
        "reasoning part is not open (no reasoning-start for this id, or closed by finish-step)"
    )
    #: ``tool-input-delta`` for a call that never had ``tool-input-start``.
    TOOL_INPUT_NOT_STARTED = "tool-input-delta without a tool-input-start for this toolCallId"
    #: ``tool-output-*``, ``tool-approval-request``, ``tool-output-denied`` for an unknown call.
    TOOL_CALL_UNKNOWN = "no tool part with this toolCallId (needs a tool-input-* chunk first)"
    #: ai 5 looks tool outputs up per kind: ``dynamic: true`` only for dynamic tool parts.
    TOOL_KIND_MISMATCH = "ai 5 needs dynamic: true on outputs of dynamic tools, and only on those"
    #: ai 7 ``tool-approval-response`` whose ``approvalId`` matches no approval request.
    APPROVAL_UNKNOWN = "tool-approval-response for an unknown approvalId"
    #: ``mergeObjects`` runs ``key in base``: once the message metadata is a string, number or
    #: boolean, merging anything with keys into it throws a ``TypeError``.
    METADATA_MERGE = "messageMetadata cannot be merged into the current non-object metadata"


@dataclass(slots=True)
class ToolRecord:
    """What the client knows of one ``toolCallId``."""

    name: str
    #: Kinds of tool part that exist for this id: ``True`` = ``dynamic-tool``, ``False`` = static.
    kinds: set[bool]
    #: ``tool-input-start`` was seen and no complete input yet: the input is still streaming.
    input_streaming: bool = False
    #: An output, output error, input error or denial settled the call.
    settled: bool = False
    provider_executed: bool = False
    #: A ``tool-approval-request`` was sent and no output yet: the call waits for the app.
    awaiting_approval: bool = False
    #: The call is part of the message being continued (not announced in this stream).
    from_history: bool = False
    #: The app denied it: the call is over, later outputs are stale.
    denied: bool = False
    #: The input of ``tool-input-available`` (what an approval signature binds).
    input: Any = None


@dataclass(frozen=True, slots=True)
class KnownToolCall:
    """A tool part of the message a response continues (spec §5.4): the client already holds
    it, so the stream may refer to it, and announcing it again would move it backwards."""

    tool_call_id: str
    tool_name: str
    dynamic: bool
    #: The part's ``state``.
    state: str
    provider_executed: bool = False
    input: Any = None


#: Part states that settle a call.
_SETTLED_STATES = ANSWERED_STATES


#: Types that carry ``messageMetadata`` (merged into the message's metadata by the client).
_METADATA_TYPES = frozenset(
    t for t, spec in CHUNK_SPECS.items() if "messageMetadata" in spec.fields
)


def _is_primitive(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _has_keys(value: Any) -> bool:
    """Whether JS ``for (key in value)`` yields anything: non-empty objects, arrays, strings."""
    return isinstance(value, dict | list | str) and len(value) > 0


@dataclass(slots=True)
class ClientModel:
    major: int
    #: Id of the message being built; a ``start`` with another id resets everything.
    message_id: str = ""
    #: Open text / reasoning part ids (insertion-ordered, so closing follows opening order).
    open_text: dict[str, None] = field(default_factory=dict)
    open_reasoning: dict[str, None] = field(default_factory=dict)
    #: ``state.partialToolCalls``: ids that had ``tool-input-start``; never cleared by the
    #: client except by ``reset-step`` [7], so a delta after ``finish-step`` is still accepted.
    partial_tools: set[str] = field(default_factory=set)
    tools: dict[str, ToolRecord] = field(default_factory=dict)
    #: Tool ids whose part was created in the current step (``reset-step`` [7] removes them).
    step_tools: list[tuple[str, bool]] = field(default_factory=list)
    approvals: set[str] = field(default_factory=set)
    #: ``message.metadata`` as the client holds it (``None``: not set).
    metadata: Any = None

    def reset(self, message_id: str) -> None:
        self.message_id = message_id
        self.open_text.clear()
        self.open_reasoning.clear()
        self.partial_tools.clear()
        self.tools.clear()
        self.step_tools.clear()
        self.approvals.clear()
        self.metadata = None

    # -- rules -------------------------------------------------------------------------------

    def check(self, chunk: dict[str, Any]) -> Rule | None:
        """The rule ``chunk`` breaks on this major's client, or ``None`` when it is accepted."""
        chunk_type = chunk["type"]
        if chunk_type == "text-delta" or chunk_type == "text-end":
            return None if chunk["id"] in self.open_text else Rule.TEXT_NOT_OPEN
        if chunk_type == "reasoning-delta" or chunk_type == "reasoning-end":
            return None if chunk["id"] in self.open_reasoning else Rule.REASONING_NOT_OPEN
        if chunk_type == "tool-input-delta":
            ok = chunk["toolCallId"] in self.partial_tools
            return None if ok else Rule.TOOL_INPUT_NOT_STARTED
        if chunk_type in TOOL_REFERENCE_TYPES:
            record = self.tools.get(chunk["toolCallId"])
            if record is None:
                return Rule.TOOL_CALL_UNKNOWN
            if self.major == 5 and chunk_type != "tool-approval-request":
                if bool(chunk.get("dynamic")) not in record.kinds:
                    return Rule.TOOL_KIND_MISMATCH
            return None
        if chunk_type == "tool-approval-response":
            return None if chunk["approvalId"] in self.approvals else Rule.APPROVAL_UNKNOWN
        if chunk_type in _METADATA_TYPES and _is_primitive(self.metadata):
            if _has_keys(chunk.get("messageMetadata")):
                return Rule.METADATA_MERGE
        return None

    def apply(self, chunk: dict[str, Any]) -> None:
        """Record what the client records for an accepted chunk."""
        chunk_type = chunk["type"]
        if chunk_type == "text-start":
            self.open_text[chunk["id"]] = None
        elif chunk_type == "text-end":
            del self.open_text[chunk["id"]]
        elif chunk_type == "reasoning-start":
            self.open_reasoning[chunk["id"]] = None
        elif chunk_type == "reasoning-end":
            del self.open_reasoning[chunk["id"]]
        elif chunk_type == "tool-input-start":
            self.partial_tools.add(chunk["toolCallId"])
            record = self._tool_part(chunk)
            record.input_streaming = True
            record.settled = False
        elif chunk_type == "tool-input-available":
            record = self._tool_part(chunk)
            record.input_streaming = False
            record.settled = False
            record.input = chunk["input"]
        elif chunk_type == "tool-input-error":
            record = self._tool_part(chunk)
            record.input_streaming = False
            record.settled = True
        elif chunk_type in TOOL_OUTPUT_TYPES:
            record = self.tools[chunk["toolCallId"]]
            record.input_streaming = False
            record.awaiting_approval = False
            record.settled = not chunk.get("preliminary", False)
            if chunk.get("providerExecuted") is not None:
                record.provider_executed = chunk["providerExecuted"]
        elif chunk_type == "tool-approval-request":
            self.approvals.add(chunk["approvalId"])
            self.tools[chunk["toolCallId"]].awaiting_approval = True
        elif chunk_type == "start-step":
            self.step_tools.clear()
        elif chunk_type == "finish-step":
            if self.major < 7:  # ai 5/6 forget open text and reasoning ids here; 7 does not
                self.open_text.clear()
                self.open_reasoning.clear()
        elif chunk_type == "reset-step":
            self._reset_step()
        if chunk_type in _METADATA_TYPES:
            if chunk_type == "start":
                message_id = chunk.get("messageId")
                if message_id is not None and message_id != self.message_id:
                    self.reset(message_id)
            update = chunk.get("messageMetadata")
            if update is not None:
                # mergeObjects: the first value is taken as is; any later merge yields an object.
                self.metadata = update if self.metadata is None else {}

    def seed(self, calls: Iterable[KnownToolCall]) -> None:
        """The tool parts of the continued message, as the client holds them."""
        for call in calls:
            self.tools[call.tool_call_id] = ToolRecord(
                name=call.tool_name,
                kinds={call.dynamic},
                settled=call.state in _SETTLED_STATES,
                provider_executed=call.provider_executed,
                awaiting_approval=call.state == "approval-requested",
                from_history=call.state != "input-streaming",
                denied=call.state == "output-denied",
                input=call.input,
            )

    def _tool_part(self, chunk: dict[str, Any]) -> ToolRecord:
        call_id = chunk["toolCallId"]
        dynamic = bool(chunk.get("dynamic"))
        record = self.tools.get(call_id)
        if record is None:
            record = self.tools[call_id] = ToolRecord(name=chunk["toolName"], kinds=set())
        if dynamic not in record.kinds:
            record.kinds.add(dynamic)
            self.step_tools.append((call_id, dynamic))
        if chunk.get("providerExecuted") is not None:
            record.provider_executed = chunk["providerExecuted"]
        return record

    def _reset_step(self) -> None:
        """ai 7 ``reset-step``: drop the current step's parts and every open streaming id."""
        self.open_text.clear()
        self.open_reasoning.clear()
        self.partial_tools.clear()
        for call_id, dynamic in self.step_tools:
            record = self.tools.get(call_id)
            if record is not None:
                record.kinds.discard(dynamic)
                if not record.kinds:
                    del self.tools[call_id]
        self.step_tools.clear()

    # -- queries used by the guard when it settles a stream ------------------------------------

    def unsettled_tools(self) -> list[tuple[str, ToolRecord]]:
        return [(call_id, r) for call_id, r in self.tools.items() if not r.settled]
