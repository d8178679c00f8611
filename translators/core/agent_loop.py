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

The loop also holds where the turn is (:class:`LoopPhase`, so that a run cut short — its client
gone, the turn going on detached — picks up where it was) and builds what it adds to the
stream: approval requests, results, progress, and the questions gateway calls ask (an MCP
elicitation: ``protocol_specs/elicitation.py``), with ids from an injected factory — so a loop
turn's output is as deterministic as its model's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any, Protocol

from chunkbridge.protocol_specs.elicitation import (
    ASK_SUFFIX,
    elicitation_question,
    elicitation_signature,
)
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.steps import ReadyCall

__all__ = [
    "AgentLoop",
    "CallKind",
    "LoopEnding",
    "LoopPhase",
    "Outcome",
    "ToolPolicy",
    "preliminary",
    "sum_usage",
]

Chunk = dict[str, Any]
#: ``ids(kind) -> id``, unique among the turns of a chat (the gateway's are random).
Ids = Callable[[str], str]


class Question(Protocol):
    """A call's question to the user (the gateway's ``ToolQuestion``)."""

    key: str
    message: str
    schema: dict[str, Any]
    state: str | None


class Outcome(Protocol):
    """A call's result (the gateway's ``ToolOutcome``): an output, an error, or a question."""

    output: Any
    error: str | None
    asks: Question | None


