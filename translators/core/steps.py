"""Several model calls as one answer: the translator side of the agent loop, sans-I/O.

A loop turn (:mod:`chunkbridge.translators.core.agent_loop`) calls the model once per step, and
each call is a whole provider stream that opens and ends an answer of its own. The client must
see one message: :class:`StepJoin` sits between the dialect's translator and the stream guard of
one :class:`~chunkbridge.translators.core.turn.Turn` (``TurnOptions.gateway_tools``) and, for each
step's translator in turn (:meth:`StepJoin.next_step`):

* keeps the answer's end back — the completing
  :class:`~chunkbridge.translators.core.closing.CloseRequest` in :attr:`StepJoin.ended`, and the
  ``finish-step`` before it — for the loop to decide: the step's tool results come first, then
  ``finish-step`` and either the next step or the ``finish`` (a ``finish-step`` that more of
  the answer follows is let through then);
* drops a ``start`` once the message started (a later step's, or the first model call's after
  the results of approved calls) and a ``start-step`` while a step is already open;
* collects the tool calls whose input is complete (:attr:`StepJoin.ready`), so the shell runs
  them as soon as the model wrote them, not at the end of the step;
* marks the calls of gateway tools ``dynamic`` (tools of the runtime, not of the app: the AI SDK
  shows MCP tools as ``dynamic-tool`` parts), and the calls of a name nobody has (the loop
  answers them with an error, as the AI SDK shows a call of an unknown tool);
* splits a batch of the meta-tool ``tools_call`` (``protocol_specs/meta_tools.py``) into a tool
  part per call, named after the real tool: its input is held until complete, then each call is
  a call of its own — shown, approved and answered like a direct one, its provider metadata
  naming the batch (the model's next request regroups the batch: ``meta_tools``). A batch that
  is no list of calls stays a ``tools_call`` call, whose result says so.

Errors and truncations are not held: they end the turn as in any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from chunkbridge.protocol_specs import meta_tools
from chunkbridge.translators.core.closing import CloseReason, CloseRequest, DeferredClose

if TYPE_CHECKING:
    from collections.abc import Mapping

    from chunkbridge.translators.core.event_translator import EventTranslator, Item
    from chunkbridge.translators.core.guard import StreamGuard

__all__ = ["ReadyCall", "StepJoin"]

_TOOL_INPUT = frozenset({"tool-input-start", "tool-input-available", "tool-input-error"})
_BATCH_INPUT = _TOOL_INPUT | {"tool-input-delta"}


@dataclass(frozen=True, slots=True)
class ReadyCall:
    """A tool call the model completed in this step."""

    call_id: str
    name: str
    input: Any
    #: One call of a ``tools_call`` batch.
    batched: bool = False
    #: A call made again with the user's answer to the question it asked (the shell's type).
    answer: Any = None


class StepJoin:
    """The :class:`EventTranslator` of a step-wise turn (see the module)."""

    TERMINAL_FRAMES: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        translator: EventTranslator,
        gateway_tools: frozenset[str],
        guard: StreamGuard,
        app_tools: frozenset[str] = frozenset(),
    ) -> None:
        self.inner = translator
        self.TERMINAL_FRAMES = translator.TERMINAL_FRAMES  # type: ignore[misc]
        self.gateway_tools = gateway_tools
        #: The app's tools (its own, ``ask_user``): every other call the model makes is the
        #: runtime's — a gateway tool's, or one of a name nobody has, answered with an error.
        self.app_tools = app_tools
        self.guard = guard
        #: The current step's completed ending, held back (``None`` while the model streams).
        self.ended: CloseRequest | None = None
        #: Tool calls completed since the shell last took them.
        self.ready: list[ReadyCall] = []
        #: The translator ended a step: held until the answer's end (or more of it) shows.
        self._step_end = False
        #: Batches are split: ``tools_call`` is a tool of this turn.
        self._splits = meta_tools.CALL in gateway_tools
        #: ``tools_call`` calls whose input streams: their held ``tool-input-start``, by id.
        self._held: dict[str, dict[str, Any]] = {}
        #: Ids of the calls split out of batches, until collected.
        self._batched: set[str] = set()

    # -- the shell's side ----------------------------------------------------------------------

    def next_step(self, translator: EventTranslator) -> None:
        """The next model call's stream comes, read by ``translator``."""
        self.inner = translator
        self.ended = None
        self._step_end = False
        self._held.clear()

    def take_ready(self) -> list[ReadyCall]:
        ready, self.ready = self.ready, []
        return ready

    # -- EventTranslator -----------------------------------------------------------------------

    @property
    def stats(self) -> Mapping[str, int]:
        return self.inner.stats

    @property
    def text_id(self) -> str | None:
        return self.inner.text_id

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        return self.inner.fast_text_delta(event)

    def feed(self, event: Any) -> Sequence[Item]:
        return self._join(self.inner.feed(event))

    def end_of_stream(self, terminal: bool) -> Sequence[Item]:
        if self.ended is not None:
            return []
        return self._join(self.inner.end_of_stream(terminal))

    def malformed(self, why: str, raw: Any) -> Sequence[Item]:
        return self._join(self.inner.malformed(why, raw))

    # -- internals -----------------------------------------------------------------------------

    def _join(self, items: Sequence[Item]) -> Sequence[Item]:
        if len(items) == 1 and type(items[0]) is dict and not self._step_end:
            kind = items[0].get("type")
            if kind == "text-delta" or kind == "reasoning-delta":
                return items  # the common case: nothing to look at
            if kind == "tool-input-delta" and not self._held:
                return items
        if self._splits:
            items = self._split_batches(items)
        out: list[Item] = []
        for item in items:
            if isinstance(item, CloseRequest):
                if item.reason is CloseReason.COMPLETED:
                    self.ended = item
                    self._step_end = False  # the step ends when the loop says
                    continue
            elif isinstance(item, DeferredClose):
                continue  # a provider's stream ends by itself; the loop decides what follows
            else:
                kind = item.get("type")
                if kind == "finish-step":
                    self._step_end = True  # held: the answer may end here (or go on)
                    continue
                if kind == "start" and self.guard.started:
                    continue
                if kind == "start-step" and self.guard.in_step and not self._step_end:
                    continue
                if kind in _TOOL_INPUT and self._runtimes(item):
                    item = {**item, "dynamic": True}
                if kind == "tool-input-available" and not item.get("providerExecuted"):
                    call_id = item["toolCallId"]
                    batched = call_id in self._batched
                    self._batched.discard(call_id)
                    self.ready.append(ReadyCall(call_id, item["toolName"], item["input"], batched))
            if self._step_end:  # the answer went on after a step of its own
                self._step_end = False
                out.append({"type": "finish-step"})
            out.append(item)
        return out

    def _runtimes(self, item: dict[str, Any]) -> bool:
        """A call the runtime answers, not the app nor the provider (its part is dynamic)."""
        name = item.get("toolName")
        if name in self.gateway_tools:
            return True
        return (
            bool(self.app_tools) and name not in self.app_tools and not item.get("providerExecuted")
        )

    def _split_batches(self, items: Sequence[Item]) -> list[Item]:
        out: list[Item] = []
        for item in items:
            if type(item) is not dict or item.get("type") not in _BATCH_INPUT:
                out.append(item)
                continue
            call_id = str(item.get("toolCallId"))
            kind = item["type"]
            if kind == "tool-input-start" and item.get("toolName") == meta_tools.CALL:
                self._held[call_id] = item  # shown once the batch is known
            elif call_id not in self._held:
                out.append(item)
            elif kind == "tool-input-available":
                start = self._held.pop(call_id)
                calls = _batch_calls(item.get("input"))
                if calls is None:
                    out += (start, item)  # the runner's result tells the model what is wrong
                    continue
                batch_meta = item.get("providerMetadata")
                for index, (name, arguments) in enumerate(calls):
                    split_id = meta_tools.batch_id(call_id, index)
                    self._batched.add(split_id)
                    base = {"toolCallId": split_id, "toolName": name, "dynamic": True}
                    meta = meta_tools.split_metadata(batch_meta, call_id, index)
                    out.append({"type": "tool-input-start", **base})
                    available = {"input": arguments, "providerMetadata": meta}
                    out.append({"type": "tool-input-available", **base, **available})
            elif kind == "tool-input-error":
                out += (self._held.pop(call_id), item)
        return out


def _batch_calls(value: Any) -> list[tuple[str, Any]] | None:
    """A ``tools_call`` input's calls as (tool, arguments); ``None`` when it is no batch."""
    calls = value.get("calls") if isinstance(value, dict) else None
    if not isinstance(calls, list) or not 0 < len(calls) <= meta_tools.MAX_BATCH:
        return None
    out = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
            return None
        out.append((call["tool"], call.get("arguments", {})))
    return out
