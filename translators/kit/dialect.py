"""A dialect as one unit: its translator and its whole upstream contract, described as data.

A package registers a :class:`Dialect` under the entry point group ``chunkbridge.dialects`` (the
built-in dialects do exactly that, see ``pyproject.toml``); the gateway finds it there and never
names a dialect itself. The description says everything the gateway needs:

* the translator factory (upstream events → UI chunks);
* how to talk to the upstream, for each transport the dialect speaks — the deployment picks one
  with the scheme of its ``upstream`` URL:

  - :class:`WebSocketContract` (``ws://``, ``wss://``): the frame that starts a turn (and the one
    for a regenerate), the frame that aborts it, and the frames that carry the app's answers to
    the agent's questions and approvals (a continuation sends those instead of a prompt); the
    gateway opens one socket per turn, sends the prompt (or answer) frames and reads one
    upstream event per message;
  - :class:`HttpSseContract` (``http://``, ``https://``): the request that starts a turn (path
    under the upstream URL, headers such as the API key, JSON body built from the ``UIMessage``
    history, model and options), and how a refused request reads as a frame; the gateway POSTs
    it, retries 429/5xx before the first byte, and reads one upstream event per SSE ``data:``;

* its own settings (a pydantic model: ``[<dialect>]`` in the TOML file,
  ``CHUNKBRIDGE_<DIALECT>_<NAME>`` in the environment, ``--<dialect>-<name>`` on the command line);
* optionally a demo script (:class:`DemoStep`), which ``chunkbridge demo`` plays as a fake
  upstream.

Everything here is sans-I/O: builders are pure functions of a :class:`TurnInput`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from chunkbridge.kit.translator import Translator, TranslatorOptions
from chunkbridge.protocol_specs.chat_request import (
    ChatRequest,
    DynamicToolPart,
    StepStartPart,
    ToolPart,
    UserPrompt,
)
from chunkbridge.protocol_specs.human_in_the_loop import (
    QUESTION_TOOL,
    is_approval_question,
    parse_approval_answer,
)
from chunkbridge.translators.core.client_model import KnownToolCall

__all__ = [
    "DEFAULT_RETRY_STATUSES",
    "DemoScript",
    "DemoStep",
    "Dialect",
    "FrameTemplates",
    "HttpRequest",
    "HttpSseContract",
    "NoSettings",
    "AnsweredCall",
    "ApprovalAnswer",
    "Pause",
    "RequestRejected",
    "TurnFrames",
    "TurnInput",
    "WebSocketContract",
    "build_frames",
]

DIALECT_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
#: Answers to a streaming request that are worth retrying before the first byte.
DEFAULT_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class NoSettings(BaseModel):
    """The settings of a dialect that has none."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RequestRejected(ValueError):
    """The chat request cannot become an upstream turn (answered 400 with this message)."""

    def __init__(self, client_message: str) -> None:
        super().__init__(client_message)
        self.client_message = client_message


@dataclass(frozen=True, slots=True)
class AnsweredCall:
    """A client-side tool call the app answered (``addToolOutput``) in the continued message."""

    tool_call_id: str
    tool_name: str
    output: Any
    #: The app reported an error (``output-error``: its ``errorText`` is the output).
    is_error: bool
    #: The call's input (a question's fields).
    input: Any = None


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """The app's decision on an approval the gateway requested (ai 6/7 ``approval-responded``,
    or the answered question form on ai 5). Untrusted until the gateway checked it."""

    approval_id: str
    tool_call_id: str
    tool_name: str
    approved: bool
    reason: str | None
    #: The signature the request carried back, if any.
    signature: str | None
    #: The approved call's input as the request holds it (what a signature binds).
    input: Any