class LoopPhase(Enum):
    """Where a loop turn is."""

    #: The model's step streams.
    STREAMING = "streaming"
    #: The calls a continuation released — approved, or answered (their questions) — run
    #: before the first model call.
    RELEASED = "released"
    #: The step's calls run; their results are written as they come, then the loop decides.
    RESULTS = "results"
    #: The loop calls the model again: its stream is being opened.
    CALLING = "calling"
    #: The turn ended (:attr:`AgentLoop.ending` says why, when the loop ended it).
    ENDED = "ended"


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
    #: A new user message steered the turn at a step boundary: the loop goes on in the answer
    #: to it (``busy = steer``).
    STEERED = "steered"


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

    def __init__(
        self,
        policy: ToolPolicy,
        max_steps: int,
        *,
        ids: Ids,
        question_secret: str = "",
        resumed: bool = False,
    ) -> None:
        """``resumed``: a continuation whose released gateway calls (approved, or answered) run
        first;
        ``question_secret`` signs the questions gateway calls ask (their answers must match)."""
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.policy = policy
        self.max_steps = max_steps
        self.ids = ids
        self.question_secret = question_secret
        self.phase = LoopPhase.RELEASED if resumed else LoopPhase.STREAMING
        #: The questions of this step's calls, asked once every call of it is done.
        self._questions: list[Chunk] = []
        #: The model call in progress (1 for the first).
        self.step = 1
        #: Each finished step's finishReason and usage, in order.
        self.step_reports: list[dict[str, Any]] = []
        self.usage: dict[str, int] = {}
        #: Per step: calls answered here (run, or refused as unknown), approvals asked, calls
        #: left to the app.
        self._answered = 0
        self._approvals = 0
        self._app = 0
        self.ending: LoopEnding | None = None
        #: Takeovers of a durable turn by another instance (``agentLoop.recoveries``).
        self.recoveries = 0

    def state(self) -> dict[str, Any]:
        """Where the loop is, as data (a durable turn's checkpoint; :meth:`restore`)."""
        return {
            "phase": self.phase.value,
            "step": self.step,
            "step_reports": list(self.step_reports),
            "usage": dict(self.usage),
            "counts": [self._answered, self._approvals, self._app],
            "questions": list(self._questions),
            "recoveries": self.recoveries,
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Be where :meth:`state` said (another instance takes the turn over)."""
        self.phase = LoopPhase(state["phase"])
        self.step = state["step"]
        self.step_reports = list(state["step_reports"])
        self.usage = dict(state["usage"])
        self._answered, self._approvals, self._app = state["counts"]
        self._questions = list(state["questions"])
        self.recoveries = state["recoveries"]

    def dispatch(self, calls: list[ReadyCall]) -> tuple[list[ReadyCall], list[Chunk]]:
        """Completed calls of the current step: those to run now, and what the stream says of
        the others (an approval request; a made-up tool's error result)."""
        run: list[ReadyCall] = []
        out: list[Chunk] = []
        for call in calls:
            kind = self.call(call.name, batched=call.batched)
            if kind is CallKind.RUN:
                run.append(call)
            elif kind is CallKind.APPROVE:
                approval_id = self.ids("approval")
                out.append(
                    {
                        "type": "tool-approval-request",
                        "approvalId": approval_id,
                        "toolCallId": call.call_id,
                    }
                )
            elif kind is CallKind.UNKNOWN:  # never run: the model reads why
                out.append(_error(call.call_id, f"there is no tool named {call.name!r}"))
        return run, out

    def result(self, call: ReadyCall, outcome: Outcome) -> Chunk:
        """A run call's outcome as its part shows it: its output or error; or, when it asks the
        user, a preliminary output while the question waits (:meth:`questions`)."""
        if outcome.asks is not None:
            return self._ask(call, outcome.asks)
        if outcome.error is not None:
            return _error(call.call_id, outcome.error)
        return {
            "type": "tool-output-available",
            "toolCallId": call.call_id,
            "output": outcome.output,
        }

    def questions(self) -> list[Chunk]:
        """The step's questions, in a step of their own after its other results (so that a
        client sending when the last step's calls are all answered sends once the question
        is); none: ``[]``."""
        if not self._questions:
            return []
        questions, self._questions = self._questions, []
        return [{"type": "finish-step"}, {"type": "start-step"}, *questions]

    def _ask(self, call: ReadyCall, question: Question) -> Chunk:
        """The call waits on the user: an ``ask_user`` call asks, signed, in a step of its own
        (see :meth:`questions`); the turn ends after the step."""
        self.asked()
        arguments = call.input if isinstance(call.input, dict) else {}
        ask_id = self.ids(call.call_id + ASK_SUFFIX.rstrip("-"))  # <call>-ask-<n>: one per question
        elicitation = {
            "toolCallId": call.call_id,
            "toolName": call.name,
            "arguments": arguments,
            "key": question.key,
            "requestState": question.state,
        }
        form = elicitation_question(question.message, question.schema, elicitation)
        elicitation["signature"] = elicitation_signature(self.question_secret, ask_id, form)
        self._questions.append(
            {
                "type": "tool-input-available",
                "toolCallId": ask_id,
                "toolName": QUESTION_TOOL,
                "input": form,
            }
        )
        return preliminary(call.call_id, {"question": question.message})

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

    def turn_ended(self) -> None:
        """The turn ended, whatever ended it (the loop, a stop, a timeout, the model's error)."""
        self.phase = LoopPhase.ENDED

    def model_finished(self) -> None:
        """The model completed its step: the step's calls' results come next."""
        self.phase = LoopPhase.RESULTS

    def model_called(self) -> None:
        """The next model call's stream is open: the next step streams."""
        self.phase = LoopPhase.STREAMING

    def released_ran(self) -> CloseRequest | None:
        """A continuation's released calls have their results: ``None`` to call the model,
        else the turn's ending (a call asked the user again)."""
        if self.waiting:
            return self.step_ended(CloseRequest(CloseReason.COMPLETED, finish_reason="tool-calls"))
        self.phase = LoopPhase.CALLING
        return None

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
        self.step_reports.append(step)
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
            self.phase = LoopPhase.CALLING
            return None
        self.ending = ending
        self.phase = LoopPhase.ENDED
        finish_reason = request.finish_reason
        if ending is not LoopEnding.DONE and finish_reason in (None, "stop"):
            finish_reason = "tool-calls"  # the message ends with calls, not an answer
        merged = {k: v for k, v in metadata.items() if k != "usage"}
        if self.usage:
            merged["usage"] = dict(self.usage)
        merged["agentLoop"] = {"ending": ending.value, "steps": self.step_reports}
        if self.recoveries:
            merged["agentLoop"]["recoveries"] = self.recoveries
        return CloseRequest(
            CloseReason.COMPLETED, finish_reason=finish_reason, message_metadata=merged
        )

    def steered(self, by: str, request: CloseRequest) -> CloseRequest:
        """A step ended and the loop would call the model again (:meth:`step_ended` said
        ``None``), but the user message ``by`` steers the turn: it ends here — the step's tool
        results in the message — and the model is called again with ``by`` after them, in the
        next turn. ``request``: the step's own ending (its metadata)."""
        self.step -= 1  # (the model call step_ended counted is the next turn's)
        self.ending = LoopEnding.STEERED
        self.phase = LoopPhase.ENDED
        metadata = request.message_metadata if isinstance(request.message_metadata, dict) else {}
        merged = {k: v for k, v in metadata.items() if k != "usage"}
        if self.usage:
            merged["usage"] = dict(self.usage)
        merged["agentLoop"] = {"ending": LoopEnding.STEERED.value, "steps": self.step_reports}
        if self.recoveries:
            merged["agentLoop"]["recoveries"] = self.recoveries
        merged["steeredBy"] = by
        return CloseRequest(
            CloseReason.COMPLETED, finish_reason="tool-calls", message_metadata=merged
        )


def preliminary(call_id: str, output: Any) -> Chunk:
    """A running call's output so far (its progress, its question): its result replaces it."""
    return {
        "type": "tool-output-available",
        "toolCallId": call_id,
        "output": output,
        "preliminary": True,
    }


def _error(call_id: str, text: str) -> Chunk:
    return {"type": "tool-output-error", "toolCallId": call_id, "errorText": text}
