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
  - or neither, for a dialect whose events are a Python library's objects in the host app's own
    process (:class:`~chunkbridge.kit.InProcessContract`): it has no upstream URL at all;

* what it gets of the history by default (``history``: ``latest`` or ``full``);
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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from chunkbridge.kit.in_process import InProcessContract
from chunkbridge.kit.translator import Translator, TranslatorOptions
from chunkbridge.kit.turn_input import AnsweredCall, ApprovalAnswer, TurnInput

__all__ = [
    "DEFAULT_RETRY_STATUSES",
    "DemoScript",
    "DemoStep",
    "Dialect",
    "Frame",
    "HttpRequest",
    "HttpSseContract",
    "NoSettings",
    "Pause",
    "WebSocketContract",
]

DIALECT_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
#: Answers to a streaming request that are worth retrying before the first byte.
DEFAULT_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class NoSettings(BaseModel):
    """The settings of a dialect that has none."""

    model_config = ConfigDict(extra="forbid", frozen=True)


#: A WebSocket frame: a JSON object.
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
    #: The frame that gives the running turn a new user message (``busy = steer``: the
    #: ``TurnInput`` of the request that brings it), sent on the running turn's socket; the
    #: agent takes it at its next step boundary, where the dialect's translator ends the answer
    #: (:meth:`Translator.steered`) and the rest of the run becomes the next answer. ``None``:
    #: the upstream cannot be steered (such a message waits its turn).
    steer_frame: Callable[[TurnInput], Frame] | None = None


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
    #: The dialect's events are a Python library's objects, streamed in the host app's own
    #: process (no upstream URL: ``serve`` cannot front one with it).
    in_process: InProcessContract | None = None
    #: The dialect's settings model (fields with defaults; validated at start-up).
    settings: type[BaseModel] = NoSettings
    #: Where the vocabulary and the mapping table are documented (a module name).
    spec: str = ""
    demo: DemoScript | None = None
    #: What the upstream gets of the history when the deployment does not say (the gateway's
    #: ``history`` setting): ``latest`` (it keeps the conversation) or ``full`` (stateless
    #: agents, which get the whole ``UIMessage`` history with each turn).
    history: Literal["latest", "full"] = "latest"
    #: A model provider's ``gen_ai.provider.name`` (OpenTelemetry's GenAI conventions: its
    #: calls are ``chat`` spans); ``None``: an agent backend (``invoke_agent`` spans).
    genai_provider: str | None = None

    def __post_init__(self) -> None:
        if not DIALECT_NAME.fullmatch(self.name):
            raise ValueError(f"dialect name {self.name!r}: use lower case, digits and dashes")
        if self.websocket is None and self.http is None and self.in_process is None:
            raise ValueError(f"dialect {self.name!r} has no upstream contract")

    @property
    def in_process_only(self) -> bool:
        """Its events come only from a library in the host app (no network upstream)."""
        return self.websocket is None and self.http is None

    @property
    def transports(self) -> tuple[str, ...]:
        """The URL schemes this dialect's upstreams can have."""
        schemes: tuple[str, ...] = ()
        if self.websocket is not None:
            schemes += ("ws", "wss")
        if self.http is not None:
            schemes += ("http", "https")
        return schemes