@dataclass(frozen=True)  # not slots: the cached properties need an instance dict
class TurnInput:
    """What a dialect may use to start one turn upstream."""

    request: ChatRequest
    #: The session id from the URL (the agent's session, the upstream's conversation…).
    session_id: str
    #: A fresh id for this turn (for upstreams that name runs).
    run_id: str
    #: The dialect's settings (an instance of its :attr:`Dialect.settings` model).
    settings: Any = None
    #: The gateway's ``history`` setting: ``"latest"`` (the upstream keeps the history) or
    #: ``"full"`` (it wants the whole ``UIMessage`` history too).
    history: Literal["latest", "full"] = "latest"

    @property
    def chat_id(self) -> str:
        return self.request.id

    @property
    def regenerate(self) -> bool:
        return self.request.trigger == "regenerate-message"

    @cached_property
    def prompt(self) -> UserPrompt | None:
        """The newest user message (text and files), if there is one."""
        return self.request.latest_user_message()

    @cached_property
    def _continued_tools(self) -> tuple[list[ToolPart], list[ToolPart]]:
        """The continued message's tool parts: all of them, and those of its last step (where a
        continuation's new answers are; earlier steps hold answers already delivered)."""
        message = self.request.continued_message()
        if message is None:
            return [], []
        every: list[ToolPart] = []
        last: list[ToolPart] = []
        for part in message.parts:
            if isinstance(part, StepStartPart):
                last = []
            elif isinstance(part, ToolPart):  # tool-<name> and dynamic-tool parts
                every.append(part)
                last.append(part)
        return every, last

    def answered_calls(self) -> list[AnsweredCall]:
        """The client-side tool calls the app answered (``addToolOutput``) in the last step of
        the message this request continues (spec §5.4), in order; empty for a new message. A
        dialect whose agent waits for such answers (questions) sends them instead of a new
        prompt. Approvals in their ai 5 question form are not here: :meth:`approval_answers`."""
        out = []
        for part in self._continued_tools[1]:
            if part.providerExecuted:
                continue
            if part.tool_name == QUESTION_TOOL and is_approval_question(part.input):
                continue
            if part.state == "output-available":
                out.append(
                    AnsweredCall(part.toolCallId, part.tool_name, part.output, False, part.input)
                )
            elif part.state == "output-error":
                out.append(
                    AnsweredCall(part.toolCallId, part.tool_name, part.errorText, True, part.input)
                )
        return out

    @cached_property
    def approval_answers(self) -> list[ApprovalAnswer]:
        """The approvals the app answered in the last step of the continued message, in order.
        :class:`RequestRejected` when one is malformed (the shapes: module
        ``chunkbridge.protocol_specs.human_in_the_loop``). The gateway checks them before the turn
        starts."""
        every, last = self._continued_tools
        out = []
        for part in last:
            approval = part.approval
            if part.state == "approval-responded" and approval is not None:
                if approval.approved is None:
                    raise RequestRejected(
                        f"tool call {part.toolCallId!r}: approval-responded needs approval.approved"
                    )
                out.append(
                    ApprovalAnswer(
                        approval.id,
                        part.toolCallId,
                        part.tool_name,
                        approval.approved,
                        approval.reason,
                        approval.signature,
                        part.input,
                    )
                )
            elif part.tool_name == QUESTION_TOOL and is_approval_question(part.input):
                if part.state not in ("output-available", "output-error"):
                    continue  # not answered yet
                is_error = part.state == "output-error"
                decision = parse_approval_answer(
                    part.errorText if is_error else part.output, is_error
                )
                form = part.input["approval"]
                call_id, name = form.get("toolCallId"), form.get("toolName")
                if decision is None or not isinstance(call_id, str) or not isinstance(name, str):
                    raise RequestRejected(
                        f'approval {part.toolCallId!r}: answer with "approve" or "deny" '
                        '(or {"approved": true|false, "reason": "…"})'
                    )
                called = next((p for p in every if p.toolCallId == call_id), None)
                signature = form.get("signature")
                approval_id = form.get("approvalId")
                out.append(
                    ApprovalAnswer(
                        approval_id if isinstance(approval_id, str) else part.toolCallId,
                        call_id,
                        name,
                        decision[0],
                        decision[1],
                        signature if isinstance(signature, str) else None,
                        called.input if called is not None else None,
                    )
                )
        return out

    def known_tool_calls(self) -> list[KnownToolCall]:
        """The continued message's tool parts, for the stream guard."""
        return [
            KnownToolCall(
                part.toolCallId,
                part.tool_name,
                isinstance(part, DynamicToolPart),
                part.state,
                bool(part.providerExecuted),
                part.input,
            )
            for part in self._continued_tools[0]
        ]

    def require_prompt(self) -> UserPrompt:
        """The newest user message; :class:`RequestRejected` when there is none."""
        prompt = self.prompt
        if prompt is None:
            raise RequestRejected("The request has no user message to send.")
        return prompt

    @cached_property
    def history_dump(self) -> list[dict[str, Any]]:
        """The ``UIMessage`` history as plain JSON (built on first use: it can be long)."""
        return [m.model_dump(exclude_none=True) for m in self.request.messages]

    def template_values(self) -> dict[str, Any]:
        """The placeholders of frame templates (:class:`FrameTemplates`)."""
        prompt = self.prompt
        return {
            "text": prompt.text if prompt else "",
            "message_id": (prompt.message_id if prompt else "") or self.run_id,
            "run_id": self.run_id,
            "session_id": self.session_id,
            "chat_id": self.chat_id,
            "attachments": [f.model_dump(exclude_none=True) for f in prompt.files]
            if prompt
            else [],
            "messages": self.history_dump,
        }


