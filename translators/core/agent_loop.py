"""The agent loop's decisions, sans-I/O: which tool calls the gateway runs, when the model is
called again, and how the turn ends.

In front of a model provider the gateway may run tools itself (MCP servers of its
configuration): the model calls them, the gateway runs them and calls the model again with their
results, step after step, in one assistant message, until the model answers without calling one
of them. :class:`AgentLoop` is told what happens — a completed tool call (:meth:`AgentLoop.call`),
the end of a model step (:meth:`AgentLoop.step_ended`) — and answers what to do; the shell
(``chunkbridge.gateway.turn.agent``) runs the calls and the model requests. The rules follow the
AI SDK's own loop (``streamText`` with ``stopWhen: stepCountIs(n)``):

* a call of a gateway tool runs at once (:attr:`CallKind.RUN`), or first asks the app
  (:attr:`CallKind.APPROVE`) when the tool's approval policy says so;
* a call of a tool the app runs (a declared client tool, ``ask_user``) is the app's: the turn ends
  after the step, at ``input-available``, as without the loop; the continuation request goes on;
* a gateway call that asks the user (an MCP elicitation) ends the turn after the step like the
  app's call would; the continuation runs it again with the answer;
* a call of a tool nobody has (a name the model made up) is never run: it gets an error result,
  which the model reads in the next step;
* the model is called again after a step whose calls were all run here, unless ``max_steps``
  model calls were made; the turn then ends with the step's own finishReason.

Why a turn ended goes into ``finish.messageMetadata`` (``agentLoop``: ``ending``, ``steps``,
and each step's finishReason and usage) beside the usage summed over the steps (``usage``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from chunkbridge.translators.core.closing import CloseReason, CloseRequest

__all__ = ["AgentLoop", "CallKind", "LoopEnding", "ToolPolicy", "sum_usage"]


class CallKind(Enum):
    """What becomes of one completed tool call."""

    #: A gateway tool: run it now.
    RUN = "run"
    #: A gateway tool that waits for the app's approval first.
    APPROVE = "approve"
    #: The app runs it (or answers it): the turn ends after this step.
    APP = "app"
    #: No such tool: an error result for the model, nothing runs.
    UNKNOWN = "unknown"


class LoopEnding(StrEnum):
    """Why a loop turn ended (``finish.messageMetadata.agentLoop.ending``)."""

    #: The model answered without calling a gateway tool.
    DONE = "done"
    #: ``max_steps`` model calls were made; the last step's tool results are in the message.
    MAX_STEPS = "max-steps"
    #: The model called a tool the app runs, or asked the user: the app answers, then continues.
    APP_TOOLS = "app-tools"
    #: A gateway tool waits for the app's approval.
    APPROVAL = "approval"


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """The tools a loop turn knows: the gateway's (name → needs the app's approval) and the
    app's (declared client tools, ``ask_user``)."""

    gateway: Mapping[str, bool]
    app: frozenset[str] = frozenset()

    def kind(self, name: str) -> CallKind:
        needs_approval = self.gateway.get(name)
        if needs_approval is not None:
            return CallKind.APPROVE if needs_approval else CallKind.RUN
        return CallKind.APP if name in self.app else CallKind.UNKNOWN


def sum_usage(total: dict[str, int], usage: Any) -> None:
    """Add a step's token counts (a flat object of integers) to ``total``."""
    if not isinstance(usage, dict):
        return
    for key, value in usage.items():
        if type(value) is int:
            total[key] = total.get(key, 0) + value


class AgentLoop:
    """The decisions of one loop turn (see the module). Steps are counted from 1."""

    def __init__(self, policy: ToolPolicy, max_steps: int) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.policy = policy
        self.max_steps = max_steps
        #: The model call in progress (1 for the first).
        self.step = 1
        #: Each finished step's finishReason and usage, in order.
        self.steps: list[dict[str, Any]] = []
        self.usage: dict[str, int] = {}
        #: Per step: calls answered here (run, or refused as unknown), approvals asked, calls
        #: left to the app.
        self._answered = 0
        self._approvals = 0
        self._app = 0
        self.ending: LoopEnding | None = None

    def call(self, name: str, *, batched: bool = False) -> CallKind:
        """A tool call of the current step is complete (its input is known): what to do. A
        call out of a ``tools_call`` batch (``batched``) runs only a gateway tool: the app's
        tools are called directly, so its parts are its own."""
        kind = self.policy.kind(name)
        if batched and kind is CallKind.APP:
            kind = CallKind.UNKNOWN
        if kind is CallKind.RUN or kind is CallKind.UNKNOWN:
            self._answered += 1
        elif kind is CallKind.APPROVE:
            self._approvals += 1
        else:
            self._app += 1
        return kind

    @property
    def waiting(self) -> bool:
        """A call of this step waits for the app (its own, an approval or a question)."""
        return bool(self._app or self._approvals)

    def asked(self) -> None:
        """A gateway call of this step waits on the user's answer to its question: the turn
        ends after the step, as for the app's tools; the continuation calls it again."""
        self._app += 1

    def step_ended(self, request: CloseRequest) -> CloseRequest | None:
        """The model completed the current step with ``request`` (its finishReason and
        metadata), and every call run here has its result: ``None`` to call the model again,
        else the turn's ending."""
        metadata = request.message_metadata if isinstance(request.message_metadata, dict) else {}
        usage = metadata.get("usage")
        sum_usage(self.usage, usage)
        step: dict[str, Any] = {"finishReason": request.finish_reason or "stop"}
        if isinstance(usage, dict):
            step["usage"] = usage
        self.steps.append(step)
        if self._app:
            ending = LoopEnding.APP_TOOLS
        elif self._approvals:
            ending = LoopEnding.APPROVAL
        elif not self._answered:
            ending = LoopEnding.DONE
        elif self.step >= self.max_steps:
            ending = LoopEnding.MAX_STEPS
        else:
            self.step += 1
            self._answered = self._approvals = self._app = 0
            return None
        self.ending = ending
        finish_reason = request.finish_reason
        if ending is not LoopEnding.DONE and finish_reason in (None, "stop"):
            finish_reason = "tool-calls"  # the message ends with calls, not an answer
        merged = {k: v for k, v in metadata.items() if k != "usage"}
        if self.usage:
            merged["usage"] = dict(self.usage)
        merged["agentLoop"] = {"ending": ending.value, "steps": self.steps}
        return CloseRequest(
            CloseReason.COMPLETED, finish_reason=finish_reason, message_metadata=merged
        )