Frame = dict[str, Any]


@dataclass(frozen=True, slots=True)
class WebSocketContract:
    """How a dialect talks to a WebSocket upstream: one socket per turn."""

    #: The frame that starts a turn. May raise :class:`RequestRejected`.
    prompt_frame: Callable[[TurnInput], Frame]
    #: The frame that stops a running turn (sent when the client goes away, on timeouts and on
    #: shutdown), or ``None`` when closing the socket is all the upstream understands.
    abort_frame: Callable[[TurnInput], Frame | None] = lambda turn: None
    #: The frame for a regenerate request; ``None``: the prompt frame.
    regenerate_frame: Callable[[TurnInput], Frame] | None = None
    #: The frame that answers one of the agent's questions (a client-side tool call the app
    #: answered in the continued message: :meth:`TurnInput.answered_calls`), or ``None`` when
    #: that call is not a question of this upstream.
    answer_frame: Callable[[TurnInput, AnsweredCall], Frame | None] | None = None
    #: The frame that carries the app's decision on an approval the agent asked for
    #: (:attr:`TurnInput.approval_answers`, checked by the gateway before it is called).
    approval_frame: Callable[[TurnInput, ApprovalAnswer], Frame] | None = None


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One streaming request. ``path`` is appended to the configured upstream URL."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "POST"


@dataclass(frozen=True, slots=True)
class HttpSseContract:
    """How a dialect talks to an HTTP upstream that answers with server-sent events."""

    #: The request that starts a turn. May raise :class:`RequestRejected`.
    request: Callable[[TurnInput], HttpRequest]
    #: A refused request (status, body) as one frame for the translator, which then ends the
    #: turn with the upstream's own message as an ``error`` chunk; ``None`` (or no function):
    #: the client gets a 502 before streaming. Not called for retried statuses nor for 401/403
    #: (the gateway's own credentials were refused: a 502).
    error_frame: Callable[[int, bytes], str | None] | None = None
    retry_statuses: frozenset[int] = DEFAULT_RETRY_STATUSES


@dataclass(frozen=True, slots=True)
class Pause:
    """A demo step: wait this long before the next event."""

    seconds: float


#: A demo script yields upstream events (JSON values) and pauses.
DemoStep = Any | Pause
#: ``script(prompt_frame, turn_number, aborted)``: the steps of one demo turn. ``aborted()`` says
#: whether the gateway sent the abort frame; the script then winds the turn down its own way.
DemoScript = Callable[[Frame, int, Callable[[], bool]], Iterator[DemoStep]]


@dataclass(frozen=True, slots=True)
class Dialect:
    """Everything chunkbridge needs to know about one upstream vocabulary."""

    #: Registered name (lower case, digits and dashes): ``--dialect <name>``.
    name: str
    #: One line for ``chunkbridge dialects``.
    summary: str
    #: ``translator(options)`` for each turn.
    translator: Callable[[TranslatorOptions], Translator]
    websocket: WebSocketContract | None = None
    http: HttpSseContract | None = None
    #: The dialect's settings model (fields with defaults; validated at start-up).
    settings: type[BaseModel] = NoSettings
    #: Where the vocabulary and the mapping table are documented (a module name).
    spec: str = ""
    demo: DemoScript | None = None

    def __post_init__(self) -> None:
        if not DIALECT_NAME.fullmatch(self.name):
            raise ValueError(f"dialect name {self.name!r}: use lower case, digits and dashes")
        if self.websocket is None and self.http is None:
            raise ValueError(f"dialect {self.name!r} has no upstream contract")

    @property
    def transports(self) -> tuple[str, ...]:
        """The URL schemes this dialect's upstreams can have."""
        schemes: tuple[str, ...] = ()
        if self.websocket is not None:
            schemes += ("ws", "wss")
        if self.http is not None:
            schemes += ("http", "https")
        return schemes


@dataclass(frozen=True, slots=True)
class FrameTemplates:
    """Deployment overrides of a WebSocket dialect's frames: JSON objects whose string values may
    hold ``{text}``, ``{message_id}``, ``{run_id}``, ``{session_id}``, ``{chat_id}``; a value that
    is exactly ``"{attachments}"`` or ``"{messages}"`` becomes that list."""

    prompt: Frame | None = None
    regenerate: Frame | None = None
    abort: Frame | None = None
    #: Replaces the dialect's answer frame: ``{question_id}``, and ``"{answer}"`` (the app's
    #: output as it is) besides the placeholders above.
    answer: Frame | None = None
    #: Replaces the dialect's approval frame: ``{approval_id}``, ``{tool_call_id}``,
    #: ``{tool_name}``, ``"{approved}"`` (a JSON boolean) and ``"{reason}"`` (string or null).
    approval: Frame | None = None


@dataclass(frozen=True, slots=True)
class TurnFrames:
    #: What starts the turn: the answers to the agent's questions and approvals, one frame
    #: each, when the request carries some; else the one prompt (or regenerate) frame.
    prompts: list[Frame]
    abort: Frame | None

    @property
    def prompt(self) -> Frame:
        return self.prompts[0]


_SCALARS = (
    "text",
    "message_id",
    "run_id",
    "session_id",
    "chat_id",
    "question_id",
    "approval_id",
    "tool_call_id",
    "tool_name",
)
_VALUES = ("{attachments}", "{messages}", "{answer}", "{approved}", "{reason}")
#: One pass over the template: what a placeholder is replaced by is never scanned again, so a
#: user's text that contains ``{session_id}`` reaches the upstream as typed.
_PLACEHOLDER = re.compile(r"\{(" + "|".join(_SCALARS) + r")\}")


def _fill(template: Any, values: dict[str, Any]) -> Any:
    if isinstance(template, dict):
        return {k: _fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, values) for v in template]
    if isinstance(template, str):
        if template in _VALUES:
            return values[template[1:-1]]
        return _PLACEHOLDER.sub(
            lambda match: str(values[match[1]]) if match[1] in values else match[0], template
        )
    return template


def answer_frames(
    contract: WebSocketContract, turn: TurnInput, templates: FrameTemplates = FrameTemplates()
) -> list[Frame]:
    """One frame per answer the request carries (questions, then approvals), templated where
    the deployment has templates; empty when it carries none this upstream understands."""
    frames: list[Frame] = []
    base = turn.template_values() if templates.answer or templates.approval else {}
    if contract.answer_frame is not None:
        for call in turn.answered_calls():
            frame = contract.answer_frame(turn, call)
            if frame is not None and templates.answer is not None:
                values = {**base, "question_id": call.tool_call_id, "answer": call.output}
                frame = _fill(templates.answer, values)
            if frame is not None:
                frames.append(frame)
    if contract.approval_frame is not None:
        for answer in turn.approval_answers:
            if templates.approval is not None:
                values = {
                    **base,
                    "approval_id": answer.approval_id,
                    "tool_call_id": answer.tool_call_id,
                    "tool_name": answer.tool_name,
                    "approved": answer.approved,
                    "reason": answer.reason,
                }
                frames.append(_fill(templates.approval, values))
            else:
                frames.append(contract.approval_frame(turn, answer))
    return frames


def build_frames(
    contract: WebSocketContract, turn: TurnInput, templates: FrameTemplates = FrameTemplates()
) -> TurnFrames:
    """The frames that start one turn and its abort frame: the deployment's templates where it
    has them, else the dialect's; with ``history = "full"`` the first carries ``messages``."""
    values = turn.template_values() if templates != FrameTemplates() else {}
    prompts = answer_frames(contract, turn, templates)
    if prompts:
        pass
    elif turn.regenerate and templates.regenerate is not None:
        prompts = [_fill(templates.regenerate, values)]
    elif templates.prompt is not None:
        prompts = [_fill(templates.prompt, values)]
    elif turn.regenerate and contract.regenerate_frame is not None:
        prompts = [contract.regenerate_frame(turn)]
    else:
        prompts = [contract.prompt_frame(turn)]
    if turn.history == "full" and "messages" not in prompts[0]:
        prompts[0]["messages"] = turn.history_dump
    if templates.abort is not None:
        abort = _fill(templates.abort, values)
    else:
        abort = contract.abort_frame(turn)
    return TurnFrames(prompts, abort)
